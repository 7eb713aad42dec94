package dev.pekkordma.soft;

import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeProperty;

/**
 * A peer process we do not control answering our requests: with the right bytes, or with more
 * or fewer than asked, a wrong PSN, a wrong QP, a bad code or trailer, a request where an answer
 * belongs, or half a frame. A request completes SUCCESS only for a sound answer and then holds
 * exactly the answer's bytes; a broken answer fails the QP with BAD_RESP_ERR, and every failure
 * has an errorCause naming the peer; the canaries around the requester's memory never change.
 */
class HostileResponsesPropertyTest {
  private RawPeerQp fx;
  private CompletionQueue cq;
  private HostileFabric.Guarded region;
  private QueuePair qp;
  private RawFabricPeer server;

  @BeforeProperty
  void setUp() throws IOException {
    fx = new RawPeerQp();
    cq = fx.cq;
    region = fx.region;
    qp = fx.qp;
    server = fx.server;
    SoftFabric.get().tcp().limits(HostileRequestsTest.defaultLimits()
        .withFrame(java.time.Duration.ofMillis(300)));
  }

  @AfterProperty
  void tearDown() throws IOException {
    HostileRequestsTest.defaults(SoftFabric.get().tcp());
    fx.close();
  }

  /** How the answer departs from a sound one; all zero is sound. */
  record Answer(int op, int length, int code, int psnDelta, long lengthDelta, byte trailer,
      int cut, int dest, byte kind, long atomic) {
    /** Sound as sent: {@code truncated} says whether the cut fell inside the frame. */
    boolean sound(boolean truncated) {
      boolean carries = op == 0; // only a READ's answer has bytes, so a trailer
      return code == SoftPeer.Response.ACK && psnDelta == 0 && lengthDelta == 0
          && (trailer == 0 || !carries) && !truncated && dest == 0
          && kind == FabricWire.RESPONSE;
    }
  }

  @Provide
  Arbitrary<Answer> answers() {
    Arbitrary<Integer> op = Arbitraries.of(0, 0, 1, 2); // READ, READ, WRITE, FETCH_AND_ADD
    Arbitrary<Integer> length = Arbitraries.integers().between(1, 8192);
    Arbitrary<Integer> code = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, Arbitraries.just(0)),
        net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(1, 5)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(6, 7, -1, 99)));
    Arbitrary<Integer> psn = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, Arbitraries.just(0)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(-2, -1, 1, 2, 1 << 23)));
    Arbitrary<Long> delta = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, Arbitraries.just(0L)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(-1L, 1L, 7L, 300L, -300L, 1L << 40)));
    Arbitrary<Byte> trailer = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(8, Arbitraries.just((byte) 0)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of((byte) 1, (byte) 5)));
    Arbitrary<Integer> cut = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(8, Arbitraries.just(-1)),
        net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(1, 120)));
    Arbitrary<Integer> dest = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(8, Arbitraries.just(0)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(1, 2)));
    Arbitrary<Byte> kind = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(10, Arbitraries.just(FabricWire.RESPONSE)),
        net.jqwik.api.Tuple.of(1, Arbitraries.of(FabricWire.REQUEST, (byte) 9)));
    return Combinators.combine(Arrays.asList(op.asGeneric(), length.asGeneric(),
        code.asGeneric(), psn.asGeneric(), delta.asGeneric(), trailer.asGeneric(),
        cut.asGeneric(), dest.asGeneric(), kind.asGeneric(), Arbitraries.longs().asGeneric()))
        .as(v -> new Answer((Integer) v.get(0), (Integer) v.get(1), (Integer) v.get(2),
            (Integer) v.get(3), (Long) v.get(4), (Byte) v.get(5), (Integer) v.get(6),
            (Integer) v.get(7), (Byte) v.get(8), (Long) v.get(9)));
  }

  /** Found by hand: a READ's answer whose trailer says the peer's memory went away meanwhile. */
  @net.jqwik.api.Example
  void aReadAnswerWhoseTrailerVoidsItFailsNamingThePeer() throws Exception {
    aRequestSucceedsOnlyOnASoundAnswerAndHoldsExactlyItsBytes(new Answer(0, 64, 0, 0, 0,
        FabricWire.TRAILER_ABORTED, -1, 0, FabricWire.RESPONSE, 0));
  }

  @Property(tries = 100)
  void aRequestSucceedsOnlyOnASoundAnswerAndHoldsExactlyItsBytes(@ForAll("answers") Answer a)
      throws Exception {
    fx.connect(15, 0); // one try of 134 ms: room for a new link's handshake
    WrOpcode op = a.op() == 0 ? WrOpcode.RDMA_READ : a.op() == 1 ? WrOpcode.RDMA_WRITE
        : WrOpcode.ATOMIC_FETCH_AND_ADD;
    int length = op == WrOpcode.ATOMIC_FETCH_AND_ADD ? 8 : a.length();
    long offset = 4096;
    byte[] before = region.snapshot();
    try (SendRequests s = new SendRequests(1, 1); WorkCompletions wc = new WorkCompletions(16)) {
      s.add(1, op, SendRequests.SIGNALED).sge(region.mr, offset, length);
      if (op == WrOpcode.ATOMIC_FETCH_AND_ADD) s.atomic(0x10000, 0x777, 1, 0);
      else s.rdma(0x10000, 0x777);
      qp.postSend(s);

      RawFabricPeer.Conn c = server.awaitInbound(5000);
      try {
        RawFabricPeer.Frame request = c.readFrame(5000);
        if (request.payloadLength > 0) c.in.readFully(new byte[(int) request.payloadLength + 1]);
        byte[] data = HostileRequestsTest.pattern(length, a.hashCode());
        byte[] whole = answer(a, request, op, data);
        boolean truncated = a.cut() >= 0 && a.cut() < whole.length;
        boolean sound = a.sound(truncated);
        c.send(truncated ? Arrays.copyOf(whole, a.cut()) : whole);

        WcStatus status = await(cq, wc);
        region.assertCanaries();
        byte[] after = region.snapshot();
        net.jqwik.api.statistics.Statistics.collect(sound ? "sound" : "broken", status);
        if (status == WcStatus.SUCCESS) {
          if (!sound) throw new AssertionError("SUCCESS on a broken answer: " + a);
          if (op == WrOpcode.RDMA_READ) {
            check(Arrays.equals(Arrays.copyOfRange(after, (int) offset, (int) offset + length),
                data), "the read holds the answer's bytes: " + a);
          } else if (op.isAtomic()) {
            check(region.memory.getLong(HostileFabric.CANARY + offset) == a.atomic(),
                "the atomic's result is the answer's: " + a);
          }
        } else {
          check(!sound || status == WcStatus.RETRY_EXC_ERR, "a sound answer failed: " + a
              + " " + status);
        }
        // nothing outside the request's own destination ever changes
        for (int i = 0; i < after.length; i++) {
          boolean own = op != WrOpcode.RDMA_WRITE && i >= offset && i < offset + length;
          if (after[i] != before[i] && !own) {
            throw new AssertionError("byte " + i + " changed outside the request's buffer: " + a);
          }
        }
        if (status != WcStatus.SUCCESS) { // whatever failed it, the QP says which peer did
          String cause = qp.errorCause().orElse("");
          check(cause.contains(server.address().toString()), status + ": the cause names the"
              + " peer: '" + cause + "' for " + a);
        }
      } finally {
        c.close();
      }
    }
  }

  private byte[] answer(Answer a, RawFabricPeer.Frame request, WrOpcode op, byte[] data) {
    RawFabricPeer.Frame f = new RawFabricPeer.Frame();
    f.kind = a.kind();
    f.srcDevice = request.destDevice;
    f.destDevice = a.dest() == 2 ? (request.srcDevice + 1) & 0xffff : request.srcDevice;
    f.destQpn = a.dest() == 1 ? (request.srcQpn + 1) & 0xffffff : request.srcQpn;
    f.srcQpn = HostileFabric.PEER_QPN;
    f.psn = (request.psn + a.psnDelta()) & 0xffffff;
    f.opcodeOrCode = a.code();
    f.compareAddOrAtomic = a.atomic();
    boolean carries = op == WrOpcode.RDMA_READ && a.code() == SoftPeer.Response.ACK;
    long announced = (carries ? data.length : 0) + a.lengthDelta();
    f.payloadLength = announced;
    byte[] bytes;
    if (announced > 0 && announced <= 1 << 20) {
      byte[] body = Arrays.copyOf(data, (int) announced); // more than asked: zeros after
      bytes = f.withPayload(body, a.trailer());
    } else {
      bytes = f.header();
    }
    return bytes;
  }

  private static WcStatus await(CompletionQueue cq, WorkCompletions wc)
      throws InterruptedException {
    long deadline = System.nanoTime() + 10_000_000_000L;
    while (System.nanoTime() < deadline) {
      if (cq.poll(wc) > 0) return wc.status(0);
      Thread.sleep(0, 200_000);
    }
    throw new AssertionError("the request never completed");
  }

  private static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }
}

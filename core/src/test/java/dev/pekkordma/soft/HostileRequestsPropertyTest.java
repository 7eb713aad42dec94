package dev.pekkordma.soft;

import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;
import java.net.SocketTimeoutException;
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
 * Generated frames from a peer process we do not control, well-formed or not: malformed,
 * truncated, oversized, replayed and forged requests, each sent on a proven connection. Whatever
 * arrives, the JVM and the fabric's threads live on, the canaries around the victim's region
 * never change, bytes change inside it only where a request that passed every check put them,
 * and traffic on another connection goes on.
 */
class HostileRequestsPropertyTest {
  private HostileFabric fx;
  private RawFabricPeer.Conn conn;

  @BeforeProperty
  void setUp() throws IOException {
    fx = new HostileFabric();
    SoftFabric.get().tcp().limits(HostileRequestsTest.defaultLimits()
        .withFrame(java.time.Duration.ofMillis(300)));
  }

  @AfterProperty
  void tearDown() throws IOException {
    HostileRequestsTest.defaults(SoftFabric.get().tcp());
    if (conn != null) conn.close();
    fx.close();
  }

  /** A request as the generator shapes it; resolved against the fixture when sent. */
  record Shape(byte kind, int opcode, int dest, int src, int psnOffset, int key, long offset,
      int length, long announced, long readLength, byte trailer, int cutAt, int device) {}

  /** One way a frame can be wrong: a field it sets, and the value given it. */
  enum Fault { KIND, OPCODE, DEST, SRC, PSN, KEY, OFFSET, ANNOUNCED, READ_LENGTH, TRAILER, CUT,
    DEVICE }

  /**
   * A well-formed request (a write, a read or an atomic within the region, from the right QP,
   * with the expected PSN) with up to two faults: a third of them are sound, the rest break one
   * or two rules at a time, so every check is met alone as well as with another.
   */
  @Provide
  Arbitrary<Shape> shapes() {
    Arbitrary<Integer> op = Arbitraries.of(WrOpcode.RDMA_WRITE.code, WrOpcode.RDMA_WRITE.code,
        WrOpcode.RDMA_WRITE_WITH_IMM.code, WrOpcode.RDMA_READ.code, WrOpcode.SEND.code,
        WrOpcode.ATOMIC_FETCH_AND_ADD.code);
    Arbitrary<Integer> length = Arbitraries.oneOf(Arbitraries.integers().between(1, 300),
        Arbitraries.integers().between(1, HostileFabric.REGION));
    Arbitrary<Long> where = Arbitraries.longs().between(0, HostileFabric.REGION);
    Arbitrary<java.util.List<Fault>> faults = Arbitraries.of(Fault.class).list().ofMaxSize(2);
    Arbitrary<Long> value = Arbitraries.oneOf(Arbitraries.longs().between(-10, 10),
        Arbitraries.longs(), Arbitraries.of(1L << 31, 1L << 40, -5L, (long) HostileFabric.REGION));
    return Combinators.combine(op, length, where, faults, value, value).as((o, n, at, fs, v, w) -> {
      long offset = Math.min(at, HostileFabric.REGION - n) & ~7L;
      int len = o == WrOpcode.ATOMIC_FETCH_AND_ADD.code ? 0 : o == WrOpcode.RDMA_READ.code ? 0 : n;
      long read = o == WrOpcode.RDMA_READ.code ? n : 0;
      byte kind = FabricWire.REQUEST;
      int opcode = o;
      int dest = 0;
      int src = 0;
      int psn = 0;
      int key = 0;
      long announced = -1;
      byte trailer = 0;
      int cut = -1;
      int device = 0;
      for (Fault f : fs) {
        switch (f) {
          case KIND -> kind = (byte) (v % 5 == 0 ? FabricWire.DATAGRAM : v % 5 == 1
              ? FabricWire.RESPONSE : v);
          case OPCODE -> opcode = (int) (v % 14);
          case DEST -> dest = 1 + (int) Math.floorMod(v, 3);
          case SRC -> src = 1 + (int) Math.floorMod(v, 2);
          case PSN -> psn = (int) Math.max(-3, Math.min(3, v == 0 ? 1 : v));
          case KEY -> key = 1 + (int) Math.floorMod(v, 2);
          case OFFSET -> offset = v;
          case ANNOUNCED -> announced = v == -1 ? -2 : Math.abs(v) <= 10 ? -1000 - v : v;
          case READ_LENGTH -> read = v;
          case TRAILER -> trailer = (byte) (v == 0 ? 1 : v);
          case CUT -> cut = (int) Math.floorMod(w, FabricWire.HEADER_BYTES + len + 1L);
          case DEVICE -> device = 1 + (int) Math.floorMod(v, 0xfffe); // resolved past ours
        }
      }
      return new Shape(kind, opcode, dest, src, psn, key, offset, len, announced, read, trailer,
          cut, device);
    });
  }

  @Property(tries = 120)
  void nothingAPeerSendsTouchesMemoryOutsideWhatPassedTheChecks(@ForAll("shapes") Shape s)
      throws Exception {
    if (fx.victim.state() != QpState.RTS) fx.connectVictim();
    if (conn == null) conn = fx.peer.connect();
    int barrierPsn = freshBarrier();
    byte[] before = fx.region.snapshot();
    byte[] payload = HostileRequestsTest.pattern(s.length(), s.hashCode());
    RawFabricPeer.Frame f = resolve(s, payload.length);
    byte[] bytes = f.withPayload(payload, s.trailer());
    if (f.payloadLength != payload.length && payload.length > 0) { // the header lies
      bytes = Arrays.copyOf(f.header(), f.header().length + payload.length + 1);
      System.arraycopy(payload, 0, bytes, FabricWire.HEADER_BYTES, payload.length);
      bytes[bytes.length - 1] = s.trailer();
    }
    boolean truncated = s.cutAt() >= 0 && s.cutAt() < bytes.length;
    if (truncated) bytes = Arrays.copyOf(bytes, s.cutAt());

    boolean ended = false;
    boolean acked = false;
    try {
      conn.send(bytes);
      if (bytes.length == 0) {
        // nothing sent: an idle connection, which may stay open for ever
      } else if (truncated || f.payloadLength != payload.length) {
        // a frame that lies about its length: our side ends the connection (frame timeout,
        // or the rest read as a broken header), and only then is the outcome final
        ended = conn.closedWithin(5000);
        if (!ended) throw new AssertionError("a lying frame left the connection open: " + s);
      } else {
        // a READ that repeats the one answered last: answered after whatever the frame caused,
        // so what comes before it is this frame's outcome, and nothing of it comes later
        conn.send(barrier(barrierPsn).header());
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
          RawFabricPeer.Frame answer;
          try {
            answer = conn.readFrame(100);
          } catch (SocketTimeoutException quiet) {
            if (fx.victim.state() == QpState.ERR || System.nanoTime() > deadline) {
              ended = true; // the victim failed: it answers nothing more
              break;
            }
            continue;
          }
          if (answer == null) {
            ended = true;
            break;
          }
          if (answer.payloadLength > 0) {
            if (answer.payloadLength > HostileFabric.REGION) {
              throw new AssertionError("an answer of " + answer.payloadLength + " bytes for " + s);
            }
            conn.in.readFully(new byte[(int) answer.payloadLength + 1]);
          }
          if (answer.psn == barrierPsn && answer.payloadLength == 8) break;
          if (answer.opcodeOrCode == SoftPeer.Response.ACK && answer.psn == fx.epsn) {
            acked = true;
            fx.epsn = (fx.epsn + 1) & 0xffffff;
          }
        }
      }
    } catch (SocketTimeoutException quiet) {
      ended = true; // the victim went to ERR and answers nothing: start afresh
    } catch (IOException reset) {
      ended = true;
    }
    boolean whole = !truncated && s.trailer() == 0 && f.payloadLength == payload.length;
    net.jqwik.api.statistics.Statistics.collect(placeable(s, f) ? (whole ? "sound write"
        : "void write") : ended ? "connection ended" : "refused or answered");

    fx.region.assertCanaries();
    if (acked && isWrite(f) && !whole) {
      throw new AssertionError("a write acknowledged though its frame was void: " + s);
    }
    byte[] after = fx.region.snapshot();
    if (!Arrays.equals(before, after)) {
      if (!placeable(s, f)) {
        throw new AssertionError("bytes changed for a request whose destination failed its"
            + " checks: " + s);
      }
      // only inside the checked destination, only the bytes the sender put after the header (a
      // void frame's first bytes may land, as a NIC places a message's first packets; a header
      // that announces more than the payload takes what follows it, the trailer among them)
      int at = (int) (f.remoteAddress - fx.region.mr.address());
      int header = f.header().length;
      byte[] sent = Arrays.copyOfRange(bytes, Math.min(header, bytes.length), bytes.length);
      long placed = Math.min(f.payloadLength, sent.length);
      for (int i = 0; i < after.length; i++) {
        boolean inside = i >= at && i < at + placed;
        if (after[i] != before[i] && (!inside || after[i] != sent[i - at])) {
          throw new AssertionError("byte " + i + " changed outside what " + s + " carried");
        }
      }
    }
    if (ended) {
      conn.close();
      conn = null;
      if (fx.victim.state() == QpState.RTS) fx.connectVictim(); // the PSNs start again too
    }
    if (fx.victim.state() != QpState.RTS && fx.victim.state() == QpState.ERR) {
      fx.victim.errorCause().ifPresent(cause -> {
        if (!cause.contains(fx.peer.address().toString()) && !cause.isEmpty()) {
          throw new AssertionError("the victim failed without naming its peer: " + cause);
        }
      });
    }
    fx.otherTrafficGoesOn();
  }

  /**
   * One step of a peer's history: a new request (a WRITE, or a READ) at the PSN the victim
   * expects, or a repeat of the request {@code back} steps ago, with its fields as they were or
   * pointing elsewhere ({@code moved}).
   */
  record Step(boolean repeat, boolean read, int back, boolean moved, int offset, int length) {}

  @Provide
  Arbitrary<java.util.List<Step>> histories() {
    Arbitrary<Step> step = Combinators.combine(Arbitraries.of(false, false, true),
        Arbitraries.of(false, true), Arbitraries.integers().between(1, 80),
        Arbitraries.of(false, false, true), Arbitraries.integers().between(0, 4000),
        Arbitraries.integers().between(1, 96)).as(Step::new);
    return step.list().ofMinSize(1).ofMaxSize(120);
  }

  /**
   * Repeats of answered requests, as a lost answer's retry or a replay brings them, never cost
   * a legitimate request: each new one is acknowledged and done (a WRITE's bytes in place, a
   * READ answered with the memory as it is), a repeated WRITE changes nothing, and a repeated
   * READ is answered, with the memory as it is now, only when it names what the original named
   * and is among the last {@link ResponderResources#SIZE} READs.
   */
  @Property(tries = 40)
  void repeatsNeverCostALegitimateRequest(@ForAll("histories") java.util.List<Step> steps)
      throws Exception {
    fx.connectVictim();
    if (conn == null) conn = fx.peer.connect();
    java.util.List<RawFabricPeer.Frame> sent = new java.util.ArrayList<>();
    java.util.List<Integer> readPsns = new java.util.ArrayList<>(); // answered READs, in order
    for (Step step : steps) {
      if (!step.repeat() || sent.isEmpty()) {
        RawFabricPeer.Frame f = legitimate(step);
        byte[] data = HostileRequestsTest.pattern(step.length(), sent.size() * 7 + step.offset());
        conn.send(step.read() ? f.header() : f.withPayload(data, FabricWire.TRAILER_WHOLE));
        byte[] answered = awaitAnswer(f.psn, step.read() ? step.length() : 0);
        if (answered == null) throw new AssertionError("a legitimate request went unanswered");
        byte[] now = fx.region.read(step.offset(), step.length());
        check(Arrays.equals(step.read() ? answered : data, now), step.read()
            ? "a READ answered with the memory as it is" : "a WRITE's bytes in place");
        if (step.read()) readPsns.add(f.psn);
        sent.add(f);
        fx.epsn = (fx.epsn + 1) & 0xffffff;
        continue;
      }
      RawFabricPeer.Frame original = sent.get(Math.max(0, sent.size() - step.back()));
      RawFabricPeer.Frame repeat = RawFabricPeer.Frame.parse(original.header());
      if (step.moved()) repeat.remoteAddress = fx.region.mr.address() + step.offset();
      boolean read = repeat.opcodeOrCode == WrOpcode.RDMA_READ.code;
      byte[] before = fx.region.snapshot();
      byte[] other = HostileRequestsTest.pattern((int) repeat.payloadLength, step.hashCode());
      conn.send(read ? repeat.header() : repeat.withPayload(other, FabricWire.TRAILER_WHOLE));
      int recent = readPsns.size() - readPsns.indexOf(repeat.psn);
      boolean same = repeat.remoteAddress == original.remoteAddress;
      boolean kept = read && same && readPsns.contains(repeat.psn)
          && recent <= ResponderResources.SIZE;
      if (read) {
        // the barrier: a new READ (at a PSN no repeat has), answered after the repeat's outcome
        RawFabricPeer.Frame barrier = legitimate(new Step(false, true, 0, false, 0, BARRIER));
        conn.send(barrier.header());
        byte[] first = awaitAnswer(-1, -1);
        check(first != null, "the barrier READ is answered");
        boolean answeredRepeat = lastAnswerPsn == repeat.psn;
        if (answeredRepeat) {
          check(Arrays.equals(first, fx.region.read(repeat.remoteAddress
              - fx.region.mr.address(), (int) repeat.readLength)), "with the memory as it is");
          check(awaitAnswer(barrier.psn, BARRIER) != null, "the barrier READ is answered");
        }
        check(answeredRepeat == kept, "a repeated READ is answered exactly when it is kept ("
            + kept + "): " + step);
        readPsns.add(barrier.psn);
        sent.add(barrier);
        fx.epsn = (fx.epsn + 1) & 0xffffff;
      } else {
        check(awaitAnswer(repeat.psn, 0) != null, "a repeated WRITE is acknowledged again");
      }
      check(Arrays.equals(before, fx.region.snapshot()), "a repeat changes no memory");
    }
    check(fx.victim.state() == QpState.RTS, "the victim QP is still up");
    fx.region.assertCanaries();
  }

  private static final int BARRIER = 97;
  private int lastAnswerPsn;

  /**
   * The data of the next answer, which must be an ACK (of {@code psn} unless -1) carrying
   * {@code length} bytes (any, if -1); null if none comes in 2 s.
   */
  private byte[] awaitAnswer(int psn, int length) throws IOException {
    RawFabricPeer.Frame answer;
    try {
      answer = conn.readFrame(2000);
    } catch (SocketTimeoutException e) {
      return null;
    }
    check(answer != null && answer.opcodeOrCode == SoftPeer.Response.ACK, "an ACK");
    check(psn < 0 || answer.psn == psn, "the answer's PSN " + answer.psn + ", not " + psn);
    check(length < 0 || answer.payloadLength == length, "the answer's length");
    lastAnswerPsn = answer.psn;
    byte[] data = new byte[(int) answer.payloadLength];
    conn.in.readFully(data);
    if (data.length > 0) conn.in.read();
    return data;
  }

  private RawFabricPeer.Frame legitimate(Step step) {
    RawFabricPeer.Frame f = fx.request(step.read() ? WrOpcode.RDMA_READ : WrOpcode.RDMA_WRITE,
        fx.epsn);
    f.rkey = fx.region.mr.rkey();
    f.remoteAddress = fx.region.mr.address() + step.offset();
    if (step.read()) f.readLength = step.length();
    else f.payloadLength = step.length();
    return f;
  }

  private static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }

  /**
   * Found by the property: a write whose header announces one byte more than its payload; the
   * receiver may place the byte after the payload (meant as the trailer) as the last announced
   * one, inside the checked destination, before the frame turns out void.
   */
  @net.jqwik.api.Example
  void aHeaderAnnouncingOneByteMoreTakesTheTrailerAsPayload() throws Exception {
    nothingAPeerSendsTouchesMemoryOutsideWhatPassedTheChecks(new Shape(FabricWire.REQUEST,
        WrOpcode.RDMA_WRITE.code, 0, 0, 0, 0, 0, 2, -1001, 0, (byte) 5, -1, 0));
  }

  /**
   * Reads 8 bytes at the PSN the victim expects, so that this READ is the one answered last: its
   * repeat is then answered (from the responder resources) after whatever comes before it.
   */
  private int freshBarrier() throws IOException {
    int psn = fx.epsn;
    conn.send(barrier(psn).header());
    while (true) {
      RawFabricPeer.Frame answer = conn.readFrame(5000);
      if (answer == null) throw new AssertionError("the victim closed a sound connection");
      if (answer.payloadLength > 0) conn.in.readFully(new byte[(int) answer.payloadLength + 1]);
      if (answer.psn == psn && answer.payloadLength == 8) break;
    }
    fx.epsn = (fx.epsn + 1) & 0xffffff;
    return psn;
  }

  private RawFabricPeer.Frame barrier(int psn) {
    RawFabricPeer.Frame f = fx.request(WrOpcode.RDMA_READ, psn);
    f.rkey = fx.region.mr.rkey();
    f.remoteAddress = fx.region.mr.address();
    f.readLength = 8;
    return f;
  }

  private static boolean isWrite(RawFabricPeer.Frame f) {
    return f.opcodeOrCode == WrOpcode.RDMA_WRITE.code
        || f.opcodeOrCode == WrOpcode.RDMA_WRITE_WITH_IMM.code;
  }

  /** Whether a request's destination passes every check that lets it place data (the oracle). */
  private boolean placeable(Shape s, RawFabricPeer.Frame f) {
    long at = f.remoteAddress - fx.region.mr.address();
    return f.kind == FabricWire.REQUEST && isWrite(f) && s.dest() == 0 && s.src() == 0
        && s.device() == 0 && s.key() == 0 && s.psnOffset() == 0 && f.readLength == 0
        && f.payloadLength > 0 && at >= 0 && at + f.payloadLength <= HostileFabric.REGION;
  }

  private RawFabricPeer.Frame resolve(Shape s, int sent) {
    RawFabricPeer.Frame f = fx.request(WrOpcode.RDMA_WRITE, fx.epsn + s.psnOffset());
    f.kind = s.kind();
    f.opcodeOrCode = s.opcode();
    f.destQpn = switch (s.dest()) {
      case 0 -> fx.victim.qpNum();
      case 1 -> fx.other.qpNum();
      case 2 -> s.hashCode() & 0xffffff;
      default -> s.hashCode() | 0x1000000;
    };
    f.srcQpn = switch (s.src()) {
      case 0 -> HostileFabric.PEER_QPN;
      case 1 -> HostileFabric.PEER_QPN + 1;
      default -> s.hashCode();
    };
    f.psn = (fx.epsn + s.psnOffset()) & 0xffffff;
    f.rkey = switch (s.key()) {
      case 0 -> fx.region.mr.rkey();
      case 1 -> fx.otherRegion.mr.rkey();
      default -> s.hashCode() * 31;
    };
    f.destDevice = s.device() == 0 ? fx.serial : (fx.serial + s.device()) & 0xffff;
    f.remoteAddress = fx.region.mr.address() + s.offset();
    f.readLength = s.readLength();
    f.payloadLength = s.announced() == -1 ? sent
        : s.announced() <= -990 && s.announced() >= -1010 ? Math.max(0, sent + (-1000 - s.announced()))
        : s.announced();
    return f;
  }
}

package dev.pekkordma.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.UnaryOperator;

/**
 * A peer that does not run our code: the verbs and the CM of a provider of its own, driven by
 * hand, so a test chooses the private data of the handshake and every work request after. It
 * connects to a streams server ({@link #connect}) or accepts a streams client ({@link Listener}),
 * keeps its own honest ring (what {@link #honestRing} advertises) and records what reaches it.
 *
 * <p>Every write it posts is kept with where it went, so that {@link #assertWritesStayedInside}
 * can check each landed only inside the ring our stage granted it: one that completes
 * successfully outside touched memory it was never given.
 */
final class HostilePeer implements AutoCloseable {
  static final Duration WAIT = StreamsTestKit.WAIT;
  static final int SLOTS = 8;
  static final int SLOT_SIZE = 1024;
  static final int SOURCE = 1 << 18; // the largest write it makes
  private static final int RECEIVES = 64;
  private static final int SEND_QUEUE = 256;
  private static final long RECV_ID = Long.MIN_VALUE;

  /** A write it made: its request id, where it went, how long, whether with an immediate. */
  record Write(long wrId, long address, int rkey, int length, boolean withImm) {}

  /** A message that reached it: our stage's immediates, with what data writes carried. */
  record Received(WcOpcode opcode, int imm, boolean withImm, byte[] data) {}

  private final CmEventChannel channel;
  private final CmId id;
  private final ProtectionDomain pd;
  private final CompletionQueue cq;
  private final QueuePair qp;
  private final OffHeapBuffer ringMemory = OffHeapBuffer.allocate((long) SLOTS * SLOT_SIZE);
  private final MemoryRegion ringMr;
  private final OffHeapBuffer source = OffHeapBuffer.allocate(SOURCE);
  private final MemoryRegion sourceMr;
  private final SendRequests wr = new SendRequests(1, 1);
  private final RecvRequests rr = new RecvRequests(RECEIVES, 1);
  private final WorkCompletions wcs = new WorkCompletions(64);
  private final List<Write> writes = new ArrayList<>();
  private final Map<Long, WcStatus> sendStatus = new HashMap<>();
  private final List<Received> received = new ArrayList<>();
  private long nextWrId;
  private int sourceAt; // where the next write's data goes in the source buffer
  private long dataReceived;
  private long creditsReturned;
  private final boolean ownsChannel;
  private HostileWire.Ring granted; // what our stage advertised
  private CmEvent refusal; // what ended the handshake instead of ESTABLISHED
  private boolean closed;
  private List<String> escapes = List.of(); // found at close

  private HostilePeer(CmEventChannel channel, boolean ownsChannel, CmId id) {
    this.channel = channel;
    this.ownsChannel = ownsChannel;
    this.id = id;
    pd = id.verbs().allocPd();
    cq = id.verbs().createCq(RECEIVES + 512, null);
    qp = id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(SEND_QUEUE)
        .maxRecvWr(RECEIVES));
    ringMr = pd.registerMemory(ringMemory, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
    sourceMr = pd.registerMemory(source, Access.LOCAL_WRITE);
    rr.clear();
    for (int i = 0; i < RECEIVES; i++) rr.add(RECV_ID);
    qp.postRecv(rr);
  }

  // ------------------------------------------------------------------ handshakes

  /**
   * Connects to a streams server with {@code privateData} (what it says its ring is: {@link
   * #honestRing} or anything else); returns once ESTABLISHED or refused ({@link #refusal}).
   */
  static HostilePeer connect(RdmaProvider provider, InetSocketAddress server,
      Function<HostilePeer, byte[]> privateData) {
    CmEventChannel channel = provider.createCmEventChannel();
    CmId id = channel.createId("hostile peer");
    HostilePeer peer = null;
    try {
      id.resolveAddress(null, server, WAIT);
      expect(channel, CmEventType.ADDR_RESOLVED);
      id.resolveRoute(WAIT);
      expect(channel, CmEventType.ROUTE_RESOLVED);
      peer = new HostilePeer(channel, true, id);
      id.connect(ConnectionParameters.withPrivateData(privateData.apply(peer)));
      CmEvent e = next(channel, WAIT);
      assertNotNull(e, "no answer to the connection request within " + WAIT);
      if (e.type() == CmEventType.ESTABLISHED) {
        peer.granted = HostileWire.Ring.decode(e.privateData());
      } else {
        peer.refusal = e;
      }
      return peer;
    } catch (RuntimeException | AssertionError e) {
      if (peer != null) {
        peer.close();
      } else {
        id.close();
        channel.close();
      }
      throw e;
    }
  }

  /** A CM listener that a streams client connects to, accepted by the test's choice. */
  static final class Listener implements AutoCloseable {
    private final CmEventChannel channel;
    private final CmId id;
    private final UnaryOperator<HostilePeer> accepted;
    private final List<HostilePeer> peers = new ArrayList<>();
    private boolean closed;

    /** {@code accepted} sees each peer it accepts (the fixture closes them after the test). */
    Listener(RdmaProvider provider, UnaryOperator<HostilePeer> accepted) {
      this.accepted = accepted;
      channel = provider.createCmEventChannel();
      id = channel.createId("hostile listener");
      id.bind(new InetSocketAddress(StreamsTestKit.HOST, 0));
      id.listen(4);
    }

    InetSocketAddress address() {
      return new InetSocketAddress(StreamsTestKit.HOST, id.localAddress().getPort());
    }

    /**
     * Takes the next request and accepts it with {@code privateData} (of the peer, and the
     * ring the client advertised); returns once ESTABLISHED, or the client gave up.
     */
    HostilePeer accept(Function<HostilePeer, byte[]> privateData) {
      CmEvent req = expect(channel, CmEventType.CONNECT_REQUEST);
      HostilePeer peer;
      try {
        peer = new HostilePeer(channel, false, req.id());
      } catch (RuntimeException e) {
        req.id().close();
        throw e;
      }
      peers.add(accepted.apply(peer));
      peer.granted = HostileWire.Ring.decode(req.privateData());
      peer.id.accept(ConnectionParameters.withPrivateData(privateData.apply(peer)));
      CmEvent e = next(channel, WAIT);
      assertNotNull(e, "the client neither completed nor left the handshake within " + WAIT);
      if (e.type() != CmEventType.ESTABLISHED) peer.refusal = e;
      return peer;
    }

    /** With the peers it accepted: their ids are on its channel. */
    @Override
    public void close() {
      if (closed) return;
      closed = true;
      for (HostilePeer p : peers) p.close();
      id.close();
      channel.close();
    }
  }

  private static CmEvent expect(CmEventChannel channel, CmEventType type) {
    CmEvent e = next(channel, WAIT);
    assertNotNull(e, "no " + type + " within " + WAIT);
    assertEquals(type, e.type(), "got " + e);
    return e;
  }

  private static CmEvent next(CmEventChannel channel, Duration wait) {
    return channel.awaitEvent(wait);
  }

  /** Its own ring, as an honest peer would advertise it. */
  HostileWire.Ring honestRing() {
    return new HostileWire.Ring(ringMr.address(), ringMr.rkey(), SLOTS, SLOT_SIZE);
  }

  byte[] honestPrivateData() {
    return honestRing().encode();
  }

  /** The ring our stage advertised: all it may write into. */
  HostileWire.Ring granted() {
    return granted;
  }

  boolean established() {
    return refusal == null && granted != null;
  }

  /** The event that ended the handshake instead (REJECTED, DISCONNECTED, ...), or null. */
  CmEvent refusal() {
    return refusal;
  }

  /** Our stage sees this peer at this address. */
  InetSocketAddress localAddress() {
    return id.localAddress();
  }

  int port() {
    return id.localAddress().getPort();
  }

  // ------------------------------------------------------------------ work requests

  /**
   * Copies {@code data} to a part of the source buffer no write in flight reads (the device
   * reads it when it sends, not when the request is posted); returns its offset.
   */
  private int load(byte[] data) {
    if (data.length > SOURCE) fail(data.length + " bytes: the most a write takes is " + SOURCE);
    if (sourceAt + data.length > SOURCE) {
      // wrapping around: every write before has to be done with its part
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (writes.stream().anyMatch(w -> !sendStatus.containsKey(w.wrId()))) {
        if (System.nanoTime() > deadline) fail("writes did not complete within " + WAIT);
        if (pump() == 0) LockSupport.parkNanos(200_000);
      }
      sourceAt = 0;
    }
    int at = sourceAt;
    if (data.length > 0) source.put(at, data, 0, data.length);
    sourceAt += data.length;
    return at;
  }

  /** An RDMA WRITE (with the immediate, if not null) of {@code data} to any address and key. */
  long write(long address, int rkey, byte[] data, Integer imm) {
    int at = load(data);
    long wrId = room();
    wr.clear();
    wr.add(wrId, imm == null ? WrOpcode.RDMA_WRITE : WrOpcode.RDMA_WRITE_WITH_IMM,
        SendRequests.SIGNALED).sge(sourceMr, at, data.length).rdma(address, rkey);
    if (imm != null) wr.immediate(imm);
    qp.postSend(wr);
    writes.add(new Write(wrId, address, rkey, data.length, imm != null));
    return wrId;
  }

  /** A write into slot {@code slot} of the granted ring. */
  long writeSlot(int slot, byte[] data, int imm) {
    return write(granted.address() + (long) slot * granted.slotSize(), granted.rkey(), data, imm);
  }

  /** A zero-length SEND WITH IMM: a control message. */
  long send(int imm) {
    long wrId = room();
    wr.clear();
    wr.add(wrId, WrOpcode.SEND_WITH_IMM, SendRequests.SIGNALED).immediate(imm);
    qp.postSend(wr);
    return wrId;
  }

  /** A SEND with no immediate, of {@code length} bytes. */
  long sendPlain(int length) {
    long wrId = room();
    wr.clear();
    wr.add(wrId, WrOpcode.SEND, SendRequests.SIGNALED);
    if (length > 0) wr.sge(sourceMr, load(new byte[length]), length);
    qp.postSend(wr);
    return wrId;
  }

  /** The next request's id, once the send queue has room for it (a flood waits for it). */
  private long room() {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (nextWrId - sendStatus.size() >= SEND_QUEUE) {
      if (System.nanoTime() > deadline) fail("the send queue stayed full for " + WAIT);
      if (pump() == 0) LockSupport.parkNanos(200_000);
    }
    return nextWrId++;
  }

  /** How the request completed, waiting for it. */
  WcStatus awaitSend(long wrId) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (!sendStatus.containsKey(wrId)) {
      if (System.nanoTime() > deadline) fail("request " + wrId + " did not complete within " + WAIT);
      if (pump() == 0) LockSupport.parkNanos(200_000);
    }
    return sendStatus.get(wrId);
  }

  /** Waits until {@code n} messages have reached it in all; returns them all. */
  List<Received> awaitReceived(int n) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (received.size() < n) {
      if (System.nanoTime() > deadline) {
        fail("only " + received.size() + " of " + n + " messages arrived within " + WAIT
            + ": " + received);
      }
      if (pump() == 0) LockSupport.parkNanos(200_000);
    }
    return received;
  }

  /** Waits until a message that {@code last} matches has reached it; returns all so far. */
  List<Received> awaitReceivedUntil(Predicate<Received> last) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (received.stream().noneMatch(last)) {
      if (System.nanoTime() > deadline) fail("not arrived within " + WAIT + ": " + received);
      if (pump() == 0) LockSupport.parkNanos(200_000);
    }
    return received;
  }

  /** What reached it so far. */
  List<Received> received() {
    pump();
    return received;
  }

  /** Polls its CQ once: receives recorded (and posted again), sends' statuses kept. */
  int pump() {
    if (closed) return 0;
    int n = cq.poll(wcs);
    int again = 0;
    for (int i = 0; i < n; i++) {
      if (wcs.wrId(i) == RECV_ID) {
        again++;
        if (!wcs.ok(i)) continue; // flushed: the connection is going
        WcOpcode op = wcs.opcode(i);
        byte[] data = null;
        if (op == WcOpcode.RECV_RDMA_WITH_IMM) {
          // where an honest writer puts its n-th write
          long at = ringMr.address() + (dataReceived++ % SLOTS) * SLOT_SIZE;
          data = new byte[Math.min(wcs.byteLength(i), SLOT_SIZE)];
          NativeMemory.copyToArray(at, data, 0, data.length);
        }
        int imm = wcs.immediate(i);
        if (HostileWire.kind(imm) != HostileWire.CONTROL
            || HostileWire.code(imm) != HostileWire.CANCEL) {
          creditsReturned += HostileWire.credits(imm);
        }
        received.add(new Received(op, imm, wcs.hasImmediate(i), data));
      } else {
        sendStatus.put(wcs.wrId(i), wcs.status(i));
      }
    }
    if (again > 0 && qp.state() != QpState.ERR) {
      rr.clear();
      for (int i = 0; i < again; i++) rr.add(RECV_ID);
      qp.postRecv(rr);
    }
    return n;
  }

  /** The credits our stage has given back so far (its ring's slots freed). */
  long creditsReturned() {
    pump();
    return creditsReturned;
  }

  /**
   * Every write it made landed inside the ring our stage granted, or was refused by the
   * responder: one outside that completed successfully touched memory outside that ring.
   */
  void assertWritesStayedInside() {
    List<String> escaped = checkWrites();
    if (!escaped.isEmpty()) fail(String.join("; ", escaped));
  }

  /** What {@link #assertWritesStayedInside} finds wrong, waiting for the writes' completions. */
  private List<String> checkWrites() {
    List<String> wrong = new ArrayList<>();
    if (closed) return escapes;
    long deadline = System.nanoTime() + WAIT.toNanos();
    for (Write w : writes) {
      while (!sendStatus.containsKey(w.wrId()) && System.nanoTime() < deadline) {
        if (pump() == 0) LockSupport.parkNanos(200_000);
      }
      WcStatus s = sendStatus.get(w.wrId());
      // a zero-length write touches nothing, and its rkey and address go unchecked (IB's
      // C9-88, as rxe does): only a write with bytes has to stay inside the ring
      boolean inside = w.length() == 0 || granted != null && w.rkey() == granted.rkey()
          && granted.covers(w.address(), w.length());
      if (s == null) {
        wrong.add("write " + w + " never completed");
      } else if (!inside && s == WcStatus.SUCCESS) {
        wrong.add("a write outside the granted ring " + granted + " succeeded: " + w);
      } else if (inside && s == WcStatus.REM_ACCESS_ERR) {
        wrong.add("a write inside the granted ring " + granted + " was refused: " + w);
      }
    }
    return wrong;
  }

  /** The writes outside its granted ring that succeeded, as found when it closed. */
  List<String> escapes() {
    return escapes;
  }

  void disconnect() {
    try {
      id.disconnect();
    } catch (RuntimeException e) {
      // gone already
    }
  }

  /** Frees everything; what its writes touched is checked first ({@link #escapes}). */
  @Override
  public void close() {
    if (closed) return;
    escapes = checkWrites();
    closed = true;
    try {
      id.destroyQp();
    } catch (RuntimeException e) {
      // none made
    }
    ringMr.close();
    sourceMr.close();
    ringMemory.close();
    source.close();
    cq.close();
    pd.close();
    wr.close();
    rr.close();
    wcs.close();
    id.close();
    if (ownsChannel) channel.close();
  }

  @Override
  public String toString() {
    return "HostilePeer(" + (closed ? "closed" : localAddress()) + ", granted " + granted + ")";
  }
}

package dev.pekkordma.streams.impl;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.TransferResult;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.util.ByteString;

/**
 * Two {@link ConnectionProtocol}s joined by a simulated RC fabric, with no stage, no provider and
 * no thread: the test decides every step (an application's event at either end, the next
 * message on either wire, a batch of completions polled, a disconnect, a timer), and the fabric
 * checks what an RDMA NIC and a Pekko stage would never let pass: a write outside a live ring of
 * the peer's or into a slot whose write is not yet taken, a message with no receive posted for
 * it, a send from memory outside a live registration, a push without demand, a pull twice, and
 * credits below zero or above the peer's ring. Each violation is recorded ({@link #violations}).
 *
 * <p>Data is read from the sender's memory when the message goes, not when it is posted (as a
 * NIC does: a buffer reused before its write completed shows as corrupt data); inline data when
 * it is posted.
 */
final class ProtocolSim implements AutoCloseable {
  /** Small rings and queues, so that a few elements fill them, grow them and wrap them. */
  static final RdmaStreamSettings SETTINGS = RdmaStreamSettings.create(ConfigFactory.parseString(
      "pekko-rdma.streams { buffer-size = 8KiB, receive-buffers = 4, send-buffers = 4,"
          + " send-queue-depth = 16, inline-threshold = 64, signal-every = 4,"
          + " max-message-size = 1MiB, oversize-chunks = split }")
      .withFallback(ConfigFactory.load()));
  static final RingSizing.SizingSettings RINGS =
      new RingSizing.SizingSettings(true, 2, 4096, Duration.ofMillis(100));
  // where a send request keeps its fields (core's RequestLayout, which the module exports to
  // the native provider alone: the tests, on the class path, read it by name)
  private static final int OFF_SG_LIST = layout("OFF_SG_LIST");
  private static final int OFF_IMM_DATA = layout("OFF_IMM_DATA");
  private static final int OFF_REMOTE_ADDR = layout("OFF_REMOTE_ADDR");
  private static final int OFF_RDMA_RKEY = layout("OFF_RDMA_RKEY");

  private static int layout(String field) {
    try {
      return Class.forName("dev.pekkordma.verbs.abi.RequestLayout").getField(field).getInt(null);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** One message of the run to lie about: the {@code at}-th transmitted, how, with what. */
  record Lie(int at, int kind, int value) {}

  private Lie lie;
  private int transmitted;
  /** Who lied, once one did: what it said of its ring and credits may cost its own memory. */
  String liar;

  final End client;
  final End server;
  final List<String> violations = new ArrayList<>();
  private int keys = 100;

  ProtocolSim(boolean clientHalfClose, boolean serverHalfClose, boolean coalesce) {
    client = new End("client", true, clientHalfClose, coalesce);
    server = new End("server", false, serverHalfClose, coalesce);
    client.peer = server;
    server.peer = client;
    // the handshake: each side's first ring goes to the other in the CM's private data
    client.protocol.open(client, null, false);
    server.protocol.open(server, null, false);
    client.protocol.peerRing(server.ring.describe(server.ringFlags()));
    server.protocol.peerRing(client.ring.describe(client.ringFlags()));
    server.protocol.established();
    client.protocol.established();
    check();
  }

  /** Makes the {@code lie.at()}-th message transmitted a lie. */
  void lie(Lie lie) {
    this.lie = lie;
  }

  /** Registered memory with a key of its own, its lkey and rkey alike. */
  private FakeMr mr(OffHeapBuffer memory) {
    int key = keys++;
    return new FakeMr(memory, key, key);
  }

  void violation(String what) {
    violations.add(what);
  }

  /** The invariants that hold between any two steps. */
  void check() {
    for (End e : List.of(client, server)) {
      e.syncTaken();
      Sender s = e.protocol.sender();
      if (s.credits() < 0 || s.credits() > s.peerSlots()) {
        violation(e.name + " holds " + s.credits() + " credits for a ring of " + s.peerSlots()
            + " slots");
      }
    }
  }

  @Override
  public void close() {
    client.free();
    server.free();
  }

  /** A step the test may take now: its name, and what it does. */
  record Step(String name, Runnable run) {}

  /**
   * Every step possible now: each side's application events ({@code ends}: completing its
   * upstream or cancelling its downstream too, {@code aborts}: failing its upstream), its
   * timers, and the fabric's steps (each wire's next message, each CQ polled, a disconnect
   * heard); {@code size}: the next element's length.
   */
  List<Step> steps(int size, boolean ends, boolean aborts) {
    List<Step> steps = new ArrayList<>();
    for (End e : List.of(client, server)) {
      if (!e.stopped()) {
        if (e.pullDue && e.upstreamOpen) {
          steps.add(new Step(e.name + " offers " + size, () -> e.offer(size)));
        }
        if (ends && e.upstreamOpen) {
          steps.add(new Step(e.name + " completes", e::completeUpstream));
        }
        if (e.downstreamOpen && !e.demandDue) steps.add(new Step(e.name + " demands", e::demand));
        if (ends && e.downstreamOpen) {
          steps.add(new Step(e.name + " cancels", e::cancelDownstream));
        }
        if (ends && aborts && e.upstreamOpen) steps.add(new Step(e.name + " aborts", e::abort));
        if (e.burstDue) steps.add(new Step(e.name + "'s burst ends", e::burstOver));
        if (e.timers.contains(ConnectionProtocol.Timer.RESIZE)) {
          steps.add(new Step(e.name + " ticks",
              () -> e.protocol.timer(ConnectionProtocol.Timer.RESIZE)));
        }
      }
      steps.addAll(fabric(e));
    }
    return steps;
  }

  /** The fabric's steps possible now at {@code e}. */
  private List<Step> fabric(End e) {
    List<Step> steps = new ArrayList<>();
    if (!e.wire.isEmpty()) steps.add(new Step(e.name + " transmits", e::transmit));
    if (!e.cq.isEmpty() && !e.closed) steps.add(new Step(e.name + " polls", () -> e.poll(8)));
    if (e.disconnectDue && !e.closed && e.peer.wire.isEmpty()) {
      steps.add(new Step(e.name + " hears the disconnect", e::disconnected));
    }
    if (e.timers.contains(ConnectionProtocol.Timer.FLUSHED) && !e.closed) {
      steps.add(new Step(e.name + "'s flush timer fires", e::flushTimer));
    }
    return steps;
  }

  /**
   * Both applications end what they have not (complete their upstream, read everything), and
   * the fabric runs until nothing is left to do; false when it was still busy after {@code
   * limit} rounds.
   */
  boolean finish(int limit) {
    for (int round = 0; round < limit; round++) {
      List<Step> steps = new ArrayList<>();
      for (End e : List.of(client, server)) {
        if (e.stopped()) continue;
        if (e.upstreamOpen) steps.add(new Step("", e::completeUpstream));
        if (e.downstreamOpen && !e.demandDue) steps.add(new Step("", e::demand));
        if (e.burstDue) steps.add(new Step("", e::burstOver));
      }
      steps.addAll(fabric(client));
      steps.addAll(fabric(server));
      if (steps.isEmpty()) return true;
      steps.get(0).run().run();
      check();
    }
    return false;
  }

  /** The fabric alone until it is idle, the applications doing nothing. */
  void settle() {
    for (int round = 0; round < 100_000; round++) {
      List<Step> steps = new ArrayList<>();
      steps.addAll(fabric(client));
      steps.addAll(fabric(server));
      for (End e : List.of(client, server)) {
        if (e.burstDue && !e.stopped()) steps.add(new Step("", e::burstOver));
      }
      if (steps.isEmpty()) return;
      steps.get(0).run().run();
      check();
    }
    violation("the fabric never settled");
  }

  /** A completion waiting in a CQ. */
  record Wc(long wrId, WcStatus status, WcOpcode opcode, int length, int imm, boolean withImm) {}

  /** A send request on its way: its data, where it goes. */
  record Message(long wrId, WrOpcode opcode, boolean signaled, long local, int length, int lkey,
      byte[] inline, long remote, int rkey, int imm) {}

  /** One side: the machine, its resources and QP, and its application as the test drives it. */
  final class End implements ConnectionProtocol.Actions, ConnectionProtocol.ProtocolResources {
    final String name;
    final ConnectionProtocol protocol;
    final ConnectionPlan plan;
    End peer;
    private final SendRequests sendRequests = new SendRequests(1, 1);
    private final WorkCompletions wcs = new WorkCompletions(1);
    private final OffHeapBuffer scratch;
    private final SendBuffers send;
    private final List<SendBuffers.Area> areas = new ArrayList<>();
    final ConnectionResources.RegisteredRing ring;
    private final List<ConnectionResources.RegisteredRing> rings = new ArrayList<>(); // live
    final Deque<Wc> cq = new ArrayDeque<>();
    final Deque<Message> wire = new ArrayDeque<>(); // posted, not yet at the peer
    private int receives;
    private final Deque<Long> landed = new ArrayDeque<>(); // slots written, in order, untaken
    private final Set<Long> occupied = new HashSet<>();
    private long taken;
    private final QueuePair qp = new Qp();

    // the application
    final List<ByteString> offered = new ArrayList<>();
    final List<ByteString> pushed = new ArrayList<>();
    boolean pullDue;
    boolean demandDue;
    boolean upstreamOpen = true;
    boolean downstreamOpen = true;
    boolean downstreamCompleted;
    Throwable upstreamCancelCause;
    boolean upstreamCancelled;
    boolean burstDue;
    final Set<ConnectionProtocol.Timer> timers = EnumSet.noneOf(ConnectionProtocol.Timer.class);
    boolean closed;
    boolean disconnectDue;
    TransferResult ended;
    RuntimeException writeFailure;
    Throwable failure;
    boolean aborted; // the test aborted this side
    int ringsOpened; // after its first

    End(String name, boolean active, boolean halfClose, boolean coalesce) {
      this.name = name;
      plan = ConnectionPlan.of(RINGS, coalesce, SETTINGS, Framing.MESSAGES, false);
      scratch = OffHeapBuffer.allocate(64);
      int slot = plan.slotSize();
      send = new SendBuffers(area(Math.min(2, SETTINGS.sendBuffers()), Math.min(4096, slot)),
          () -> area(SETTINGS.sendBuffers(), slot), a -> {
            areas.remove(a);
            a.area.free();
          }, 0, (long) SETTINGS.sendBuffers() * slot);
      ring = openRing(plan.first().count(), plan.first().size());
      protocol = new ConnectionProtocol(plan, Closing.halfClose(halfClose), active,
          reason -> new IllegalStateException(name + ": " + reason), this);
    }

    private SendBuffers.Area area(int count, int size) {
      OffHeapBuffer m = OffHeapBuffer.allocate((long) count * size);
      SendBuffers.Area a = new SendBuffers.Area(new Registered(m, mr(m), null),
          count, size);
      areas.add(a);
      return a;
    }

    // ---------------------------------------------------------------- resources

    @Override
    public QueuePair qp() {
      return qp;
    }

    @Override
    public SendRequests sendRequests() {
      return sendRequests;
    }

    @Override
    public SendBuffers sendBuffers() {
      return send;
    }

    @Override
    public OffHeapBuffer scratch() {
      return scratch;
    }

    @Override
    public int inlineMax() {
      return SETTINGS.inlineThreshold();
    }

    @Override
    public ConnectionResources.RegisteredRing ring() {
      return ring;
    }

    @Override
    public ConnectionResources.RegisteredRing openRing(int count, int size) {
      OffHeapBuffer m = OffHeapBuffer.allocate((long) count * size);
      ConnectionResources.RegisteredRing r = new ConnectionResources.RegisteredRing(
          new Registered(m, mr(m), null), count, size);
      rings.add(r);
      if (protocol != null) ringsOpened++; // after the first
      return r;
    }

    @Override
    public void closeRing(Receiver.Slots slots) {
      syncTaken(); // the write it took last, in this same step
      for (ConnectionResources.RegisteredRing r : rings) {
        if (r.area().memory() == slots.memory()) {
          for (int i = 0; i < r.count(); i++) {
            if (occupied.contains(r.area().memory().address() + (long) i * r.size())) {
              violation(name + " retired a ring whose slot " + i + " was not taken");
            }
          }
          rings.remove(r);
          r.area().free();
          return;
        }
      }
      violation(name + " retired a ring it does not have");
    }

    @Override
    public int ringFlags() {
      return plan.ringFlags();
    }

    @Override
    public void postReceives(int count) {
      receives += count;
      if (receives > plan.rqDepth()) {
        violation(name + " posted " + receives + " receives, its queue holds " + plan.rqDepth());
      }
    }

    /** The live ring with {@code [address, address + length)} inside and key {@code rkey}. */
    private ConnectionResources.RegisteredRing ringAt(long address, int length, int rkey) {
      for (ConnectionResources.RegisteredRing r : rings) {
        long base = r.area().memory().address();
        long size = (long) r.count() * r.size();
        if (r.area().mr().rkey() == rkey && address >= base && address + length <= base + size) {
          return r;
        }
      }
      return null;
    }

    /** Slots the machine took since last asked are free again. */
    void syncTaken() {
      if (closed) return;
      long now = protocol.receiver().taken();
      for (; taken < now; taken++) {
        Long slot = landed.poll();
        if (slot == null) {
          violation(name + " took a write that never landed");
          return;
        }
        occupied.remove(slot);
      }
    }

    // ---------------------------------------------------------------- actions

    @Override
    public void pull() {
      if (pullDue) violation(name + " pulled twice");
      if (!upstreamOpen) violation(name + " pulled a closed upstream");
      pullDue = true;
    }

    @Override
    public void push(Object element) {
      if (!demandDue) violation(name + " pushed without demand");
      if (!downstreamOpen) violation(name + " pushed to a closed downstream");
      demandDue = false;
      pushed.add((ByteString) element);
    }

    @Override
    public void completeDownstream() {
      if (!downstreamOpen) violation(name + " completed a closed downstream");
      downstreamOpen = false;
      downstreamCompleted = true;
      demandDue = false;
    }

    @Override
    public void cancelUpstream(Throwable cause) {
      if (!upstreamOpen) violation(name + " cancelled a closed upstream");
      upstreamOpen = false;
      upstreamCancelled = true;
      upstreamCancelCause = cause;
      pullDue = false;
    }

    @Override
    public void burstBegan() {
      if (burstDue) violation(name + " asked for a burst's end twice");
      burstDue = true;
    }

    @Override
    public void schedule(ConnectionProtocol.Timer timer, Duration after, boolean repeat) {
      timers.add(timer);
    }

    @Override
    public void cancel(ConnectionProtocol.Timer timer) {
      timers.remove(timer);
    }

    @Override
    public void sendTried(boolean stalled) {}

    @Override
    public void close() {
      if (closed) return;
      closed = true;
      wire.clear(); // not sent: the QP is gone
      cq.clear();
      timers.clear();
      if (!peer.closed) peer.disconnectDue = true;
    }

    @Override
    public void end(TransferResult moved, RuntimeException writeFailure) {
      if (ended != null || failure != null) violation(name + " ended twice");
      ended = moved;
      this.writeFailure = writeFailure;
    }

    @Override
    public void fail(Throwable cause) {
      if (ended != null || failure != null) violation(name + " ended twice");
      failure = cause;
      // the stage fails: its ports close, its resources go
      upstreamOpen = false;
      downstreamOpen = false;
      pullDue = false;
      demandDue = false;
      close();
    }

    boolean stopped() {
      return ended != null || failure != null;
    }

    // ---------------------------------------------------------------- the application

    /** Its upstream gives the element the machine pulled: {@code size} bytes, numbered. */
    void offer(int size) {
      byte[] b = new byte[size];
      for (int i = 0; i < size; i++) b[i] = (byte) (offered.size() * 7 + i);
      ByteString element = ByteString.fromArrayUnsafe(b);
      offered.add(element);
      pullDue = false;
      protocol.offered(element);
    }

    void completeUpstream() {
      upstreamOpen = false;
      pullDue = false;
      protocol.upstreamFinished();
    }

    /** Its upstream fails: Tcp's abort. */
    void abort() {
      upstreamOpen = false;
      pullDue = false;
      aborted = true;
      protocol.aborted(new IllegalStateException(name + "'s upstream failed"));
    }

    void demand() {
      demandDue = true;
      protocol.demanded();
    }

    void cancelDownstream() {
      downstreamOpen = false;
      demandDue = false;
      protocol.downstreamCancelled();
    }

    void burstOver() {
      burstDue = false;
      protocol.burstOver();
    }

    /** The CM's DISCONNECTED: what the CQ holds first, as the stage does. */
    void disconnected() {
      disconnectDue = false;
      poll(Integer.MAX_VALUE);
      protocol.peerDisconnected("the peer disconnected");
    }

    void flushTimer() {
      timers.remove(ConnectionProtocol.Timer.FLUSHED);
      poll(Integer.MAX_VALUE);
      protocol.timer(ConnectionProtocol.Timer.FLUSHED);
    }

    // ---------------------------------------------------------------- the fabric

    /** Hands the machine up to {@code n} completions, then says it has polled. */
    void poll(int n) {
      for (int i = 0; i < n && !cq.isEmpty() && !protocol.over(); i++) {
        Wc wc = cq.poll();
        wcs.put(0, wc.wrId(), wc.status(), wc.opcode(), wc.length(),
            Integer.reverseBytes(wc.imm()), 7, 7, wc.withImm() ? WorkCompletions.FLAG_WITH_IMM : 0);
        protocol.completed(wcs, 0);
      }
      protocol.polled();
    }

    /** The next message this side sent arrives at the peer. */
    void transmit() {
      Message m = wire.poll();
      if (peer.closed) { // its QP is gone: the requester's retries fail
        cq.add(new Wc(m.wrId(), WcStatus.WR_FLUSH_ERR, WcOpcode.SEND, 0, 0, false));
        return;
      }
      WcOpcode done = m.opcode() == WrOpcode.SEND_WITH_IMM ? WcOpcode.SEND : WcOpcode.RDMA_WRITE;
      if (m.opcode() == WrOpcode.RDMA_WRITE) { // asks for a completion, touches nothing
        if (m.signaled()) cq.add(new Wc(m.wrId(), WcStatus.SUCCESS, done, 0, 0, false));
        return;
      }
      if (peer.receives == 0) {
        violation(name + " sent to " + peer.name + " with no receive posted (RNR)");
        return;
      }
      if (m.opcode() == WrOpcode.RDMA_WRITE_WITH_IMM) {
        ConnectionResources.RegisteredRing r = peer.ringAt(m.remote(), m.length(), m.rkey());
        if (r == null) {
          violation(name + " wrote " + m.length() + " bytes at 0x" + Long.toHexString(m.remote())
              + " outside the rings of " + peer.name);
          cq.add(new Wc(m.wrId(), WcStatus.REM_ACCESS_ERR, done, 0, 0, false));
          return;
        }
        long slot = m.remote();
        if ((slot - r.area().memory().address()) % r.size() != 0) {
          violation(name + " wrote into the middle of a slot of " + peer.name);
        }
        if (!peer.occupied.add(slot)) {
          violation(name + " wrote into a slot of " + peer.name + " whose write was not taken");
        }
        peer.landed.add(slot);
        if (m.length() > 0) {
          if (m.inline() != null) {
            NativeMemory.copyFromArray(m.inline(), 0, m.remote(), m.length());
          } else {
            if (!local(m.local(), m.length(), m.lkey(), false)) {
              violation(name + "'s send buffer went before its write did");
              return;
            }
            NativeMemory.copy(m.local(), m.remote(), m.length());
          }
        }
      }
      peer.receives--;
      Wc arrival = new Wc(ConnectionResources.RECV_WR_ID, WcStatus.SUCCESS,
          m.opcode() == WrOpcode.SEND_WITH_IMM ? WcOpcode.RECV : WcOpcode.RECV_RDMA_WITH_IMM,
          m.opcode() == WrOpcode.SEND_WITH_IMM ? 0 : m.length(), m.imm(), true);
      if (lie != null && transmitted++ == lie.at()) arrival = lie(arrival, m);
      peer.cq.add(arrival);
      if (m.signaled()) cq.add(new Wc(m.wrId(), WcStatus.SUCCESS, done, 0, 0, false));
    }

    /**
     * The message {@code m} as a liar would have sent it instead ({@link #lie}): its immediate
     * with a bit flipped, its length another the NIC would allow (the rest of the ring from the
     * slot), a byte of its data flipped, or a SEND for a WRITE and back.
     */
    private Wc lie(Wc honest, Message m) {
      int v = lie.value();
      boolean write = m.opcode() == WrOpcode.RDMA_WRITE_WITH_IMM;
      liar = name;
      switch (lie.kind()) {
        case 0:
          return new Wc(honest.wrId(), honest.status(), honest.opcode(), honest.length(),
              honest.imm() ^ (1 << (v & 31)), true);
        case 1: {
          if (!write) return honest;
          ConnectionResources.RegisteredRing r = peer.ringAt(m.remote(), 0, m.rkey());
          long left = r.area().memory().address() + (long) r.count() * r.size() - m.remote();
          int length = (int) (Integer.toUnsignedLong(v) % (left + 1));
          for (int i = m.length(); i < length; i++) {
            NativeMemory.putByte(m.remote() + i, (byte) (v + i));
          }
          return new Wc(honest.wrId(), honest.status(), honest.opcode(), length, honest.imm(),
              true);
        }
        case 2:
          if (write && m.length() > 0) {
            long at = m.remote() + Integer.remainderUnsigned(v, m.length());
            NativeMemory.putByte(at, (byte) (NativeMemory.getByte(at) ^ (1 << (v >>> 8 & 7))));
          }
          return honest;
        default:
          return new Wc(honest.wrId(), honest.status(), write ? WcOpcode.RECV
              : WcOpcode.RECV_RDMA_WITH_IMM, honest.length(), honest.imm(), (v & 1) == 0);
      }
    }

    /** Whether {@code [address, address + length)} is in this side's registered memory. */
    private boolean local(long address, int length, int lkey, boolean inline) {
      if (inline) {
        return address >= scratch.address() && address + length <= scratch.address() + 64;
      }
      for (SendBuffers.Area a : areas) {
        long base = a.area.memory().address();
        if (a.area.mr().lkey() == lkey && address >= base
            && address + length <= base + (long) a.count * a.size) {
          return true;
        }
      }
      return false;
    }

    void free() {
      for (ConnectionResources.RegisteredRing r : rings) r.area().free();
      rings.clear();
      for (SendBuffers.Area a : areas) a.area.free();
      areas.clear();
      scratch.close();
      sendRequests.close();
      wcs.close();
    }

    /** What it posts goes on its wire, checked. */
    private final class Qp extends PostOnlyQp {
      @Override
      public void postSend(SendRequests r) {
        if (closed) violation(name + " posted after its QP was gone");
        for (int i = 0; i < r.size(); i++) {
          long w = r.requestAddress(i);
          int flags = r.flags(i);
          boolean inline = (flags & SendRequests.INLINE) != 0;
          long sge = NativeMemory.getLong(w + OFF_SG_LIST);
          boolean any = r.numSge(i) > 0;
          long address = any ? NativeMemory.getLong(sge) : 0;
          int length = any ? NativeMemory.getInt(sge + 8) : 0;
          int lkey = any ? NativeMemory.getInt(sge + 12) : 0;
          if (length > 0 && !local(address, length, lkey, inline)) {
            violation(name + " sent " + length + " bytes from outside its registered memory");
            continue;
          }
          byte[] copy = null;
          if (inline && length > 0) {
            copy = new byte[length];
            NativeMemory.copyToArray(address, copy, 0, length);
          }
          wire.add(new Message(r.wrId(i), r.opcode(i), (flags & SendRequests.SIGNALED) != 0,
              address, length, lkey, copy, NativeMemory.getLong(w + OFF_REMOTE_ADDR),
              NativeMemory.getInt(w + OFF_RDMA_RKEY),
              Integer.reverseBytes(NativeMemory.getInt(w + OFF_IMM_DATA))));
        }
      }

      @Override
      public QpState state() {
        return closed ? QpState.ERR : QpState.RTS;
      }
    }
  }
}

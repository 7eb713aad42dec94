package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmId;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.internal.CompletionHub;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one connection registers and creates, once for its life, and frees once, in order: the
 * CM disconnect, the QP, the registrations and the PD (its own, so that no peer's rkey reaches
 * another connection's ring), the memory, the CQ through its hub, the CM id, the hub.
 */
final class ConnectionResources implements ConnectionProtocol.ProtocolResources, AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(ConnectionResources.class);
  static final long RECV_WR_ID = -1L;
  /** An elastic connection's small send area: what an idle connection keeps. */
  static final int SMALL_SEND_COUNT = 2;
  static final int SMALL_SEND_SIZE = 4096;
  private static final long SEND_BACKOFF_NANOS = 2_000_000_000L;

  private final StreamsRuntime rt;
  final CmId id;
  final int slots; // the first ring's
  final int ringSlotSize;
  final int slotSize; // the send buffers'
  final int sqDepth;
  final int rqDepth;
  private final int sendBuffers;
  private final int inlineThreshold;
  private final String settingsPath;
  int inlineMax;
  private final boolean elastic;
  /** What our rings say of us: {@link Wire#TAKES_BATCHES}, or 0. */
  int ringFlags;
  CompletionHub hub;
  ProtectionDomain pd;
  /** The first receive ring; more may follow (see {@link #openRing}). */
  RegisteredRing ring;
  private final List<RegisteredRing> rings = new ArrayList<>();
  private String peer;
  SendBuffers send;
  OffHeapBuffer scratch;
  CompletionQueue cq;
  QueuePair qp;
  SendRequests sendWr;
  RecvRequests recvWr;
  WorkCompletions wcs;
  /** When lending, the ring's memory goes to a LeasedRing, which frees it after the last lease. */
  LeasedRing lentRing;
  private boolean closed;

  /** The id's resources, none opened yet: {@link #open} opens them, {@link #close} frees them. */
  ConnectionResources(StreamsRuntime rt, CmId id, int slots, int ringSlotSize, int slotSize,
      int sendBuffers, int sqDepth, int rqDepth, int inlineThreshold, String settingsPath,
      boolean elastic) {
    this.elastic = elastic;
    this.rt = rt;
    this.id = id;
    this.slots = slots;
    this.ringSlotSize = ringSlotSize;
    this.slotSize = slotSize;
    this.sendBuffers = sendBuffers;
    this.sqDepth = sqDepth;
    this.rqDepth = rqDepth;
    this.inlineThreshold = inlineThreshold;
    this.settingsPath = settingsPath;
  }

  /**
   * Opens everything on the id's device, one by one: after a failure {@link #close} frees what
   * was opened. {@code wake} runs when the CQ's completion event fires. The memory is reserved
   * first: past the runtime's budget the connection is refused, naming it, before anything is
   * opened.
   */
  void open(Runnable wake, String peer) {
    this.peer = peer;
    DeviceContext device = id.verbs();
    hub = rt.hubs.acquire(device);
    inlineMax = Math.min(inlineThreshold, device.queryDevice().maxInlineData());
    pd = device.allocPd();
    ring = openRing(slots, ringSlotSize);
    if (elastic) {
      send = new SendBuffers(openSendArea(Math.min(SMALL_SEND_COUNT, sendBuffers),
          Math.min(SMALL_SEND_SIZE, slotSize)), () -> openSendArea(sendBuffers, slotSize),
          this::closeSendArea, SEND_BACKOFF_NANOS, (long) sendBuffers * slotSize);
    } else {
      send = new SendBuffers(openSendArea(sendBuffers, slotSize));
    }
    scratch = OffHeapBuffer.allocate(Math.max(1, inlineMax));
    sendWr = new SendRequests(1, 1);
    recvWr = new RecvRequests(rqDepth, 1);
    wcs = new WorkCompletions(64);
    cq = hub.createCq(sqDepth + rqDepth, wake);
    qp = id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq)
        .maxSendWr(sqDepth).maxRecvWr(rqDepth).maxInlineData(inlineMax));
  }

  /**
   * {@code bytes} reserved from the budget (which may refuse them, naming {@code lower}: {@link
   * dev.pekkordma.runtime.RegisteredMemoryExhaustedException}), allocated and registered with
   * {@code access}; on a failure nothing stays taken.
   */
  private Registered register(long bytes, int access, String purpose, String lower) {
    MemoryBudget.Reservation reserved = rt.runtime.memory().reserve(bytes,
        purpose + " of a stream connection with " + peer, settingsPath + lower);
    OffHeapBuffer memory = null;
    try {
      memory = OffHeapBuffer.allocate(bytes);
      return new Registered(memory, pd.registerMemory(memory, access), reserved);
    } catch (RuntimeException e) {
      if (memory != null) memory.close();
      reserved.close();
      throw e;
    }
  }

  /** A receive ring of {@code count} slots of {@code size}, for the peer to write into. */
  @Override
  public RegisteredRing openRing(int count, int size) {
    RegisteredRing r = new RegisteredRing(register((long) count * size,
        Access.LOCAL_WRITE | Access.REMOTE_WRITE, "a receive ring",
        ".receive-buffers or .buffer-size"), count, size);
    rings.add(r);
    return r;
  }

  /** The ring replaced and all its writes taken: deregistered and freed. */
  @Override
  public void closeRing(Receiver.Slots slots) {
    for (RegisteredRing r : rings) {
      if (r.area.memory() == slots.memory()) {
        rings.remove(r);
        r.area.deregister();
        r.area.free();
        return;
      }
    }
  }

  /** {@code count} registered send buffers of {@code size}. */
  SendBuffers.Area openSendArea(int count, int size) {
    return new SendBuffers.Area(register((long) count * size, Access.LOCAL_WRITE,
        "the send buffers", ".send-buffers or .buffer-size"), count, size);
  }

  private void closeSendArea(SendBuffers.Area a) {
    a.area.deregister();
    a.area.free();
  }

  /** A receive ring: registered memory the peer writes into, in {@code count} slots. */
  record RegisteredRing(Registered area, int count, int size) {
    Receiver.Slots slots() {
      return new Receiver.Slots(area.memory(), count, size);
    }

    /** What the peer is told of it, with our {@code flags} ({@link Wire#TAKES_BATCHES}). */
    Wire.Ring describe(int flags) {
      return new Wire.Ring(area.mr().address(), area.mr().rkey(), count, size, flags);
    }
  }

  // ------------------------------------------------------------ what the protocol runs on

  @Override
  public QueuePair qp() {
    return qp;
  }

  @Override
  public SendRequests sendRequests() {
    return sendWr;
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
    return inlineMax;
  }

  @Override
  public RegisteredRing ring() {
    return ring;
  }

  @Override
  public int ringFlags() {
    return ringFlags;
  }

  /** Posts {@code count} receives (they take no data: every message is a write or is empty). */
  @Override
  public void postReceives(int count) {
    recvWr.clear();
    for (int i = 0; i < count; i++) recvWr.add(RECV_WR_ID);
    qp.postRecv(recvWr);
  }

  /** What the peer is told as the resources close. */
  enum Farewell {
    /** An established connection the peer has not disconnected: disconnect first. */
    DISCONNECT,
    /** A request nobody accepted: reject it. */
    REJECT,
    /** Nothing: the peer knows, or was never answered. */
    NONE
  }

  /** Frees everything, once, after telling the peer {@code farewell}. */
  void close(Farewell farewell, String peer) {
    if (closed) return;
    closed = true;
    if (farewell == Farewell.DISCONNECT) {
      try {
        id.disconnect();
      } catch (RuntimeException e) {
        // gone already
      }
    }
    if (qp != null) {
      try {
        id.destroyQp();
      } catch (RuntimeException e) {
        // reported by the id's destruction below if it matters
      }
    }
    for (RegisteredRing r : rings) r.area.deregister();
    SendBuffers.Area[] areas = send != null ? send.areas() : new SendBuffers.Area[0];
    for (SendBuffers.Area a : areas) a.area.deregister();
    if (pd != null) {
      try {
        pd.close();
      } catch (RuntimeException e) {
        log.warn("{}: deallocating the connection's PD failed: {}", peer, e.getMessage());
      }
    }
    for (RegisteredRing r : rings) {
      if (r == ring && lentRing != null) {
        lentRing.close(); // the memory stays until the application has released every buffer
      } else {
        r.area.free();
      }
    }
    rings.clear();
    for (SendBuffers.Area a : areas) a.area.free();
    if (scratch != null) scratch.close();
    if (cq != null) hub.closeCq(cq);
    rt.cm().destroy(id, farewell == Farewell.REJECT);
    if (hub != null) rt.hubs.release(hub);
    if (sendWr != null) sendWr.close();
    if (recvWr != null) recvWr.close();
    if (wcs != null) wcs.close();
  }

  /**
   * The first ring goes to a {@link LeasedRing} to lend, which runs {@code wake} on releases and
   * frees the memory after the last.
   */
  LeasedRing lend(String peer, Runnable wake) {
    lentRing = new LeasedRing(ring.area.memory(), ring.count, ring.size, peer, wake,
        this::ringFreed);
    return lentRing;
  }

  /** The lent ring's memory is freed: its share of the budget goes back. */
  void ringFreed() {
    if (ring != null) ring.area.bytes().close();
  }

  @Override
  public void close() {
    close(Farewell.NONE, String.valueOf(id));
  }
}

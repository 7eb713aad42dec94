package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmId;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.runtime.CompletionHub;
import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
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
final class ConnectionResources implements AutoCloseable {
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
  CompletionHub hub;
  ProtectionDomain pd;
  /** The first receive ring; more may follow (see {@link #openRing}). */
  ReceiveRing ring;
  private final List<ReceiveRing> rings = new ArrayList<>();
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
          this::closeSendArea, SEND_BACKOFF_NANOS);
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
   * A receive ring of {@code count} slots of {@code size} bytes, reserved from the budget (which
   * may refuse it: {@link dev.pekkordma.runtime.RegisteredMemoryExhaustedException}),
   * allocated and registered for the peer to write into. {@link #close} frees what is left open.
   */
  ReceiveRing openRing(int count, int size) {
    MemoryBudget.Reservation bytes = rt.runtime.memory().reserve((long) count * size,
        "a receive ring of a stream connection with " + peer,
        settingsPath + ".receive-buffers or .buffer-size");
    OffHeapBuffer memory = null;
    try {
      memory = OffHeapBuffer.allocate((long) count * size);
      MemoryRegion mr = pd.registerMemory(memory, Access.LOCAL_WRITE | Access.REMOTE_WRITE);
      ReceiveRing r = new ReceiveRing(memory, mr, count, size, bytes);
      rings.add(r);
      return r;
    } catch (RuntimeException e) {
      if (memory != null) memory.close();
      bytes.close();
      throw e;
    }
  }

  /** The ring replaced and all its writes taken: deregistered and freed. */
  void closeRing(Receiver.Slots slots) {
    for (ReceiveRing r : rings) {
      if (r.memory == slots.memory()) {
        rings.remove(r);
        closeQuietly(r.mr);
        r.memory.close();
        r.bytes.close();
        return;
      }
    }
  }

  /** Registered send buffers, reserved from the budget first (which may refuse them). */
  SendBuffers.Area openSendArea(int count, int size) {
    MemoryBudget.Reservation bytes = rt.runtime.memory().reserve((long) count * size,
        "the send buffers of a stream connection with " + peer,
        settingsPath + ".send-buffers or .buffer-size");
    OffHeapBuffer memory = null;
    try {
      memory = OffHeapBuffer.allocate((long) count * size);
      MemoryRegion mr = pd.registerMemory(memory, Access.LOCAL_WRITE);
      return new SendBuffers.Area(memory, mr, count, size, bytes);
    } catch (RuntimeException e) {
      if (memory != null) memory.close();
      bytes.close();
      throw e;
    }
  }

  private void closeSendArea(SendBuffers.Area a) {
    closeQuietly(a.mr);
    a.memory.close();
    a.bytes.close();
  }

  /** A receive ring: memory the peer writes into, registered for it, and its share of the budget. */
  static final class ReceiveRing {
    final OffHeapBuffer memory;
    final MemoryRegion mr;
    final int count;
    final int size;
    private final MemoryBudget.Reservation bytes;

    ReceiveRing(OffHeapBuffer memory, MemoryRegion mr, int count, int size,
        MemoryBudget.Reservation bytes) {
      this.memory = memory;
      this.mr = mr;
      this.count = count;
      this.size = size;
      this.bytes = bytes;
    }

    Receiver.Slots slots() {
      return new Receiver.Slots(memory, count, size);
    }

    /** What the peer is told of it. */
    Wire.Ring describe() {
      return new Wire.Ring(mr.address(), mr.rkey(), count, size);
    }
  }

  /** Posts {@code count} receives (they take no data: every message is a write or is empty). */
  void postReceives(int count) {
    recvWr.clear();
    for (int i = 0; i < count; i++) recvWr.add(RECV_WR_ID);
    qp.postRecv(recvWr);
  }

  /**
   * Frees everything, once; {@code disconnect} first when the connection was established and
   * the peer has not disconnected, {@code reject} the id when it was a request nobody accepted.
   */
  void close(boolean disconnect, boolean reject, String peer) {
    if (closed) return;
    closed = true;
    if (disconnect) {
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
    for (ReceiveRing r : rings) closeQuietly(r.mr);
    SendBuffers.Area[] areas = send != null ? send.areas() : new SendBuffers.Area[0];
    for (SendBuffers.Area a : areas) closeQuietly(a.mr);
    if (pd != null) {
      try {
        pd.close();
      } catch (RuntimeException e) {
        log.warn("{}: deallocating the connection's PD failed: {}", peer, e.getMessage());
      }
    }
    for (ReceiveRing r : rings) {
      if (r == ring && lentRing != null) {
        lentRing.close(); // the memory stays until the application has released every buffer
      } else {
        r.memory.close();
        r.bytes.close();
      }
    }
    rings.clear();
    for (SendBuffers.Area a : areas) {
      a.memory.close();
      a.bytes.close();
    }
    if (scratch != null) scratch.close();
    if (cq != null) hub.closeCq(cq);
    rt.cm().destroy(id, reject);
    if (hub != null) rt.hubs.release(hub);
    if (sendWr != null) sendWr.close();
    if (recvWr != null) recvWr.close();
    if (wcs != null) wcs.close();
  }

  /**
   * The first ring goes to a {@link LeasedRing} for {@code receiver} to lend, which runs
   * {@code wake} on releases and frees the memory after the last.
   */
  void lend(Receiver receiver, String peer, Runnable wake) {
    lentRing = new LeasedRing(ring.memory, ring.count, ring.size, peer, wake, this::ringFreed);
    receiver.lend(lentRing);
  }

  /** The lent ring's memory is freed: its share of the budget goes back. */
  void ringFreed() {
    if (ring != null) ring.bytes.close();
  }

  @Override
  public void close() {
    close(false, false, String.valueOf(id));
  }

  private static void closeQuietly(MemoryRegion mr) {
    if (mr == null) return;
    try {
      mr.close();
    } catch (RuntimeException e) {
      // the PD's deallocation reports what is left
    }
  }
}

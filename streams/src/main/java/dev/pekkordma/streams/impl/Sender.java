package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;

/**
 * The sending half of a connection's bookkeeping: the peer's ring and the credits for its free
 * slots, the registered send buffers, and the send queue. A data write takes a credit and goes
 * to slot {@code writes % peerSlots}; a control message (a zero-length SEND WITH IMM) takes
 * neither, and the last {@link #CONTROL_RESERVE} send-queue entries are kept for them, so that
 * data can never block a FIN or a credit return. Every {@code signalEvery}-th send asks for a
 * completion, which retires it and every unsignalled one before it.
 */
final class Sender {
  /** Send-queue entries data may not take. */
  static final int CONTROL_RESERVE = 2;

  private final QueuePair qp;
  private final SendRequests wr;
  private final int sqDepth;
  private final int signalEvery;
  private final SendBuffers buffers;
  private final int[] bufferOf; // by wr_id % sqDepth: the send buffer the request reads, or -1
  private long nextWrId;
  private long oldestWrId;
  private int outstanding;
  private int unsignaled;

  private long peerRing;
  private int peerRkey;
  private int peerSlots;
  private int peerSlotSize;
  private boolean peerTakesBatches;
  private int peerFirstSlotSize; // an honest peer's slots are never smaller
  private int credits;
  private long writes; // into every ring of the peer's
  private long writesThroughData; // writes, as it was after our last data write (not a RING)
  private long ringWrites; // into its current ring: the next goes to slot ringWrites % peerSlots
  private Wire.Ring pendingRing; // the peer's new ring, written to once our RING_ACK is posted

  Sender(QueuePair qp, SendRequests wr, int sqDepth, int signalEvery, SendBuffers buffers) {
    this.qp = qp;
    this.wr = wr;
    this.sqDepth = sqDepth;
    this.signalEvery = signalEvery;
    this.buffers = buffers;
    this.bufferOf = new int[sqDepth];
  }

  /** The peer's ring, checked already: its slots are the credits we start with. */
  void peerRing(Wire.Ring peer) {
    if (peerFirstSlotSize == 0) { // what its first ring says holds for the connection's life
      peerFirstSlotSize = peer.slotSize();
      peerTakesBatches = peer.takesBatches();
    }
    peerRing = peer.address();
    peerRkey = peer.rkey();
    peerSlots = peer.slots();
    peerSlotSize = peer.slotSize();
    credits = peerSlots;
    ringWrites = 0;
  }

  /**
   * The peer replaces its ring (its RING, checked already): nothing more is written until our
   * RING_ACK is posted ({@link #ringAcknowledged}), after our last write into the old ring.
   */
  void peerReplacesRing(Wire.Ring next) {
    pendingRing = next;
  }

  /** Whether a RING_ACK is due. */
  boolean ringAckDue() {
    return pendingRing != null;
  }

  /** Our RING_ACK is posted: writes go to the new ring, slot 0 first, a credit for each slot. */
  void ringAcknowledged() {
    peerRing(pendingRing);
    pendingRing = null;
  }

  int peerSlotSize() {
    return peerSlotSize;
  }

  /** The slots of the peer's ring our writes go to now: the most credits we may hold. */
  int peerSlots() {
    return peerSlots;
  }

  /** The slot size of the peer's first ring: no ring of an honest peer's has smaller slots. */
  int peerFirstSlotSize() {
    return peerFirstSlotSize;
  }

  /** Whether the peer's first ring said it takes BATCH writes. */
  boolean peerTakesBatches() {
    return peerTakesBatches;
  }

  /** Writes posted so far, data and RINGs. */
  long writes() {
    return writes;
  }

  /** {@link #writes} as it was after our last data write: RINGs since carry no element. */
  long writesThroughData() {
    return writesThroughData;
  }

  /** Send-queue entries not yet retired by a completion. */
  int outstanding() {
    return outstanding;
  }

  /**
   * Whether a data write may go now: a credit and a send-queue entry outside the reserve, and
   * no RING_ACK due.
   */
  boolean mayWrite() {
    return credits > 0 && outstanding < sqDepth - CONTROL_RESERVE && pendingRing == null;
  }

  /** Whether a control message fits in the send queue now. */
  boolean mayControl() {
    return outstanding < sqDepth;
  }

  /** Whether the peer has taken and credited back every write of ours: it waits for us. */
  boolean peerCaughtUp() {
    return credits == peerSlots && pendingRing == null;
  }

  /** Slots the peer freed, returned in one of its messages. */
  void credited(int slots) {
    credits += slots;
  }

  int credits() {
    return credits;
  }

  /** A free send buffer's id, or -1 when all are in flight. */
  int takeBuffer() {
    return buffers.take();
  }

  /** A buffer taken but not posted. */
  void giveBack(int buffer) {
    buffers.giveBack(buffer);
  }

  /** Where a write's bytes are taken from. */
  enum WriteSource {
    /** Copied into the work request (IBV_SEND_INLINE), from scratch memory: no buffer. */
    INLINE,
    /** Read by the device from a registered send buffer. */
    SEND_BUFFER
  }

  /** Whether a post asks for its completion. */
  enum Signaling {
    /** When signal-every, a nearly full send queue or the last free buffer says so. */
    AS_DUE,
    /** Always: its wr_id is then {@link #lastWrId}, and {@link #completedUpTo} tells when. */
    ALWAYS
  }

  /**
   * Posts an RDMA WRITE WITH IMM of {@code length} bytes at {@code address} (a send buffer's,
   * {@code buffer}, or inline from scratch memory with buffer -1) into the peer's next slot,
   * taking a credit. A failed post gives the buffer back and throws.
   */
  void write(long address, int length, int lkey, int imm, int buffer, WriteSource source) {
    write(address, length, lkey, imm, buffer, source, Signaling.AS_DUE);
  }

  /** {@link #write}, signalled as {@code signaling} says. */
  void write(long address, int length, int lkey, int imm, int buffer, WriteSource source,
      Signaling signaling) {
    long slot = ringWrites % peerSlots;
    post(WrOpcode.RDMA_WRITE_WITH_IMM, address, length, lkey, peerRing + slot * peerSlotSize,
        imm, buffer, source, signaling);
    writes++;
    if (Wire.kind(imm) != Wire.CONTROL) writesThroughData = writes;
    ringWrites++;
    credits--;
    buffers.wrote(length);
  }

  /** Posts a control message, signalled. */
  void control(int imm) {
    post(WrOpcode.SEND_WITH_IMM, 0, 0, 0, 0, imm, -1, WriteSource.SEND_BUFFER,
        Signaling.ALWAYS);
  }

  private void post(WrOpcode opcode, long address, int length, int lkey, long remoteAddress,
      int imm, int buffer, WriteSource source, Signaling signaling) {
    boolean control = opcode == WrOpcode.SEND_WITH_IMM;
    boolean signal = signaling == Signaling.ALWAYS || ++unsignaled >= signalEvery
        || outstanding + 1 >= sqDepth - CONTROL_RESERVE
        || (buffer >= 0 && buffers.noneFree());
    if (signal) unsignaled = 0;
    long wrId = nextWrId;
    wr.clear();
    wr.add(wrId, opcode, (signal ? SendRequests.SIGNALED : 0)
        | (source == WriteSource.INLINE ? SendRequests.INLINE : 0));
    if (length > 0 || !control) wr.sge(address, length, lkey);
    if (opcode == WrOpcode.RDMA_WRITE_WITH_IMM) wr.rdma(remoteAddress, peerRkey);
    wr.immediate(imm);
    try {
      qp.postSend(wr);
    } catch (RuntimeException e) {
      if (buffer >= 0) giveBack(buffer);
      throw new PostFailed(opcode, e);
    }
    bufferOf[(int) (wrId % sqDepth)] = buffer;
    nextWrId++;
    outstanding++;
  }

  /**
   * Asks for a completion of what went unsignalled, so that its buffers come back: a zero-length
   * RDMA WRITE, signalled, which the peer never hears of (no immediate: no receive, no memory
   * touched). Nothing when nothing is unsignalled or the send queue is full.
   */
  void flushUnsignaled() {
    if (unsignaled == 0 || outstanding >= sqDepth || peerSlots == 0) return;
    unsignaled = 0;
    long wrId = nextWrId;
    wr.clear();
    wr.add(wrId, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED);
    wr.rdma(peerRing, peerRkey);
    try {
      qp.postSend(wr);
    } catch (RuntimeException e) {
      throw new PostFailed(WrOpcode.RDMA_WRITE, e);
    }
    bufferOf[(int) (wrId % sqDepth)] = -1;
    nextWrId++;
    outstanding++;
  }

  /** The wr_id of the latest send posted. */
  long lastWrId() {
    return nextWrId - 1;
  }

  /** Whether the send {@code wrId} has completed. */
  boolean completedUpTo(long wrId) {
    return wrId < oldestWrId;
  }

  /** A send's completion: it and every unsignalled send before it are done with their buffers. */
  void completed(long wrId) {
    for (long k = oldestWrId; k <= wrId; k++) {
      int buffer = bufferOf[(int) (k % sqDepth)];
      if (buffer >= 0) buffers.giveBack(buffer);
      outstanding--;
    }
    if (wrId >= oldestWrId) oldestWrId = wrId + 1;
  }

  /** Posting refused by verbs. */
  static final class PostFailed extends RuntimeException {
    PostFailed(WrOpcode opcode, RuntimeException cause) {
      super("posting a " + opcode + " failed: " + cause.getMessage(), cause);
    }

    PostFailed(String why) {
      super(why);
    }
  }
}

package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.runtime.RegisteredMemoryExhaustedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What each message that passed the checks means for the receive side, and rings replaced while
 * a connection runs ({@link Wire}'s RING and RING_ACK), both ways: ours, when {@link RingSizing}
 * says so and the budget has room, and the peer's, which our writes follow once our RING_ACK is
 * posted. Used on the stage's thread.
 */
final class RingExchange {
  private static final Logger log = LoggerFactory.getLogger(RingExchange.class);

  private final ConnectionResources res;
  private final Receiver receiver;
  private final Sender sender;
  private final ProtocolValidator rules;
  private final ElementWriter writer;
  private final RingSizing sizing; // null: our ring stays as it is
  private final String peer;

  RingExchange(ConnectionResources res, Receiver receiver, Sender sender, ProtocolValidator rules,
      ElementWriter writer, RingSizing sizing, String peer) {
    this.res = res;
    this.receiver = receiver;
    this.sender = sender;
    this.rules = rules;
    this.writer = writer;
    this.sizing = sizing;
    this.peer = peer;
  }

  private static final String OVERRUN = "the peer wrote more messages than it had credits";

  /**
   * A message of {@code kind} ({@code code} for control, else -1) and {@code length} bytes, its
   * checks passed: queued for downstream, or acted on. Null, or what is wrong with it.
   */
  String received(int kind, int code, int length) {
    if (code == Wire.FIN) return receiver.finArrived() ? null : OVERRUN;
    if (code == Wire.RING_ACK) {
      receiver.peerAcked();
      return null;
    }
    if (code == Wire.RING) {
      long at = receiver.arrived(Wire.Ring.LENGTH, Arrivals.SKIP);
      return at < 0 ? OVERRUN : peerRing(at);
    }
    if (kind == Wire.CONTROL) return null;
    boolean more = kind == Wire.MORE;
    byte as = more ? Arrivals.MORE : kind == Wire.BATCH ? Arrivals.BATCH : Arrivals.END;
    if (receiver.arrived(length, as) < 0) return OVERRUN;
    arrived(length, more);
    return null;
  }

  /** A data write arrived into our ring: {@code length} bytes, more of its message to come. */
  private void arrived(int length, boolean more) {
    if (sizing == null) return;
    Receiver.Slots w = receiver.writerRing();
    sizing.arrived(length, more, w.count(), w.size(), receiver.arrivals.size());
  }

  /**
   * The peer's RING landed at {@code address} in our ring: our writes go to the ring it
   * describes once our RING_ACK is posted. Null, or what is wrong with it.
   */
  private String peerRing(long address) {
    byte[] b = new byte[Wire.Ring.LENGTH];
    NativeMemory.copyToArray(address, b, 0, b.length);
    try {
      sender.peerReplacesRing(Wire.Ring.decode(b));
      return null;
    } catch (IllegalArgumentException e) {
      return "its RING: " + e.getMessage();
    }
  }

  /** Our RING_ACK is posted: what we write goes to the peer's new ring. */
  void acknowledged() {
    sender.ringAcknowledged();
    rules.acknowledgedPeerRing(sender.writes());
  }

  /** Our send buffers follow what we send: the large area while busy (see SendBuffers). */
  void resizeSend(boolean tick) {
    res.send.resize(tick);
    // writes left unsignalled would hold the large area's buffers for good
    if (tick && res.send.retiring()) sender.flushUnsignaled();
  }

  /** Whether anything is large, so that a tick may find it idle and shrink it. */
  boolean anyLarge() {
    return sizing != null && (sizing.atLarge() || res.send.large());
  }

  /**
   * Announces a new ring of ours when one is due ({@code tick}: the shrink timer fired), a write
   * can carry the RING now, and no replacement is under way; a larger one only while
   * {@code reading} (more data may come, and downstream wants it).
   */
  void maybeAnnounce(boolean tick, boolean reading) {
    if (sizing == null) return;
    RingSizing.Plan p = sizing.due(tick, receiver.taken());
    if (p == null || (p.large() && !reading) || receiver.replacing() || !sender.mayWrite()) {
      return;
    }
    ConnectionResources.ReceiveRing next;
    try {
      next = res.openRing(p.count(), p.size());
    } catch (RegisteredMemoryExhaustedException e) {
      log.debug("{}: the receive ring stays as it is: {}", peer, e.getMessage());
      sizing.refused(p);
      return;
    }
    Wire.Ring d = next.describe(res.ringFlags);
    if (!writer.writeRing(d.encode(), Wire.control(Wire.RING, 0))) {
      res.closeRing(next.slots());
      return;
    }
    rules.announced(d);
    receiver.announce(next.slots());
    sizing.announced(p);
  }
}

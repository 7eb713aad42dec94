package dev.pekkordma.cluster;

import dev.pekkordma.verbs.WcStatus;
import java.nio.ByteBuffer;
import org.apache.pekko.actor.Address;
import org.slf4j.Logger;

/**
 * A link's receive path: what arrived in a receive is checked in full ({@link Frames#read}), held
 * to the credits this member granted ({@link Credits#arrived}), and only then is a data frame's
 * message handed to its channel. A frame that breaks the wire protocol throws {@link
 * ProtocolViolation}, and the link stops taking anything of that connection. A well-formed
 * message the application cannot take (no such channel, no subscriber, it does not decode) is
 * dropped and logged naming the member and why: the first few on each connection, then one in
 * {@link #THEN_EVERY}, so that a flood of them cannot flood the log.
 */
final class Inbound {
  static final int LOGGED = 8;
  static final int THEN_EVERY = 1024;

  private final Address member;
  private final Channels channels;
  private final Logger log;
  private long refused;

  Inbound(Address member, Channels channels, Logger log) {
    this.member = member;
    this.channels = channels;
    this.log = log;
  }

  /** A new connection: its refusals are counted afresh. */
  void connected() {
    refused = 0;
  }

  /**
   * Takes the frame of {@code length} bytes at the start of {@code receive}, a view of the whole
   * receive buffer.
   */
  void accept(ByteBuffer receive, int length, Credits flow) throws ProtocolViolation {
    Frames.ArrivedFrame f = Frames.read(receive, length);
    flow.arrived(f.kind() == Frames.DATA, f.grant());
    if (f.kind() != Frames.DATA) return;
    String why = channels.deliver(f.channel(), member, f.message());
    if (why != null && (++refused <= LOGGED || refused % THEN_EVERY == 0)) {
      log.warn("{}; dropped{}", why, refused > LOGGED ? " (" + refused + " refused on this "
          + "connection so far)" : "");
    }
  }

  /**
   * Why a connection's QP went to ERR with every request flushed, this side not having ended it
   * nor the peer disconnected: the QP actor reports work outstanding as flushed when the QP
   * enters ERR, which can hide the real first error, such as a receive a frame overran.
   */
  static String unasked(int capacity) {
    return "its QP went to the error state unasked, and the peer did not disconnect (it may "
        + "have sent a frame larger than the " + capacity + "-byte receive buffers, or tried a "
        + "one-sided operation)";
  }

  /**
   * What the peer broke when one of this side's receives completed with {@code status}, or null
   * when the status does not say the peer's frame was at fault.
   */
  static String failedReceive(WcStatus status, int capacity) {
    return status != WcStatus.LOC_LEN_ERR ? null : "a frame longer than the " + capacity
        + "-byte receive buffer (its receive completed " + status + ")";
  }
}

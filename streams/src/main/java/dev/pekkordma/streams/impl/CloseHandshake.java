package dev.pekkordma.streams.impl;

/**
 * How a connection closes gracefully, one explicit state per direction. Ours: our FIN goes
 * after our last write, and the peer's FIN_ACK says its application took everything before it.
 * Theirs: the peer's FIN arrives, our application takes everything before it, and then our
 * FIN_ACK goes. Beside them, a CANCEL: our application stopped reading before the peer's end,
 * which the peer hears, with how many of its writes were taken whole.
 */
final class CloseHandshake {
  /** Our direction. */
  enum Ours { OPEN, FIN_SENT, FIN_ACKED }

  /** The peer's direction. */
  enum Theirs { OPEN, FIN_RECEIVED, FIN_ACK_DUE, FIN_ACK_SENT }

  /** Our application's reading. */
  enum Reading { READING, CANCEL_DUE, CANCEL_SENT }

  /** A control message to send now. */
  enum Control { CANCEL, FIN_ACK, FIN, CREDIT, NONE }

  private Ours ours = Ours.OPEN;
  private Theirs theirs = Theirs.OPEN;
  private Reading reading = Reading.READING;
  private long takenAtCancel;
  private boolean peerCancelled;

  Ours ours() {
    return ours;
  }

  Theirs theirs() {
    return theirs;
  }

  Reading reading() {
    return reading;
  }

  long takenAtCancel() {
    return takenAtCancel;
  }

  /** The peer's FIN arrived; its FIN_ACK is due once our application has taken all before it. */
  void peerFin() {
    if (theirs == Theirs.OPEN) theirs = Theirs.FIN_RECEIVED;
  }

  /** Our application asked past the peer's FIN: everything before it is taken. */
  void taken() {
    if (theirs == Theirs.FIN_RECEIVED) theirs = Theirs.FIN_ACK_DUE;
  }

  void finAcked() {
    ours = Ours.FIN_ACKED;
  }

  /**
   * Our application stopped reading. Unless the peer's end is here already (its FIN is the one
   * arrival left and nothing is half put together), the peer hears a CANCEL naming {@code
   * takenWhole}, the writes taken.
   */
  void stopReading(int arrivalsLeft, boolean partial, long takenWhole) {
    if (theirs == Theirs.FIN_ACK_SENT) return;
    if (theirs != Theirs.OPEN && arrivalsLeft <= 1 && !partial) return;
    reading = Reading.CANCEL_DUE;
    takenAtCancel = takenWhole;
  }

  /**
   * The peer's CANCEL: its application took {@code taken} of our {@code ourWrites} writes (modulo
   * 2^24). Null when nothing was lost, else the failure: writes dropped, or an element ({@code
   * busy}) still to send.
   */
  String peerCancelled(long ourWrites, int taken, boolean busy) {
    peerCancelled = true;
    long dropped = (ourWrites - taken) & Wire.CREDIT_MASK;
    if (dropped == 0 && !busy) return null;
    return "the peer stopped reading (its stream was cancelled) with " + dropped
        + " of our writes not taken" + (busy ? " and an element still to send" : "");
  }

  boolean hasPeerCancelled() {
    return peerCancelled;
  }

  /**
   * The next control message to send, given room in the send queue ({@code room}), whether our
   * data has all gone ({@code dataDone}), whether a lent ring is all back ({@code lentReturned})
   * and whether enough credits are owed to be worth a message. Call {@link #sent} after posting.
   */
  Control next(boolean room, boolean dataDone, boolean lentReturned, boolean creditsDue) {
    if (!room) return Control.NONE;
    if (reading == Reading.CANCEL_DUE) return Control.CANCEL;
    if (theirs == Theirs.FIN_ACK_DUE && lentReturned) return Control.FIN_ACK;
    if (dataDone && ours == Ours.OPEN) return Control.FIN;
    if (creditsDue && theirs != Theirs.FIN_ACK_SENT && reading != Reading.CANCEL_SENT) {
      return Control.CREDIT;
    }
    return Control.NONE;
  }

  void sent(Control c) {
    switch (c) {
      case CANCEL -> reading = Reading.CANCEL_SENT;
      case FIN_ACK -> theirs = Theirs.FIN_ACK_SENT;
      case FIN -> ours = Ours.FIN_SENT;
      default -> { }
    }
  }

  /**
   * Whether the connection is done: our FIN acknowledged with nothing in flight, and the peer's
   * direction closed too (or no longer wanted: no half-close, or our application stopped reading
   * without a CANCEL being needed).
   */
  boolean done(int inFlight, boolean halfClose, boolean downstreamCancelled) {
    if (ours != Ours.FIN_ACKED || inFlight != 0) return false;
    if (theirs == Theirs.FIN_ACK_SENT) return true;
    return (!halfClose || downstreamCancelled) && reading != Reading.CANCEL_SENT;
  }

  /**
   * The peer went (DISCONNECTED, or the QP flushed): null when that is how this connection ends
   * well, else why it is a failure, {@code reason} saying how it went.
   */
  String whenPeerGone(String reason, int arrivalsLeft, boolean sending, long messagesSent) {
    if (reading == Reading.CANCEL_SENT) {
      // we stopped reading and said so: the peer ending is expected; lost is only ours
      return !sending && (messagesSent == 0 || ours == Ours.FIN_ACKED) ? null
          : reason + " after we stopped reading, before it had taken all we sent";
    }
    if (theirs == Theirs.FIN_ACK_SENT && arrivalsLeft == 0) {
      return ours != Ours.FIN_SENT ? null
          : "the peer closed the connection before acknowledging our last messages";
    }
    return reason + " without closing the stream";
  }

  @Override
  public String toString() {
    return "ours=" + ours + " theirs=" + theirs + " reading=" + reading;
  }
}

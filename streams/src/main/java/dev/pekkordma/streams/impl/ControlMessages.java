package dev.pekkordma.streams.impl;

/**
 * What a connection says besides data, each when it is due and the send queue has room: the
 * RING_ACK of the peer's new ring (before any write into it), then CANCEL, FIN_ACK, FIN and
 * credits as the {@link CloseHandshake} and the {@link Receiver} say. Every message, data or
 * control, carries the credits owed ({@link #takeCredits}). Used on the stage's thread.
 */
final class ControlMessages {
  private final Sender sender;
  private final Receiver receiver;
  private final ProtocolValidator rules;
  private final CloseHandshake close;
  private final RingExchange rings;

  ControlMessages(Sender sender, Receiver receiver, ProtocolValidator rules, CloseHandshake close,
      RingExchange rings) {
    this.sender = sender;
    this.receiver = receiver;
    this.rules = rules;
    this.close = close;
    this.rings = rings;
  }

  /** The credits owed, for the next message to carry: the peer may write that many more. */
  int takeCredits() {
    int c = receiver.takeCredits();
    rules.sentCredits(c);
    return c;
  }

  /**
   * Posts what is due; {@code finMayGo}: nothing more of ours is to be written. A failed post
   * throws ({@link Sender.PostFailed}).
   */
  void sendDue(boolean finMayGo) {
    if (sender.ringAckDue() && sender.mayControl()) { // before any write into its new ring
      post(Wire.RING_ACK, takeCredits());
      rings.acknowledged();
    }
    CloseHandshake.Control c;
    // a lent ring's buffers count as taken once released
    while ((c = close.next(sender.mayControl(), finMayGo,
        receiver.lent() == null || receiver.lent().allReturned(),
        receiver.creditsOwed() >= receiver.creditThreshold())) != CloseHandshake.Control.NONE) {
      switch (c) {
        case CANCEL -> post(Wire.CANCEL, (int) (close.takenAtCancel() & Wire.CREDIT_MASK));
        case FIN_ACK -> post(Wire.FIN_ACK, takeCredits());
        case FIN -> {
          post(Wire.FIN, takeCredits());
          rules.sentFin();
        }
        default -> post(Wire.CREDIT, takeCredits());
      }
      close.sent(c);
    }
  }

  private void post(int code, int field) {
    sender.control(Wire.control(code, field));
  }
}

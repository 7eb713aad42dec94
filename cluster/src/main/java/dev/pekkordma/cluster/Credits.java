package dev.pekkordma.cluster;

/**
 * Credit-based flow control for RDMA SEND: a send needs a receive posted on the other side, or
 * the peer's NIC answers RNR and the sender retries in the dark. Each side posts its receives,
 * then grants them; every frame (data or credit) carries the receives re-posted since the last
 * grant, and consumes one of the peer's.
 *
 * <p>The first frame each side sends (the hello, granting all but one of its receives) rides on
 * one implicit credit, relying on RNR retry for the moment before the peer's receives are posted.
 * Data keeps the last credit in reserve so that a credit frame can always go; a credit frame goes
 * once the receives owed reach half the depth. Neither side can then wait on the other forever:
 * a side with nothing left holds back all of the other's receives, which owes it at least that
 * many, at least half, and has the reserve to say so.
 *
 * <p>The peer is held to the same rules ({@link #arrived}): this side counts what it granted, so
 * it knows an upper bound of the peer's credit when each frame was sent, and a peer's grants can
 * never add up past the receives a member may keep posted.
 */
final class Credits {
  /** The most credits a peer can have granted and this side not used. */
  static final int MAX = ClusterSettings.MAX_RECEIVE_DEPTH;

  private final int threshold;
  private int available = 1; // the hello's
  private int owed;
  /** Frames the peer may still send: its hello's, plus this side's grants, less what came. */
  private int allowance = 1;

  /** After posting {@code posted} receives (at least 2). */
  Credits(int posted) {
    if (posted < 2) throw new IllegalArgumentException("needs 2 receives, has " + posted);
    threshold = Math.max(1, posted / 2);
    owed = posted - 1; // the hello grants all but the receive the peer's hello takes
  }

  /** Credits the peer has granted and this side has not used. */
  int available() {
    return available;
  }

  /** Receives re-posted and not granted yet. */
  int owed() {
    return owed;
  }

  /** Frames the peer may send before it hears of another grant. */
  int allowance() {
    return allowance;
  }

  boolean canSendData() {
    return available >= 2;
  }

  boolean shouldSendCredit() {
    return owed >= threshold && available >= 1;
  }

  /** Uses a credit for a frame; returns the grant it carries. */
  int take() {
    if (available < 1) throw new IllegalStateException("no credit");
    available--;
    int grant = owed;
    owed = 0;
    allowance += grant; // at most the receives posted: no overflow
    return grant;
  }

  /**
   * A frame of the peer arrived: it must have been within the credit this side gave (data within
   * all but the last), and its grant must keep the peer's credits within what any member can
   * have posted. Nothing changes when it was not.
   */
  void arrived(boolean data, int grant) throws ProtocolViolation {
    if (allowance < (data ? 2 : 1)) {
      throw new ProtocolViolation((data ? "a data frame" : "a credit frame")
          + " sent beyond the credits granted to it (" + allowance + " left of what this member "
          + "granted" + (data ? "; data must leave the last for a credit frame)" : ")"));
    }
    if (grant < 0 || grant > MAX - available) {
      throw new ProtocolViolation("a frame grants " + grant + " credits on top of " + available
          + " unused: more than the " + MAX + " receives a member can have posted");
    }
    allowance--;
    available += grant;
  }

  void reposted(int n) {
    owed += n;
  }
}

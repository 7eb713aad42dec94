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
 */
final class Credits {
  private final int threshold;
  private int available = 1; // the hello's
  private int owed;

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
    return grant;
  }

  void granted(int n) {
    available += n;
  }

  void reposted(int n) {
    owed += n;
  }
}

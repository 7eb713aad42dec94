package dev.pekkordma.cluster;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Connection requests from members whose endpoint has not reached this one yet, held until it
 * does or they time out. Anyone who reaches the CM port can send one, naming any uid in its
 * hello, so they are bounded: {@link #MAX} in all and {@link #PER_MEMBER} naming one uid; one
 * more is refused, saying why.
 */
final class PendingRequests<C> {
  /** Many more members than this joining at the very same moment have some of theirs retried. */
  static final int MAX = 64;
  static final int PER_MEMBER = 2;

  private final Map<Long, List<C>> byUid = new HashMap<>();
  private int held;
  private long refused;

  /** Holds {@code request}; returns null, or why it is not held. */
  String hold(long uid, C request) {
    List<C> same = byUid.get(uid);
    String why = held >= MAX ? held + " connection requests of members whose endpoint is not "
        + "known here are waiting already"
        : same != null && same.size() >= PER_MEMBER ? same.size() + " connection requests "
        + "naming uid " + uid + " are waiting already" : null;
    if (why != null) {
      refused++;
      return why;
    }
    byUid.computeIfAbsent(uid, u -> new ArrayList<>()).add(request);
    held++;
    return null;
  }

  /** The requests naming {@code uid}, no longer held. */
  List<C> take(long uid) {
    List<C> all = byUid.remove(uid);
    if (all == null) return List.of();
    held -= all.size();
    return all;
  }

  /** Whether {@code request} was held; it no longer is. */
  boolean expire(long uid, C request) {
    List<C> same = byUid.get(uid);
    if (same == null || !same.remove(request)) return false;
    if (same.isEmpty()) byUid.remove(uid);
    held--;
    return true;
  }

  int held() {
    return held;
  }

  /** Requests refused so far. */
  long refused() {
    return refused;
  }

  /** A flood is logged at counts 1, 2, 4, 8...: enough to see it, not a line a request. */
  static boolean worthLogging(long count) {
    return Long.bitCount(count) == 1;
  }
}

package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.util.List;
import org.junit.jupiter.api.Test;

/** Requests naming members not known yet: bounded in all and per uid, and counted exactly. */
class PendingRequestsTest {
  @Test
  void oneUidHoldsAtMostTwoAndAllAtMostMax() {
    PendingRequests<String> p = new PendingRequests<>();
    assertNull(p.hold(7, "a"));
    assertNull(p.hold(7, "b"));
    String why = p.hold(7, "c");
    assertTrue(why != null && why.contains("uid 7"), why);
    for (int i = 2; i < PendingRequests.MAX; i++) assertNull(p.hold(100 + i, "r" + i));
    assertEquals(PendingRequests.MAX, p.held());
    why = p.hold(1, "one more");
    assertTrue(why != null && why.contains(PendingRequests.MAX + " connection requests"), why);
    assertEquals(2, p.refused());
    assertEquals(List.of("a", "b"), p.take(7));
    assertTrue(p.expire(102, "r2"));
    assertFalse(p.expire(102, "r2"), "once");
    assertEquals(PendingRequests.MAX - 3, p.held());
    assertNull(p.hold(1, "now there is room"));
  }

  @Test
  void aFloodIsLoggedAtPowersOfTwo() {
    assertTrue(PendingRequests.worthLogging(1));
    assertTrue(PendingRequests.worthLogging(64));
    assertFalse(PendingRequests.worthLogging(3));
    assertFalse(PendingRequests.worthLogging(0));
  }
}

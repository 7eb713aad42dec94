package dev.pekkordma.runtime.internal.datagram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.net.InetSocketAddress;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Routes age out after the TTL (a group's do not) and the least recently used go past max. */
class PeerRoutesTest {
  static final InetSocketAddress A = new InetSocketAddress("127.0.0.1", 1001);
  static final InetSocketAddress B = new InetSocketAddress("127.0.0.1", 1002);
  static final InetSocketAddress C = new InetSocketAddress("127.0.0.1", 1003);
  static final InetSocketAddress GROUP = new InetSocketAddress("239.1.2.3", 1004);
  long now = 1_000;
  final PeerRoutes<String> routes = new PeerRoutes<>(2, Duration.ofNanos(100), () -> now);

  @Test
  void aRouteLastsItsTtlThenTheNextSendResolvesAgain() {
    routes.put(A, "a");
    now += 99;
    assertEquals("a", routes.get(A));
    now += 1;
    assertNull(routes.get(A), "older than the TTL");
    assertEquals(0, routes.size(), "and gone");
    routes.put(A, "a again"); // resolved afresh: a new TTL
    now += 50;
    assertEquals("a again", routes.get(A));
  }

  @Test
  void aGroupsRouteDoesNotAge() {
    routes.putLasting(GROUP, "group");
    now += 1_000_000_000L;
    assertEquals("group", routes.get(GROUP));
  }

  @Test
  void theLeastRecentlyUsedGoesPastMax() {
    routes.put(A, "a");
    routes.put(B, "b");
    routes.get(A); // B is now the least recently used
    routes.put(C, "c");
    assertNull(routes.get(B));
    assertEquals("a", routes.get(A));
    assertEquals("c", routes.get(C));
  }

  @Test
  void boundsAreChecked() {
    assertThrows(IllegalArgumentException.class, () -> new PeerRoutes<>(0, Duration.ofSeconds(1)));
    assertThrows(IllegalArgumentException.class, () -> new PeerRoutes<>(1, Duration.ZERO));
  }
}

package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayDeque;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The credit scheme between two simulated sides, under random schedules: a frame never arrives
 * where no receive is posted (but for each hello, which RNR retry covers), whatever data is
 * offered is all sent (nobody waits forever on credit), and the receiving side's check of the
 * peer's credits never takes a well-behaved peer for a violator.
 */
class CreditsTest {
  /** One side: its receives posted, its credit, frames on the way to it. */
  private static final class Side {
    final Credits credits;
    int posted;
    int consumed; // receives that took a frame and are not re-posted yet
    int dataToSend;
    final ArrayDeque<int[]> incoming = new ArrayDeque<>(); // {data?, grant} on the way here

    Side(int depth) {
      posted = depth;
      credits = new Credits(depth);
    }
  }

  @Test
  void randomSchedulesNeverOverrunAndNeverStall() throws ProtocolViolation {
    Random random = new Random(42);
    for (int run = 0; run < 500; run++) {
      Side a = new Side(2 + random.nextInt(15));
      Side b = new Side(2 + random.nextInt(15));
      a.dataToSend = random.nextInt(200);
      b.dataToSend = random.nextInt(200);
      for (int step = 0; step < 200_000; step++) {
        Side one = random.nextBoolean() ? a : b;
        Side other = one == a ? b : a;
        switch (random.nextInt(3)) {
          case 0 -> { // one sends what it may: data, else a credit frame
            if (one.dataToSend > 0 && one.credits.canSendData()) {
              other.incoming.add(new int[] {1, one.credits.take()});
              one.dataToSend--;
            } else if (one.credits.shouldSendCredit()) {
              other.incoming.add(new int[] {0, one.credits.take()});
            }
          }
          case 1 -> { // a frame arrives at one: it takes a receive
            if (!one.incoming.isEmpty()) {
              assertTrue(one.posted > 0, "run " + run + ": a frame found no receive posted");
              one.posted--;
              one.consumed++;
              int[] f = one.incoming.poll();
              one.credits.arrived(f[0] == 1, f[1]); // throws on a false violation
            }
          }
          default -> { // one's application has taken a message: its receive goes back
            if (one.consumed > 0) {
              one.consumed--;
              one.posted++;
              one.credits.reposted(1);
            }
          }
        }
        if (a.dataToSend == 0 && b.dataToSend == 0) break;
      }
      assertEquals(0, a.dataToSend, "run " + run + ": a stalled with credit "
          + a.credits.available());
      assertEquals(0, b.dataToSend, "run " + run + ": b stalled with credit "
          + b.credits.available());
    }
  }

  @Test
  void creditsAreCountedExactly() throws ProtocolViolation {
    Credits c = new Credits(8);
    assertEquals(1, c.available()); // the hello's
    assertEquals(7, c.owed()); // the hello grants all but the receive the peer's hello takes
    assertFalse(c.canSendData());
    assertTrue(c.shouldSendCredit());
    assertEquals(1, c.allowance()); // the peer's hello
    assertEquals(7, c.take());
    assertEquals(8, c.allowance());
    assertEquals(0, c.available());
    assertThrows(IllegalStateException.class, c::take);
    c.arrived(false, 7); // the peer's hello
    assertEquals(7, c.allowance());
    assertTrue(c.canSendData());
    c.reposted(3);
    assertFalse(c.shouldSendCredit(), "3 owed is below half of 8");
    c.reposted(1);
    assertTrue(c.shouldSendCredit());
    assertThrows(IllegalArgumentException.class, () -> new Credits(1));
  }

  @Test
  void thePeerIsHeldToItsCreditsAndItsGrantsToWhatAnyMemberCanPost() throws ProtocolViolation {
    Credits c = new Credits(4);
    c.take(); // this side's hello grants 3: the peer may send 4 frames in all
    c.arrived(false, 0);
    c.arrived(true, 0);
    c.arrived(true, 0);
    assertEquals(1, c.allowance());
    String why = assertThrows(ProtocolViolation.class, () -> c.arrived(true, 0)).getMessage();
    assertTrue(why.contains("beyond the credits") && why.contains("last"), why);
    assertEquals(1, c.allowance(), "nothing counted for a refused frame");
    c.arrived(false, Credits.MAX); // its last credit, on a credit frame granting the most
    assertEquals(Credits.MAX, c.available());
    why = assertThrows(ProtocolViolation.class, () -> c.arrived(false, 1)).getMessage();
    assertTrue(why.contains("beyond the credits"), why);
    c.reposted(2);
    c.take();
    why = assertThrows(ProtocolViolation.class, () -> c.arrived(false, 2)).getMessage();
    assertTrue(why.contains("more than the " + Credits.MAX), why);
    assertEquals(Credits.MAX - 1, c.available(), "an overflowing grant is not added");
    c.arrived(false, 1);
    assertEquals(Credits.MAX, c.available());
  }
}

package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.util.ArrayDeque;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The credit scheme between two simulated sides, under random schedules: a frame never arrives
 * where no receive is posted (but for each hello, which RNR retry covers), and whatever data is
 * offered is all sent: nobody waits forever on credit.
 */
class CreditsTest {
  /** One side: its receives posted, its credit, frames on the way to it. */
  private static final class Side {
    final Credits credits;
    int posted;
    int consumed; // receives that took a frame and are not re-posted yet
    int dataToSend;
    final ArrayDeque<Integer> incoming = new ArrayDeque<>(); // grants of frames on the way here

    Side(int depth) {
      posted = depth;
      credits = new Credits(depth);
    }
  }

  @Test
  void randomSchedulesNeverOverrunAndNeverStall() {
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
              other.incoming.add(one.credits.take());
              one.dataToSend--;
            } else if (one.credits.shouldSendCredit()) {
              other.incoming.add(one.credits.take());
            }
          }
          case 1 -> { // a frame arrives at one: it takes a receive
            if (!one.incoming.isEmpty()) {
              assertTrue(one.posted > 0, "run " + run + ": a frame found no receive posted");
              one.posted--;
              one.consumed++;
              one.credits.granted(one.incoming.poll());
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
  void creditsAreCountedExactly() {
    Credits c = new Credits(8);
    assertEquals(1, c.available()); // the hello's
    assertEquals(7, c.owed()); // the hello grants all but the receive the peer's hello takes
    assertFalse(c.canSendData());
    assertTrue(c.shouldSendCredit());
    assertEquals(7, c.take());
    assertEquals(0, c.available());
    assertThrows(IllegalStateException.class, c::take);
    c.granted(7);
    assertTrue(c.canSendData());
    c.reposted(3);
    assertFalse(c.shouldSendCredit(), "3 owed is below half of 8");
    c.reposted(1);
    assertTrue(c.shouldSendCredit());
    assertThrows(IllegalArgumentException.class, () -> new Credits(1));
  }
}

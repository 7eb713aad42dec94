package dev.pekkordma.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class MemoryBudgetTest {
  @Test
  void aReservationPastTheLimitIsRefusedNamingTheSettingAndTheNumbers() {
    MemoryBudget b = new MemoryBudget(1000);
    MemoryBudget.Reservation r = b.reserve(600, "a ring", "x.receive-buffers");
    RegisteredMemoryExhaustedException e = assertThrows(RegisteredMemoryExhaustedException.class,
        () -> b.reserve(401, "another ring", "x.receive-buffers"));
    assertTrue(e.getMessage().contains(MemoryBudget.SETTING) && e.getMessage().contains("401")
        && e.getMessage().contains("600 of the 1000") && e.getMessage().contains("another ring")
        && e.getMessage().contains("x.receive-buffers"), e.getMessage());
    assertEquals(600, b.used(), "a refusal takes nothing");
    b.reserve(400, "the rest", "-").close();
    r.close();
    r.close();
    assertEquals(0, b.used(), "closing twice gives back once");
  }

  @Property(tries = 200)
  void whateverTheOrderNothingIsLostAndTheLimitHolds(
      @ForAll @Size(max = 40) List<@IntRange(max = 300) Integer> sizes,
      @ForAll @IntRange(min = 1, max = 2000) int limit) {
    MemoryBudget b = new MemoryBudget(limit);
    List<MemoryBudget.Reservation> held = new ArrayList<>();
    long sum = 0;
    for (int size : sizes) {
      if (sum + size <= limit) {
        held.add(b.reserve(size, "p", "-"));
        sum += size;
      } else {
        assertThrows(RegisteredMemoryExhaustedException.class, () -> b.reserve(size, "p", "-"));
      }
      assertEquals(sum, b.used());
      if (size % 3 == 0 && !held.isEmpty()) {
        MemoryBudget.Reservation r = held.remove(held.size() / 2);
        r.close();
        sum -= r.bytes();
      }
    }
    held.forEach(MemoryBudget.Reservation::close);
    assertEquals(0, b.used());
  }

  @Test
  void threadsRacingForTheLastBytesNeverOvershoot() throws InterruptedException {
    MemoryBudget b = new MemoryBudget(10_000);
    ConcurrentLinkedQueue<MemoryBudget.Reservation> got = new ConcurrentLinkedQueue<>();
    AtomicInteger refused = new AtomicInteger();
    CountDownLatch go = new CountDownLatch(1);
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      Thread thread = new Thread(() -> {
        try {
          go.await();
        } catch (InterruptedException e) {
          return;
        }
        for (int i = 0; i < 1000; i++) {
          try {
            got.add(b.reserve(7, "p", "-"));
          } catch (RegisteredMemoryExhaustedException e) {
            refused.incrementAndGet();
          }
        }
      });
      thread.start();
      threads.add(thread);
    }
    go.countDown();
    for (Thread t : threads) t.join();
    assertEquals(10_000 / 7, got.size(), "as many as fit, no more");
    assertEquals(4000 - got.size(), refused.get());
    assertEquals(got.size() * 7L, b.used());
  }
}

package dev.pekkordma.runtime.internal;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.runtime.RuntimeSettings;
import dev.pekkordma.runtime.internal.CmDispatcher.Delivery;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.RepeatedTest;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Many threads post events for ids whose owners take them immediately, on the dispatcher's
 * thread, or change between the two, with slow owners among them: every id hears every event of
 * its own, each once, in the order they were queued.
 */
class CmDeliveryOrderTest {
  static final int IDS = 12;
  static final int POSTERS = 4;
  static final int EVENTS_PER_POSTER = 3_000;

  final Config config = ConfigFactory.load();
  final RdmaProvider provider = RdmaProviders.load(config);
  final ActorSystem<Void> system =
      ActorSystem.create(Behaviors.empty(), "CmDeliveryOrderTest", config);
  final PostingChannel channel = new PostingChannel(provider.createCmEventChannel());
  final CmDispatcher cm = new CmDispatcher(channel, device -> { });

  {
    AgentRunner.start(system, "cm", new BackoffIdleStrategy(10, 10, Duration.ofMillis(5)), cm);
  }

  /** A channel that queues what the test posts, numbering each id's events as they queue. */
  static final class PostingChannel implements CmEventChannel {
    final CmEventChannel ids;
    final LinkedBlockingQueue<CmEvent> queue = new LinkedBlockingQueue<>();
    final Map<CmId, Integer> next = new ConcurrentHashMap<>();
    volatile Runnable posted;

    PostingChannel(CmEventChannel ids) {
      this.ids = ids;
    }

    @Override
    public CmId createId(Object context, RdmaPortSpace space) {
      return ids.createId(context, space);
    }

    @Override
    public CmEvent awaitEvent(Duration timeout) {
      try {
        return queue.poll(timeout.toNanos(), TimeUnit.NANOSECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }

    @Override
    public boolean notifyOnPost(Runnable r) {
      posted = r;
      return true;
    }

    /** Queues the id's next event, as a provider does (its number rides in the status). */
    void post(CmId id) {
      synchronized (this) {
        int n = next.merge(id, 1, Integer::sum);
        queue.add(new CmEvent(CmEventType.ESTABLISHED, id, null, n, new byte[0], null));
      }
      posted.run();
    }

    @Override
    public void close() {
      ids.close();
    }
  }

  @AfterEach
  void closeEverything() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
    provider.close();
  }

  @RepeatedTest(3)
  void everyIdHearsItsEventsOnceAndInOrder() throws Exception {
    Random random = new Random();
    List<CmId> ids = new ArrayList<>();
    Map<CmId, AtomicInteger> heard = new ConcurrentHashMap<>();
    List<String> wrong = Collections.synchronizedList(new ArrayList<>());
    int total = POSTERS * EVENTS_PER_POSTER;
    CountDownLatch all = new CountDownLatch(total);
    for (int i = 0; i < IDS; i++) {
      AtomicInteger last = new AtomicInteger();
      Consumer<CmEvent> owner = ownerOf(last, wrong, all, i % 4 == 3);
      Delivery delivery = i % 2 == 0 ? Delivery.IMMEDIATE : Delivery.DISPATCHER_THREAD;
      CmId id = cm.createId("id " + i, RdmaPortSpace.TCP, delivery, owner, why -> { });
      ids.add(id);
      heard.put(id, last);
    }
    List<Thread> posters = new ArrayList<>();
    for (int p = 0; p < POSTERS; p++) {
      long seed = random.nextLong();
      Thread t = new Thread(() -> {
        Random r = new Random(seed);
        for (int k = 0; k < EVENTS_PER_POSTER; k++) {
          CmId id = ids.get(r.nextInt(IDS));
          if (r.nextInt(50) == 0) { // an owner changes how it takes its events, as a claim does
            AtomicInteger last = heard.get(id);
            cm.own(id, r.nextBoolean() ? Delivery.IMMEDIATE : Delivery.DISPATCHER_THREAD,
                ownerOf(last, wrong, all, false), why -> { });
          }
          channel.post(id);
        }
      }, "poster-" + p);
      posters.add(t);
      t.start();
    }
    for (Thread t : posters) t.join(60_000);
    assertTrue(all.await(60, TimeUnit.SECONDS), all.getCount() + " of " + total + " not heard");
    assertEquals(List.of(), wrong);
    int sum = 0;
    for (CmId id : ids) {
      assertEquals(channel.next.getOrDefault(id, 0), heard.get(id).get(), "every event of " + id);
      sum += heard.get(id).get();
    }
    assertEquals(total, sum);
    for (CmId id : ids) cm.destroy(id, false);
    assertEquals(0, cm.ownedIds());
  }

  /** An owner that notes any event out of its id's order; a slow one takes its time with each. */
  private static Consumer<CmEvent> ownerOf(AtomicInteger last, List<String> wrong,
      CountDownLatch all, boolean slow) {
    return e -> {
      if (e.status() != last.get() + 1) {
        wrong.add(e.id() + ": event " + e.status() + " after " + last.get());
      }
      last.set(e.status());
      if (slow) LockSupport.parkNanos(20_000);
      all.countDown();
    };
  }
}

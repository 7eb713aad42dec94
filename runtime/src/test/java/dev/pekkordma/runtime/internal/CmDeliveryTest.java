package dev.pekkordma.runtime.internal;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.runtime.RuntimeSettings;
import dev.pekkordma.runtime.internal.CmDispatcher.Delivery;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Where and in what order the CM dispatcher delivers: an immediate owner's events in the thread
 * that raised them where the provider tells of posts (the software one), every other owner's on
 * the dispatcher's thread, and never one of an id's events before an earlier one; a listener's
 * requests still waiting for that thread are rejected and destroyed with it, as queued ones are.
 */
class CmDeliveryTest {
  static final String ADDRESS = "native".equals(System.getProperty("pekko-rdma.provider", "soft"))
      ? System.getProperty("pekko-rdma.test.cm-address", "192.0.2.1") : "127.0.0.1";

  final Config config = ConfigFactory.load();
  final RdmaProvider provider = RdmaProviders.load(config);
  final ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "CmDeliveryTest", config);
  final CmDispatcher cm = new CmDispatcher(provider.createCmEventChannel(), device -> { });

  {
    AgentRunner.start(system, "cm", new BackoffIdleStrategy(0, 0, Duration.ofMillis(20)), cm);
  }

  record Heard(CmEventType type, Thread thread) {}

  @AfterEach
  void closeEverything() throws Exception {
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
    provider.close();
  }

  static Consumer<CmEvent> recorder(BlockingQueue<Heard> heard) {
    return e -> heard.add(new Heard(e.type(), Thread.currentThread()));
  }

  static Heard next(BlockingQueue<Heard> heard) throws InterruptedException {
    Heard h = heard.poll(10, TimeUnit.SECONDS);
    if (h == null) throw new AssertionError("no CM event within 10 s");
    return h;
  }

  CmId resolvedId(Delivery delivery, Consumer<CmEvent> events) {
    CmId id = cm.createId("delivery test", RdmaPortSpace.TCP, delivery, events, why -> { });
    id.resolveAddress(null, new InetSocketAddress(ADDRESS, 7471), Duration.ofSeconds(5));
    return id;
  }

  @Test
  void anImmediateOwnerHearsInTheThreadThatRaisedTheEvent() throws Exception {
    BlockingQueue<Heard> heard = new LinkedBlockingQueue<>();
    CmId id = resolvedId(Delivery.IMMEDIATE, recorder(heard));
    assertEquals(CmEventType.ADDR_RESOLVED, next(heard).type());

    id.resolveRoute(Duration.ofSeconds(5)); // the software CM posts its answer in this call
    Heard route = next(heard);
    assertEquals(CmEventType.ROUTE_RESOLVED, route.type());
    if (cm.deliversInPostingThreads()) {
      assertSame(Thread.currentThread(), route.thread(), "delivered in the posting thread");
    }
    cm.destroy(id, false);
    assertEquals(0, cm.ownedIds());
  }

  @Test
  void anOwnerOfTheDispatchersThreadHearsThere() throws Exception {
    BlockingQueue<Heard> heard = new LinkedBlockingQueue<>();
    CmId id = resolvedId(Delivery.DISPATCHER_THREAD, recorder(heard));
    Heard address = next(heard);
    assertEquals(CmEventType.ADDR_RESOLVED, address.type());

    id.resolveRoute(Duration.ofSeconds(5));
    Heard route = next(heard);
    assertEquals(CmEventType.ROUTE_RESOLVED, route.type());
    assertNotSame(Thread.currentThread(), route.thread());
    assertSame(address.thread(), route.thread(), "both on the dispatcher's one thread");
    cm.destroy(id, false);
  }

  @Test
  void anEventWaitingForTheDispatchersThreadHoldsBackTheIdsLaterOnes() throws Exception {
    BlockingQueue<Heard> heard = new LinkedBlockingQueue<>();
    CountDownLatch inside = new CountDownLatch(1);
    CountDownLatch letGo = new CountDownLatch(1);
    CmId id = resolvedId(Delivery.DISPATCHER_THREAD, e -> {
      heard.add(new Heard(e.type(), Thread.currentThread()));
      inside.countDown();
      try {
        letGo.await(10, TimeUnit.SECONDS); // a slow owner: the thread is busy delivering
      } catch (InterruptedException ex) {
        Thread.currentThread().interrupt();
      }
    });
    assertTrue(inside.await(10, TimeUnit.SECONDS));
    // from now on the id's events may be delivered anywhere; the one being delivered is first
    cm.own(id, Delivery.IMMEDIATE, recorder(heard), why -> { });
    id.resolveRoute(Duration.ofSeconds(5));
    assertEquals(CmEventType.ADDR_RESOLVED, next(heard).type());
    assertEquals(null, heard.poll(200, TimeUnit.MILLISECONDS),
        "the route's event overtook the address's, still being delivered");

    letGo.countDown();
    Heard route = next(heard);
    assertEquals(CmEventType.ROUTE_RESOLVED, route.type());
    assertNotSame(Thread.currentThread(), route.thread(), "the deliverer looked again");
    cm.destroy(id, false);
    assertEquals(List.of(), List.copyOf(heard));
  }

  @Test
  void requestsWaitingForTheThreadGoWithTheirListener() throws Exception {
    // a dispatcher whose thread never runs: what is not immediate waits for it for good
    CmEventChannel channel = provider.createCmEventChannel();
    CmDispatcher idle = new CmDispatcher(channel, device -> { });
    if (!idle.deliversInPostingThreads()) channel.close();
    assumeTrue(idle.deliversInPostingThreads(), "only where posts are told of");
    BlockingQueue<Heard> listenerHeard = new LinkedBlockingQueue<>();
    CmId listener = idle.createId("listener", RdmaPortSpace.TCP, Delivery.DISPATCHER_THREAD,
        recorder(listenerHeard), why -> { });
    listener.bind(new InetSocketAddress(ADDRESS, 0));
    listener.listen(4);
    BlockingQueue<Heard> clientHeard = new LinkedBlockingQueue<>();
    CmId client = idle.createId("client", RdmaPortSpace.TCP, Delivery.IMMEDIATE,
        recorder(clientHeard), why -> { });
    client.resolveAddress(null, listener.localAddress(), Duration.ofSeconds(5));
    assertEquals(CmEventType.ADDR_RESOLVED, next(clientHeard).type());
    client.resolveRoute(Duration.ofSeconds(5));
    assertEquals(CmEventType.ROUTE_RESOLVED, next(clientHeard).type());
    ProtectionDomain pd = client.verbs().allocPd();
    CompletionQueue cq = client.verbs().createCq(8, null);
    try {
      client.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(4).maxRecvWr(4));
      client.connect(ConnectionParameters.defaults());
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (provider.liveResources().cmIds() < 3 && System.nanoTime() < deadline) {
        Thread.sleep(5); // the request's id: its event waits for the thread
      }
      assertEquals(3, provider.liveResources().cmIds(), "listener, client and the request");

      idle.destroy(listener, false);
      assertEquals(CmEventType.REJECTED, next(clientHeard).type(),
          "the request nobody saw was rejected with its listener");
      assertEquals(1, provider.liveResources().cmIds(), "and its id destroyed");
      assertEquals(List.of(), List.copyOf(listenerHeard));
    } finally {
      idle.destroy(client, false);
      cq.close();
      pd.close();
    }
    assertEquals(0, provider.liveResources().cmIds());
  }
}

package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * Members for tests: actor systems of one name on loopback (ports from the OS) with the software
 * provider, quick gossip and failure detection, and the split-brain resolver downing what stays
 * unreachable for {@code stable-after}.
 */
final class TestCluster {
  /** Longer on the native provider in the emulated VM ({@code pekko-rdma.test.cluster-wait}). */
  static final Duration WAIT =
      Duration.ofSeconds(Long.getLong("pekko-rdma.test.cluster-wait", 15));
  static final String NAME = "RdmaClusterTest";

  private TestCluster() {}

  /** The test members' config; {@code extra} overrides. */
  static Config config(String extra) {
    String quickData = "{ gossip-interval = 200ms, notify-subscribers-interval = 100ms }";
    return ConfigFactory.parseString("pekko.actor.provider = cluster\n"
        + "pekko.remote.artery.canonical { hostname = 127.0.0.1, port = 0 }\n"
        + "pekko.remote.artery.advanced.test-mode = on\n"
        + "pekko.cluster.jmx.multi-mbeans-in-same-jvm = on\n"
        + "pekko.cluster { gossip-interval = 200ms, leader-actions-interval = 200ms,"
        + " unreachable-nodes-reaper-interval = 200ms, periodic-tasks-initial-delay = 100ms }\n"
        + "pekko.cluster.failure-detector { heartbeat-interval = 200ms,"
        + " acceptable-heartbeat-pause = 1s, expected-response-after = 500ms }\n"
        + "pekko.cluster.distributed-data " + quickData + "\n"
        + "pekko.cluster.typed.receptionist.distributed-data " + quickData + "\n"
        + "pekko.cluster.downing-provider-class ="
        + " \"org.apache.pekko.cluster.sbr.SplitBrainResolverProvider\"\n"
        + "pekko.cluster.split-brain-resolver { active-strategy = keep-majority,"
        + " stable-after = 3s }\n"
        + "pekko.cluster.down-removal-margin = 500ms\n"
        + "pekko.coordinated-shutdown.run-by-jvm-shutdown-hook = off\n"
        + "pekko.loglevel = INFO\n"
        + "pekko-rdma.provider = soft\n"
        + "pekko-rdma.runtime.poller.block-timeout = 20ms\n"
        + "pekko-rdma.actors.buffer-pool { buffer-size = 4KiB, slab-size = 256KiB, slabs = 1 }\n"
        + "pekko-rdma.cm.connect-timeout = 1s\n"
        + "pekko-rdma.actors.cm { connect-timeout = 2s, disconnect-timeout = 1s,"
        + " device-idle-timeout = 100ms,"
        + " retry { min-backoff = 50ms, max-backoff = 200ms, max-attempts = 3 } }\n"
        + "pekko-rdma.cluster { receive-depth = 8, describe-timeout = 1s, describe-attempts = 2,"
        + " flush-timeout = 1s, connect-wait = 8s,"
        + " reconnect-backoff { min-backoff = 100ms, max-backoff = 500ms } }\n"
        + extra) // last, so that it overrides
        .withFallback(ConfigFactory.load());
  }

  /** A member: its test kit (probes, shutdown), its RDMA cluster started and bound. */
  static final class Node {
    final ActorTestKit kit;
    final RdmaCluster rdma;
    final TestProbe<PeerEvent> events;
    final ResourceCounts baseline;
    private final java.util.List<PeerEvent> seen = new java.util.ArrayList<>();

    Node(Config config) {
      kit = ActorTestKit.create(NAME, config);
      rdma = RdmaCluster.get(kit.system());
      events = kit.createTestProbe("events");
      rdma.subscribe(events.getRef());
      result(rdma.selfEndpoint());
      baseline = resources();
    }

    ActorSystem<Void> system() {
      return kit.system();
    }

    Address address() {
      return Cluster.get(kit.system()).selfMember().address();
    }

    ResourceCounts resources() {
      return RdmaExtension.get(kit.system()).provider().liveResources();
    }

    void join(Node seed) {
      Cluster.get(kit.system()).manager().tell(Join.create(seed.address()));
    }

    /**
     * Waits for an event of the member matching {@code p}. Every event is kept, so that one that
     * came before another awaited is still found.
     */
    <E extends PeerEvent> E await(Class<E> type, Address member, Predicate<E> p) {
      long deadline = System.nanoTime() + WAIT.toNanos();
      int next = 0;
      while (true) {
        for (; next < seen.size(); next++) {
          PeerEvent e = seen.get(next);
          if (type.isInstance(e) && e.member().equals(member) && p.test(type.cast(e))) {
            seen.remove(next);
            return type.cast(e);
          }
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
          throw new AssertionError(address() + " saw no " + type.getSimpleName() + " of " + member
              + " within " + WAIT + "; it saw " + seen);
        }
        PeerEvent e = events.receiveMessage(Duration.ofNanos(left));
        seen.add(e);
      }
    }

    <E extends PeerEvent> E await(Class<E> type, Address member) {
      return await(type, member, e -> true);
    }

    /** Waits until the provider's live resources equal {@code expected}. */
    void awaitResources(ResourceCounts expected) {
      long deadline = System.nanoTime() + WAIT.toNanos();
      ResourceCounts now = resources();
      while (!now.equals(expected) && System.nanoTime() < deadline) {
        sleep(20);
        now = resources();
      }
      assertEquals(expected, now, "live resources of " + address());
    }

    void awaitMembers(int up) {
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (System.nanoTime() < deadline) {
        long n = 0;
        for (var m : Cluster.get(kit.system()).state().getMembers()) {
          if (m.status() == MemberStatus.up()) n++;
        }
        if (n == up) return;
        sleep(20);
      }
      throw new AssertionError(address() + " did not see " + up + " members up: "
          + Cluster.get(kit.system()).state().getMembers());
    }

    void shutdown() {
      kit.shutdownTestKit();
    }
  }

  static <T> T result(java.util.concurrent.CompletionStage<T> stage) {
    try {
      return stage.toCompletableFuture().get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
    } catch (Exception e) {
      throw new AssertionError(e);
    }
  }

  static void sleep(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }
}

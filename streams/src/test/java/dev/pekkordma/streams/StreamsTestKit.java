package dev.pekkordma.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.util.ByteString;

/**
 * The tests' actor systems (quick pollers) and waiting helpers. The software provider on
 * 127.0.0.1, unless the system property {@code pekko-rdma.provider} says {@code native}, as
 * native/softroce/run-native-tests.sh does in the Soft-RoCE VM: then the CM device of
 * {@code pekko-rdma.test.cm-address} (rxe0 at 192.0.2.1), and for plain verbs
 * {@code pekko-rdma.test.device} at {@code pekko-rdma.test.gid-index}.
 */
final class StreamsTestKit {
  static final boolean NATIVE =
      "native".equals(System.getProperty("pekko-rdma.provider", "soft"));
  static final String HOST =
      NATIVE ? System.getProperty("pekko-rdma.test.cm-address", "192.0.2.1") : "127.0.0.1";
  private static final String DEVICE =
      NATIVE ? System.getProperty("pekko-rdma.test.cm-device", "rxe0") : "soft0";
  /** For plain verbs (QPs connected by hand): rxe_lo's IPv4 GID in the VM, soft0's first here. */
  static final String VERBS_DEVICE =
      NATIVE ? System.getProperty("pekko-rdma.test.device", "rxe_lo") : "soft0";
  static final int GID_INDEX = Integer.getInteger("pekko-rdma.test.gid-index", NATIVE ? 1 : 0);
  /** Emulated (the VM) is many times slower than here. */
  static final Duration WAIT = Duration.ofSeconds(NATIVE ? 30 : 10);

  private StreamsTestKit() {}

  static Config config(String extra) {
    String provider = NATIVE
        ? "pekko-rdma.provider = native\npekko-rdma.actors.devices = [\"" + DEVICE + "\"]\n"
        : "pekko-rdma.provider = soft\n";
    return ConfigFactory.parseString(provider + extra + "\n"
        + "pekko-rdma.runtime.poller.block-timeout = 20ms\n"
        + "pekko.loglevel = WARNING\n"
        + "pekko.stdout-loglevel = WARNING\n")
        .withFallback(ConfigFactory.load());
  }

  static ActorSystem<Void> system(String name, String extra) {
    return ActorSystem.create(Behaviors.empty(), name, config(extra));
  }

  static RdmaStreams streams(ActorSystem<?> system) {
    return RdmaStreams.get(system);
  }

  static <T> T await(CompletionStage<T> stage) throws Exception {
    return await(stage, WAIT);
  }

  static <T> T await(CompletionStage<T> stage, Duration timeout) throws Exception {
    return stage.toCompletableFuture().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  /** The ByteStrings as one: what a byte stream (Tcp) reads of them. */
  static ByteString join(java.util.List<ByteString> parts) {
    ByteString all = ByteString.emptyByteString();
    for (ByteString b : parts) all = all.concat(b);
    return all;
  }

  /** Waits until the provider's live resources are back at {@code start}. */
  static void awaitResources(RdmaStreams rdma, ResourceCounts start) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    ResourceCounts now = rdma.liveResources();
    while (!now.equals(start) && System.nanoTime() < deadline) {
      Thread.sleep(20);
      now = rdma.liveResources();
    }
    assertEquals(start, now, "live resources (left minus start: " + now.minus(start) + ")");
  }
}

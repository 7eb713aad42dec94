package dev.pekkordma.memory;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.conformance.PeerProcess;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Past the JVM's direct memory limit an allocation fails with a named exception, not the
 * OutOfMemoryError that Pekko answers by exiting the JVM; what was allocated stays usable and
 * freeing it makes room again. In a JVM of its own with a small limit.
 */
class DirectMemoryLimitTest {
  @Test
  void pastTheLimitAnAllocationFailsByName() throws Exception {
    List<String> jvm = new ArrayList<>(PeerProcess.TEST_JVM);
    jvm.add("-XX:MaxDirectMemorySize=8m");
    try (PeerProcess p = PeerProcess.start(jvm, Main.class)) {
      String got = p.awaitLine("refused", Duration.ofSeconds(30));
      assertTrue(got.contains(DirectMemoryExhaustedException.class.getSimpleName())
          && got.contains("-XX:MaxDirectMemorySize") && got.contains("1048576 bytes"),
          p.output());
      p.awaitLine("again", Duration.ofSeconds(30));
      assertEquals(0, p.awaitExit(Duration.ofSeconds(30)), p.output());
    }
  }

  /** Allocates 1 MiB buffers until refused, then frees one and allocates once more. */
  public static final class Main {
    public static void main(String[] args) {
      List<OffHeapBuffer> held = new ArrayList<>();
      try {
        for (int i = 0; i < 100; i++) held.add(OffHeapBuffer.allocate(1 << 20));
        System.out.println("never refused after 100 MiB");
        System.exit(1);
      } catch (DirectMemoryExhaustedException e) {
        System.out.println("refused after " + held.size() + " MiB: " + e);
      }
      held.get(0).putLong(0, 42);
      held.remove(0).close();
      held.add(OffHeapBuffer.allocate(1 << 20));
      System.out.println("again: " + held.size() + " MiB");
    }
  }
}

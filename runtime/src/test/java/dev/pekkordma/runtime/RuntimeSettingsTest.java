package dev.pekkordma.runtime;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.runtime.internal.BackoffIdleStrategy;
import dev.pekkordma.runtime.internal.BusySpinIdleStrategy;
import org.junit.jupiter.api.Test;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RuntimeSettingsTest {
  private static RuntimeSettings with(String line) {
    return RuntimeSettings.from(ConfigFactory.parseString(line)
        .withFallback(ConfigFactory.load()).resolve());
  }

  private static void rejects(String line, String key, String words) {
    ConfigException e = assertThrows(ConfigException.class, () -> with(line), line);
    assertTrue(e.getMessage().contains(key), e.getMessage());
    assertTrue(e.getMessage().contains(words), e.getMessage());
  }

  @Test
  void settingsThatMakeNoSenseFailNamingTheirKey() {
    rejects("pekko-rdma.runtime.poller.block-timeout = 0s", "poller.block-timeout", "positive");
    rejects("pekko-rdma.runtime.poller.block-timeout = 1m", "poller.block-timeout", "at most");
    rejects("pekko-rdma.runtime.poller.max-spins = -1", "poller.max-spins", "at least 0");
    rejects("pekko-rdma.runtime.poller.batch-size = 0", "poller.batch-size", "at least 1");
    rejects("pekko-rdma.runtime.poller.idle-strategy = sleepy", "poller.idle-strategy",
        "backoff or busy-spin");
    String m = MemoryBudget.SETTING;
    rejects(m + " = lots", m, "auto or a size");
    rejects(m + " = 0", m, "must be in [1, ");
    rejects(m + " = " + (MemoryBudget.directMemoryLimit() + 1), m, "-XX:MaxDirectMemorySize");
  }

  @Test
  void theMemoryBudgetIsAutoOrASize() {
    assertEquals(MemoryBudget.directMemoryLimit() / 4 * 3, with("").maxRegisteredMemory);
    assertEquals(64L << 20, with(MemoryBudget.SETTING + " = 64MiB").maxRegisteredMemory);
  }

  @Test
  void theIdleStrategyIsTheOneConfigured() {
    assertInstanceOf(BackoffIdleStrategy.class, with("").newIdleStrategy());
    assertInstanceOf(BusySpinIdleStrategy.class,
        with("pekko-rdma.runtime.poller.idle-strategy = busy-spin").newIdleStrategy());
    assertEquals(64, with("").batchSize);
  }
}

package dev.pekkordma.conformance;

import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Opens the shared provider (closed when the whole run ends), forgets async events earlier tests
 * left behind, and checks that every test closes what it opened: the provider's live resources
 * after a test must equal those before it.
 */
public final class ConformanceExtension implements BeforeEachCallback, AfterEachCallback {
  private static final ExtensionContext.Namespace NS =
      ExtensionContext.Namespace.create(ConformanceExtension.class);
  private static final Duration SETTLE = Duration.ofSeconds(2);

  @Override
  public void beforeEach(ExtensionContext context) {
    context.getRoot().getStore(NS).getOrComputeIfAbsent("provider",
        k -> (ExtensionContext.Store.CloseableResource) ConformanceProvider::closeShared,
        ExtensionContext.Store.CloseableResource.class);
    ConformanceProvider fx = ConformanceProvider.shared();
    List<AsyncEvent> stale = new ArrayList<>();
    AsyncEvent e;
    while (stale.size() < 1000 && (e = fx.context.nextAsyncEvent(Duration.ZERO)) != null) {
      stale.add(e);
    }
    if (!stale.isEmpty()) {
      System.out.println("[conformance] " + context.getDisplayName()
          + ": discarded async events of earlier tests: " + stale);
    }
    context.getStore(NS).put("before", fx.provider.liveResources());
  }

  @Override
  public void afterEach(ExtensionContext context) {
    ResourceCounts before = context.getStore(NS).get("before", ResourceCounts.class);
    if (before == null) return;
    ConformanceProvider fx = ConformanceProvider.shared();
    long deadline = System.nanoTime() + SETTLE.toNanos();
    ResourceCounts after = fx.provider.liveResources();
    while (!after.equals(before) && System.nanoTime() < deadline) {
      sleepMillis(10); // CM ids and the like may be released a little after close returns
      after = fx.provider.liveResources();
    }
    if (!after.equals(before)) {
      throw new AssertionError(context.getDisplayName() + " leaked resources: before " + before
          + ", after " + after + ", difference " + after.minus(before));
    }
  }

  static void sleepMillis(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError("interrupted", e);
    }
  }
}

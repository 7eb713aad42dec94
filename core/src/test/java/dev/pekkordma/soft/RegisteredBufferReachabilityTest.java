package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.lang.ref.WeakReference;
import org.junit.jupiter.api.Test;

/**
 * A registered OffHeapBuffer stays reachable while registered: the application may drop its
 * own reference, and the garbage collector cannot free memory peers may still write (a freed
 * direct buffer under a peer's writes would crash the JVM). Once deregistered it goes.
 */
class RegisteredBufferReachabilityTest {
  @Test
  void aRegisteredBufferIsNotCollectedUntilItsRegionIsClosed() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory.parseString(
        "pekko-rdma.provider = soft").withFallback(ConfigFactory.load()))) {
      DeviceContext ctx = provider.open(provider.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      WeakReference<OffHeapBuffer> buffer = register(pd);
      for (int i = 0; i < 5; i++) {
        System.gc();
        Thread.sleep(20);
      }
      assertNotNull(buffer.get(), "the registered buffer was collected");
      ((SoftPd) pd).children.snapshot().forEach(c -> {
        if (c instanceof MemoryRegion mr) mr.close();
      });
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (buffer.get() != null) {
        assertTrue(System.nanoTime() < deadline, "the buffer outlived its registration");
        System.gc();
        Thread.sleep(20);
      }
      pd.close();
      ctx.close();
    }
  }

  /** Registers a buffer of which only the region (and a weak reference) remain. */
  private static WeakReference<OffHeapBuffer> register(ProtectionDomain pd) {
    OffHeapBuffer b = OffHeapBuffer.allocate(1 << 20);
    pd.registerMemory(b, HostileFabric.ACCESS);
    return new WeakReference<>(b);
  }
}

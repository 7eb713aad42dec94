package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;

/**
 * A soft provider with one RC QP (64 send slots) and a registered region, for tests that talk
 * to a peer of their own making; closing it checks that everything was freed.
 */
final class OneQp implements AutoCloseable {
  final RdmaProvider provider;
  final DeviceContext ctx;
  final ProtectionDomain pd;
  final CompletionQueue cq;
  final QueuePair qp;
  final OffHeapBuffer memory;
  final MemoryRegion mr;

  OneQp(int regionBytes) {
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
    ctx = provider.open(provider.devices().get(0));
    pd = ctx.allocPd();
    cq = ctx.createCq(256, null);
    qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64));
    memory = OffHeapBuffer.allocate(regionBytes);
    mr = pd.registerMemory(memory, HostileFabric.ACCESS);
  }

  @Override
  public void close() {
    qp.close();
    mr.close();
    memory.close();
    cq.close();
    pd.close();
    ctx.close();
    assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources(),
        "everything the test made is freed");
    provider.close();
  }
}

package dev.pekkordma.soft;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.IOException;

/**
 * One RC QP of a soft provider, with a guarded region, and a {@link RawFabricPeer} to connect it
 * to: for tests where the peer process answers our requests. Closing checks that nothing is left.
 */
final class RawPeerQp implements AutoCloseable {
  final RdmaProvider provider;
  final DeviceContext ctx;
  final ProtectionDomain pd;
  final CompletionQueue cq;
  final HostileFabric.Guarded region;
  final QueuePair qp;
  final RawFabricPeer server;

  RawPeerQp() throws IOException {
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
    ctx = provider.open(provider.devices().get(0));
    pd = ctx.allocPd();
    cq = ctx.createCq(256, null);
    region = new HostileFabric.Guarded(pd);
    qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    server = new RawFabricPeer();
  }

  /** Connects the QP (from RESET) to the peer's QP, PSNs from 0. */
  void connect(int timeout, int retry) {
    HostileFabric.connect(qp, server.gid(1), HostileFabric.PEER_QPN, timeout, retry);
  }

  @Override
  public void close() throws IOException {
    qp.close();
    region.close();
    cq.close();
    pd.close();
    ctx.close();
    server.close();
    ResourceCounts left = provider.liveResources();
    provider.close();
    if (!left.equals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0))) {
      throw new AssertionError("left behind: " + left);
    }
  }
}

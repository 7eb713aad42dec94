package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import dev.pekkordma.verbs.SendRequests;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A link to another process lives while a QP is connected to a device there: a server whose
 * clients come and go (each a new process, a new address) does not keep a link, its engine and
 * its reader thread for every client it ever had.
 */
class FabricLinkLifecycleTest {
  private static final int PEERS = 20;

  @Test
  void linksEndWithTheLastQpConnectedThroughThem() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory.parseString(
            "pekko-rdma.provider = soft").withFallback(ConfigFactory.load()));
        OffHeapBuffer memory = OffHeapBuffer.allocate(4096);
        SendRequests s = new SendRequests(1, 1)) {
      DeviceContext ctx = provider.open(provider.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(4 * PEERS, null);
      MemoryRegion mr = pd.registerMemory(memory, HostileFabric.ACCESS);
      int before = linkThreads();
      List<RawFabricPeer> peers = new ArrayList<>();
      List<QueuePair> qps = new ArrayList<>();
      for (int i = 0; i < PEERS; i++) {
        RawFabricPeer peer = new RawFabricPeer();
        peers.add(peer);
        QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
        qps.add(qp);
        HostileFabric.connect(qp, peer.gid(1), HostileFabric.PEER_QPN, 20, 1);
        s.clear();
        s.add(i, dev.pekkordma.verbs.WrOpcode.RDMA_WRITE, 0).sge(mr, 0, 64).rdma(0x1000, 1);
        qp.postSend(s);
        peer.awaitInbound(5000); // the link is up: its reader thread runs
      }
      assertTrue(linkThreads() - before >= PEERS, "a link (engine and reader) per peer: "
          + (linkThreads() - before));
      for (QueuePair qp : qps) qp.close();
      long deadline = System.nanoTime() + 10_000_000_000L;
      while (linkThreads() > before) {
        assertTrue(System.nanoTime() < deadline, (linkThreads() - before)
            + " link threads outlived every QP that used them");
        Thread.sleep(20);
      }
      for (RawFabricPeer p : peers) p.close();
      mr.close();
      cq.close();
      pd.close();
      ctx.close();
      assertEquals(0, provider.liveResources().qps());
    }
  }

  private static int linkThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      if (t.getName().startsWith("soft-rdma-link-") && t.isAlive()) n++;
    }
    return n;
  }
}

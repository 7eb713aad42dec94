package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * The native connection manager on Soft-RoCE's rxe0 in the VM (native/softroce/vm): a server
 * on 192.0.2.1, a client from 192.0.2.2, private data both ways, one SEND, disconnect, and the
 * kernel's cm_id count back where it was.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.provider", matches = "native", disabledReason =
    "needs -Dpekko-rdma.provider=native and an RDMA device (native/softroce/run-native-tests.sh"
        + " runs it in the Soft-RoCE VM)")
class NativeCmSmokeTest {
  static final String SERVER = System.getProperty("pekko-rdma.native.cm-server", "192.0.2.1");
  static final String CLIENT = System.getProperty("pekko-rdma.native.cm-client", "192.0.2.2");
  static final String DEVICE = System.getProperty("pekko-rdma.native.cm-device", "rxe0");
  static final Duration WAIT = Duration.ofSeconds(20);

  static CmEvent expect(CmEventChannel ch, CmEventType type) {
    CmEvent e = ch.awaitEvent(WAIT);
    System.out.println("  CM event: " + e + (e != null && e.id() != null ? " on " + e.id() : ""));
    assertNotNull(e, "no CM event within " + WAIT + ", expected " + type);
    assertEquals(type, e.type(), e.toString());
    return e;
  }

  @Test
  void connectSendDisconnectOverRxe0() throws Exception {
    Map<String, Integer> before = NativeSmokeTest.rdmaResources(DEVICE);
    System.out.println("rdma resource show " + DEVICE + " before: " + before);
    try (RdmaProvider provider = RdmaProviders.load(ConfigFactory.load())) {
      assertTrue(provider.supports(RdmaProvider.Feature.CONNECTION_MANAGER));
      CmEventChannel serverCh = provider.createCmEventChannel();
      CmEventChannel clientCh = provider.createCmEventChannel();
      CmId listener = serverCh.createId("listener");
      listener.bind(new InetSocketAddress(InetAddress.getByName(SERVER), 0));
      listener.listen(8);
      int port = listener.localAddress().getPort();
      System.out.println("listening on " + listener.localAddress() + " (" + listener.verbs() + ")");
      assertTrue(port > 0);

      CmId client = clientCh.createId("client");
      client.resolveAddress(new InetSocketAddress(InetAddress.getByName(CLIENT), 0),
          new InetSocketAddress(InetAddress.getByName(SERVER), port), Duration.ofSeconds(5));
      expect(clientCh, CmEventType.ADDR_RESOLVED);
      client.resolveRoute(Duration.ofSeconds(5));
      expect(clientCh, CmEventType.ROUTE_RESOLVED);
      DeviceContext cctx = client.verbs();
      System.out.println("client on " + cctx.device() + " port " + client.portNum());
      ProtectionDomain cpd = cctx.allocPd();
      CompletionQueue ccq = cctx.createCq(16, null);
      client.createQp(cpd, QpInitAttributes.of(QpType.RC, ccq, ccq));
      byte[] hello = "hello, server".getBytes(StandardCharsets.US_ASCII);
      client.connect(ConnectionParameters.withPrivateData(hello));

      CmEvent req = expect(serverCh, CmEventType.CONNECT_REQUEST);
      CmId conn = req.id();
      assertEquals(listener, req.listenId());
      assertEquals("listener", conn.context());
      byte[] got = java.util.Arrays.copyOf(req.privateData(), hello.length);
      assertArrayEquals(hello, got);
      System.out.println("request from " + conn.remoteAddress() + " to " + conn.localAddress());
      DeviceContext sctx = conn.verbs();
      ProtectionDomain spd = sctx.allocPd();
      CompletionQueue scq = sctx.createCq(16, null);
      conn.createQp(spd, QpInitAttributes.of(QpType.RC, scq, scq));
      try (OffHeapBuffer sbuf = OffHeapBuffer.allocate(4096);
          OffHeapBuffer cbuf = OffHeapBuffer.allocate(4096);
          WorkCompletions wc = new WorkCompletions(4)) {
        MemoryRegion smr = spd.registerMemory(sbuf, Access.LOCAL_WRITE);
        MemoryRegion cmr = cpd.registerMemory(cbuf, Access.LOCAL_WRITE);
        try (RecvRequests rr = new RecvRequests(1, 1)) {
          rr.add(1).sge(smr, 0, 4096);
          conn.qp().postRecv(rr);
        }
        byte[] welcome = "welcome".getBytes(StandardCharsets.US_ASCII);
        conn.accept(ConnectionParameters.withPrivateData(welcome));
        CmEvent est = expect(clientCh, CmEventType.ESTABLISHED);
        assertArrayEquals(welcome, java.util.Arrays.copyOf(est.privateData(), welcome.length));
        expect(serverCh, CmEventType.ESTABLISHED);
        assertEquals(QpState.RTS, client.qp().state());

        byte[] msg = "over rdma_cm".getBytes(StandardCharsets.US_ASCII);
        cbuf.put(0, msg, 0, msg.length);
        try (SendRequests sr = new SendRequests(1, 1)) {
          sr.add(2, WrOpcode.SEND, SendRequests.SIGNALED).sge(cmr, 0, msg.length);
          client.qp().postSend(sr);
        }
        assertEquals(1, NativeSmokeTest.await(ccq, wc, 1));
        assertEquals(1, NativeSmokeTest.await(scq, wc, 1));
        byte[] r = new byte[msg.length];
        sbuf.get(0, r, 0, r.length);
        assertArrayEquals(msg, r);

        Map<String, Integer> during = NativeSmokeTest.rdmaResources(DEVICE);
        System.out.println("rdma resource show " + DEVICE + " while connected: " + during);
        assertEquals(before.get("cm_id") + 3, during.get("cm_id"));
        assertEquals(3, provider.liveResources().cmIds());

        // the passive side sees the DREQ and answers it with its own rdma_disconnect (the DREP),
        // which completes the active side's disconnect (as rping does)
        client.disconnect();
        expect(serverCh, CmEventType.DISCONNECTED);
        conn.disconnect();
        expect(clientCh, CmEventType.DISCONNECTED);
        client.destroyQp();
        conn.destroyQp();
        smr.close();
        cmr.close();
      }
      ccq.close();
      scq.close();
      cpd.close();
      spd.close();
      client.close();
      conn.close();
      listener.close();
      clientCh.close();
      serverCh.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    }
    Map<String, Integer> after = NativeSmokeTest.rdmaResources(DEVICE);
    System.out.println("rdma resource show " + DEVICE + " after: " + after);
    NativeSmokeTest.assertBackTo(before, after);
  }
}

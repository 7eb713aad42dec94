package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Datagrams through the connection manager on Soft-RoCE's rxe0 in the VM (native/softroce/vm):
 * RDMA_PS_UDP ids, the SIDR exchange (connect, accept with private data both ways, reject, no
 * listener), UD datagrams each way with the address vectors the CM gave, the path MTU at post,
 * multicast groups (two members, a leave, bad groups), and the kernel's counts back where they
 * were. The server is 192.0.2.1, the client 192.0.2.2.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.provider", matches = "native", disabledReason =
    "needs -Dpekko-rdma.provider=native and an RDMA device (native/softroce/run-native-tests.sh"
        + " runs it in the Soft-RoCE VM)")
class NativeCmDatagramTest {
  static final String SERVER = NativeCmSmokeTest.SERVER;
  static final String CLIENT = NativeCmSmokeTest.CLIENT;
  static final String DEVICE = NativeCmSmokeTest.DEVICE;
  static final Duration WAIT = NativeCmSmokeTest.WAIT;
  static final int GRH = Layout.GRH_SIZE;
  static final int SLOT = GRH + 4096;
  static final int SLOTS = 8;
  static final ResourceCounts NONE = new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0);
  static final String GROUP = System.getProperty("pekko-rdma.native.cm-group", "239.192.0.7");

  static RdmaProvider provider;
  static Map<String, Integer> baseline;

  @BeforeAll
  static void open() throws Exception {
    baseline = NativeSmokeTest.rdmaResources(DEVICE);
    System.out.println("rdma resource show " + DEVICE + " before: " + baseline);
    provider = RdmaProviders.load(ConfigFactory.load());
    assertEquals("native", provider.name());
  }

  @AfterAll
  static void close() throws Exception {
    if (provider == null) return;
    assertEquals(NONE, provider.liveResources(), "what the tests left open");
    provider.close();
    Map<String, Integer> after = NativeSmokeTest.rdmaResources(DEVICE);
    System.out.println("rdma resource show " + DEVICE + " after: " + after);
    NativeSmokeTest.assertBackTo(baseline, after);
  }

  static InetSocketAddress at(String host, int port) throws Exception {
    return new InetSocketAddress(InetAddress.getByName(host), port);
  }

  static CmEvent expect(CmEventChannel ch, CmEventType type) {
    return NativeCmSmokeTest.expect(ch, type);
  }

  static byte[] ascii(String s) {
    return s.getBytes(StandardCharsets.US_ASCII);
  }

  /** The first {@code n} bytes (the kernel pads SIDR private data to its field's size). */
  static byte[] head(byte[] data, int n) {
    assertTrue(data.length >= n, data.length + " bytes of private data, expected " + n);
    return Arrays.copyOf(data, n);
  }

  /** The IPv4-mapped GID of an address: its RoCE v2 GID, as the CM's address vectors carry. */
  static Gid gidOf(String ip) throws Exception {
    byte[] raw = new byte[16];
    raw[10] = (byte) 0xff;
    raw[11] = (byte) 0xff;
    System.arraycopy(InetAddress.getByName(ip).getAddress(), 0, raw, 12, 4);
    return Gid.of(raw);
  }

  /** A datagram id's UD QP with its PD, CQ and a registered buffer of receive slots. */
  static final class Member implements AutoCloseable {
    final CmId id;
    ProtectionDomain pd;
    CompletionQueue cq;
    QueuePair qp;
    final OffHeapBuffer buf = OffHeapBuffer.allocate((long) SLOT * (SLOTS + 1));
    MemoryRegion mr;
    final List<AddressHandle> ahs = new ArrayList<>();
    final WorkCompletions wc = new WorkCompletions(16);

    Member(CmId id) {
      this.id = id;
    }

    Member withQp() {
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(32, null);
      qp = id.createQp(pd, QpInitAttributes.of(QpType.UD, cq, cq).maxSendWr(16)
          .maxRecvWr(SLOTS));
      mr = pd.registerMemory(buf, Access.LOCAL_WRITE);
      return this;
    }

    void postRecvs() {
      try (RecvRequests rr = new RecvRequests(SLOTS, 1)) {
        for (int i = 0; i < SLOTS; i++) rr.add(100 + i).sge(mr, (long) i * SLOT, SLOT);
        qp.postRecv(rr);
      }
    }

    AddressHandle ah(AddressVector av) {
      AddressHandle ah = pd.createAddressHandle(av);
      ahs.add(ah);
      return ah;
    }

    /** Receive completions polled while waiting for a send's. */
    final List<long[]> received = new ArrayList<>();

    /** Sends {@code data} from the last slot, with its QP number as the immediate (as udaddy). */
    void send(AddressHandle ah, int qpn, int qkey, byte[] data) throws Exception {
      long off = (long) SLOT * SLOTS;
      buf.put(off, data, 0, data.length);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(7, WrOpcode.SEND_WITH_IMM, SendRequests.SIGNALED).sge(mr, off, data.length)
            .immediate(qp.qpNum()).ud(ah, qpn, qkey);
        qp.postSend(sr);
      }
      long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (System.nanoTime() < deadline) {
        for (long[] c : pollCq()) {
          if (c[0] == WcOpcode.SEND.ordinal()) return;
          received.add(c);
        }
        Thread.sleep(1);
      }
      throw new AssertionError(id + ": the send did not complete");
    }

    private List<long[]> pollCq() {
      List<long[]> out = new ArrayList<>();
      int k = cq.poll(wc);
      for (int i = 0; i < k; i++) {
        System.out.println("  " + id + ": " + wc.describe(i));
        assertEquals(WcStatus.SUCCESS, wc.status(i), wc.describe(i));
        out.add(new long[] {wc.opcode(i).ordinal(), wc.byteLength(i), wc.sourceQp(i),
            wc.immediate(i), wc.wrId(i), wc.flags(i)});
      }
      return out;
    }

    /**
     * Up to {@code n} receive completions within {@code within}, as [opcode, byte_len, src_qp,
     * imm, wr_id, flags].
     */
    List<long[]> poll(int n, Duration within) throws InterruptedException {
      List<long[]> out = new ArrayList<>();
      while (out.size() < n && !received.isEmpty()) out.add(received.remove(0));
      long deadline = System.nanoTime() + within.toNanos();
      while (out.size() < n && System.nanoTime() < deadline) {
        List<long[]> got = pollCq();
        for (long[] c : got) {
          if (c[0] != WcOpcode.SEND.ordinal()) out.add(c);
        }
        if (got.isEmpty()) Thread.sleep(1);
      }
      return out;
    }

    /** The one datagram that arrives within 10 s: its data (after the GRH), checked. */
    byte[] receive(int fromQpn, int length) throws Exception {
      List<long[]> got = poll(1, Duration.ofSeconds(10));
      assertEquals(1, got.size(), id + ": no datagram came");
      long[] c = got.get(0);
      assertEquals(WcOpcode.RECV.ordinal(), (int) c[0], "a receive");
      assertEquals(GRH + length, (int) c[1], "byte_len: the GRH and the data");
      assertEquals(fromQpn, (int) c[2], "the source QP");
      assertEquals(fromQpn, (int) c[3], "the immediate: the sender's QP number");
      assertTrue((c[5] & WorkCompletions.FLAG_GRH) != 0, "the GRH flag");
      byte[] data = new byte[length];
      buf.get((c[4] - 100) * SLOT + GRH, data, 0, length);
      return data;
    }

    @Override
    public void close() {
      for (AddressHandle ah : ahs) ah.close();
      if (qp != null) id.destroyQp();
      if (mr != null) mr.close();
      if (cq != null) cq.close();
      if (pd != null) pd.close();
      id.close();
      buf.close();
      wc.close();
    }
  }

  @Test
  void sidrConnectAcceptAndDatagramsBothWays() throws Exception {
    try (CmEventChannel serverCh = provider.createCmEventChannel();
        CmEventChannel clientCh = provider.createCmEventChannel()) {
      CmId listener = serverCh.createId("udp-listener", RdmaPortSpace.UDP);
      assertEquals(RdmaPortSpace.UDP, listener.portSpace());
      listener.bind(at(SERVER, 0));
      listener.listen(4);
      int port = listener.localAddress().getPort();
      System.out.println("UDP listener on " + listener.localAddress());

      Member client = new Member(clientCh.createId("udp-client", RdmaPortSpace.UDP));
      client.id.resolveAddress(at(CLIENT, 0), at(SERVER, port), Duration.ofSeconds(5));
      expect(clientCh, CmEventType.ADDR_RESOLVED);
      client.id.resolveRoute(Duration.ofSeconds(5));
      expect(clientCh, CmEventType.ROUTE_RESOLVED);
      client.withQp();
      // an RC QP on a datagram id is refused before librdmacm sees it, naming both
      RdmaException wrongType = assertThrows(RdmaException.class,
          () -> client.id.createQp(client.pd, QpInitAttributes.of(QpType.RC, client.cq, client.cq)));
      assertEquals(RdmaException.EINVAL, wrongType.errno());
      System.out.println("RC QP on a UDP id: " + wrongType.getMessage());
      assertTrue(wrongType.getMessage().contains("RDMA_PS_UDP")
          && wrongType.getMessage().contains("RC"), wrongType.getMessage());
      assertEquals(QpState.RTS, client.qp.state(), "rdma_create_qp makes a UD QP ready to send");
      assertEquals(UdParameters.UDP_QKEY, client.qp.query().qkey());
      client.postRecvs();
      byte[] hello = ascii("hello, datagram server");
      client.id.connect(ConnectionParameters.withPrivateData(hello));

      CmEvent req = expect(serverCh, CmEventType.CONNECT_REQUEST);
      Member conn = new Member(req.id());
      assertEquals(listener, req.listenId());
      assertEquals("udp-listener", conn.id.context());
      assertEquals(RdmaPortSpace.UDP, conn.id.portSpace());
      assertNull(req.parameters(), "a datagram id's request has no connection parameters");
      assertNotNull(req.ud(), "a datagram id's request carries UdParameters");
      assertArrayEquals(hello, head(req.ud().privateData(), hello.length));
      assertArrayEquals(hello, head(req.privateData(), hello.length));
      System.out.println("request from " + conn.id.remoteAddress() + ": " + req.ud());
      AddressVector back = req.ud().addressVector();
      assertNotNull(back, "the way back to the requester");
      assertTrue(back.global());
      assertEquals(gidOf(CLIENT), back.dgid());
      conn.withQp();
      conn.postRecvs();
      byte[] welcome = ascii("welcome, datagram client");
      conn.id.accept(ConnectionParameters.withPrivateData(welcome));

      CmEvent est = expect(clientCh, CmEventType.ESTABLISHED);
      UdParameters ud = est.ud();
      assertNotNull(ud);
      System.out.println("ESTABLISHED: qpn " + ud.qpNum() + ", qkey 0x"
          + Integer.toHexString(ud.qkey()) + ", " + ud.addressVector());
      assertEquals(conn.qp.qpNum(), ud.qpNum());
      assertEquals(UdParameters.UDP_QKEY, ud.qkey());
      assertArrayEquals(welcome, head(ud.privateData(), welcome.length));
      assertTrue(ud.addressVector().global());
      assertEquals(gidOf(SERVER), ud.addressVector().dgid());
      assertEquals(client.id.portNum(), ud.addressVector().portNum());
      // the SIDR exchange ends at the requester: the passive side gets no ESTABLISHED
      CmEvent passive = serverCh.awaitEvent(Duration.ofSeconds(1));
      assertNull(passive, "the passive side's event after accept: " + passive);
      assertEquals(gidOf(CLIENT), client.id.verbs().queryGid(client.id.portNum(),
          ud.addressVector().sgidIndex()), "ESTABLISHED's vector starts at the client's GID");
      assertEquals(gidOf(SERVER), conn.id.verbs().queryGid(conn.id.portNum(), back.sgidIndex()),
          "the request's way back starts at the server's GID");

      // a datagram each way: the client's with ESTABLISHED's vector, the server's with the
      // request's vector to the client's QP (which the first datagram names)
      AddressHandle toServer = client.ah(ud.addressVector());
      byte[] ping = ascii("ping over SIDR");
      client.send(toServer, ud.qpNum(), ud.qkey(), ping);
      assertArrayEquals(ping, conn.receive(client.qp.qpNum(), ping.length));
      AddressHandle toClient = conn.ah(back);
      byte[] pong = ascii("pong, back the way the request came");
      conn.send(toClient, client.qp.qpNum(), UdParameters.UDP_QKEY, pong);
      assertArrayEquals(pong, client.receive(conn.qp.qpNum(), pong.length));

      // a datagram over the path MTU is refused at post, naming both sizes; the QP goes on
      int mtu = client.id.verbs().queryPort(client.id.portNum()).activeMtu().bytes;
      byte[] big = new byte[mtu + 1];
      RdmaException tooBig = assertThrows(RdmaException.class,
          () -> client.send(toServer, ud.qpNum(), ud.qkey(), big));
      System.out.println("datagram over the MTU: " + tooBig.getMessage());
      assertEquals(RdmaException.EINVAL, tooBig.errno());
      assertTrue(tooBig.getMessage().contains((mtu + 1) + " bytes")
          && tooBig.getMessage().contains(mtu + " bytes"), tooBig.getMessage());
      byte[] exact = new byte[mtu];
      Arrays.fill(exact, (byte) 0x5a);
      client.send(toServer, ud.qpNum(), ud.qkey(), exact);
      assertArrayEquals(exact, conn.receive(client.qp.qpNum(), mtu));
      assertEquals(QpState.RTS, client.qp.state());

      Map<String, Integer> during = NativeSmokeTest.rdmaResources(DEVICE);
      System.out.println("rdma resource show " + DEVICE + " with the pair: " + during);
      assertEquals(baseline.get("cm_id") + 3, during.get("cm_id"));
      assertEquals(baseline.get("qp") + 2, during.get("qp"));
      assertEquals(3, provider.liveResources().cmIds());
      assertEquals(2, provider.liveResources().qps());
      assertEquals(2, provider.liveResources().ahs());
      client.close();
      conn.close();
      listener.close();
    }
    assertEquals(NONE, provider.liveResources());
  }

  @Test
  void rejectedRequestIsUnreachableWithTheRejectsPrivateData() throws Exception {
    try (CmEventChannel serverCh = provider.createCmEventChannel();
        CmEventChannel clientCh = provider.createCmEventChannel()) {
      CmId listener = serverCh.createId("udp-listener", RdmaPortSpace.UDP);
      listener.bind(at(SERVER, 0));
      listener.listen(4);
      int port = listener.localAddress().getPort();
      CmId client = clientCh.createId("udp-client", RdmaPortSpace.UDP);
      client.resolveAddress(at(CLIENT, 0), at(SERVER, port), Duration.ofSeconds(5));
      expect(clientCh, CmEventType.ADDR_RESOLVED);
      client.resolveRoute(Duration.ofSeconds(5));
      expect(clientCh, CmEventType.ROUTE_RESOLVED);
      client.connect(ConnectionParameters.withPrivateData(ascii("let me in")));
      CmEvent req = expect(serverCh, CmEventType.CONNECT_REQUEST);
      // accepting without a QP is refused: the reply carries its number
      RdmaException noQp = assertThrows(RdmaException.class,
          () -> req.id().accept(ConnectionParameters.defaults()));
      System.out.println("accept without a QP: " + noQp.getMessage());
      byte[] no = ascii("not today");
      assertThrows(RdmaException.class, () -> req.id().reject(new byte[137]));
      req.id().reject(no);
      CmEvent e = client.channel().awaitEvent(WAIT);
      System.out.println("after the reject: " + e + " on " + (e == null ? null : e.id()));
      assertNotNull(e);
      assertEquals(CmEventType.UNREACHABLE, e.type());
      assertEquals(2, e.status(), "IB_SIDR_REJECT");
      assertNull(e.ud());
      assertArrayEquals(no, head(e.privateData(), no.length));
      req.id().close();
      client.close();
      listener.close();
    }
    assertEquals(NONE, provider.liveResources());
  }

  @Test
  void noListenerIsUnreachable() throws Exception {
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      // a port nobody listens on: a UDP id bound and released just before
      CmId probe = ch.createId("probe", RdmaPortSpace.UDP);
      probe.bind(at(SERVER, 0));
      int port = probe.localAddress().getPort();
      probe.close();
      CmId client = ch.createId("udp-client", RdmaPortSpace.UDP);
      InetSocketAddress nobody = at(SERVER, port);
      client.resolveAddress(at(CLIENT, 0), nobody, Duration.ofSeconds(5));
      expect(ch, CmEventType.ADDR_RESOLVED);
      client.resolveRoute(Duration.ofSeconds(5));
      expect(ch, CmEventType.ROUTE_RESOLVED);
      long t0 = System.nanoTime();
      client.connect(ConnectionParameters.withPrivateData(ascii("anyone?")));
      CmEvent e = ch.awaitEvent(WAIT);
      System.out.println("SIDR to " + nobody + " (no listener): " + e + " after "
          + (System.nanoTime() - t0) / 1_000_000 + " ms");
      assertNotNull(e);
      assertEquals(CmEventType.UNREACHABLE, e.type());
      assertEquals(1, e.status(), "IB_SIDR_UNSUPPORTED: no listener");
      assertEquals(nobody, e.id().remoteAddress());
      client.close();
    }
    assertEquals(NONE, provider.liveResources());
  }

  @Test
  void multicastTwoMembersOneSendsTheOtherReceivesThenLeaves() throws Exception {
    InetSocketAddress group = at(GROUP, 0);
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      Member a = new Member(ch.createId("member-a", RdmaPortSpace.UDP));
      Member b = new Member(ch.createId("member-b", RdmaPortSpace.UDP));
      a.id.bind(at(SERVER, 0));
      b.id.bind(at(CLIENT, 0));
      a.withQp().postRecvs();
      b.withQp().postRecvs();
      a.id.joinMulticast(group);
      b.id.joinMulticast(group);
      UdParameters ga = null;
      UdParameters gb = null;
      for (int i = 0; i < 2; i++) {
        CmEvent j = expect(ch, CmEventType.MULTICAST_JOIN);
        System.out.println("MULTICAST_JOIN on " + j.id() + ": " + j.ud());
        if (j.id() == a.id) ga = j.ud();
        if (j.id() == b.id) gb = j.ud();
      }
      assertNotNull(ga);
      assertNotNull(gb);
      for (UdParameters g : new UdParameters[] {ga, gb}) {
        assertEquals(UdParameters.MULTICAST_QPN, g.qpNum());
        assertEquals(UdParameters.UDP_QKEY, g.qkey());
        assertTrue(g.addressVector().global());
        // RoCE v2's MGID of an IPv4 group: the group's IPv4-mapped address
        assertEquals(gidOf(GROUP), g.addressVector().dgid());
      }
      assertEquals(gidOf(SERVER), a.id.verbs().queryGid(a.id.portNum(),
          ga.addressVector().sgidIndex()), "a's group vector starts at a's own GID");
      // joining again, a unicast group, or on a connected id: refused naming the group
      RdmaException again = assertThrows(RdmaException.class, () -> a.id.joinMulticast(group));
      assertEquals(RdmaException.EADDRINUSE, again.errno());
      RdmaException unicast = assertThrows(RdmaException.class,
          () -> a.id.joinMulticast(at("192.0.2.77", 0)));
      System.out.println("unicast group: " + unicast.getMessage());
      assertEquals(RdmaException.EINVAL, unicast.errno());
      assertTrue(unicast.getMessage().contains("192.0.2.77"), unicast.getMessage());
      CmId tcp = ch.createId("tcp");
      tcp.bind(at(SERVER, 0));
      RdmaException onTcp = assertThrows(RdmaException.class, () -> tcp.joinMulticast(group));
      assertEquals(RdmaException.EINVAL, onTcp.errno());
      assertTrue(onTcp.getMessage().contains("RDMA_PS_TCP"), onTcp.getMessage());
      RdmaException udOnTcp = assertThrows(RdmaException.class, () -> tcp.createQp(a.pd,
          QpInitAttributes.of(QpType.UD, a.cq, a.cq)));
      System.out.println("UD QP on a TCP id: " + udOnTcp.getMessage());
      assertEquals(RdmaException.EINVAL, udOnTcp.errno());
      assertTrue(udOnTcp.getMessage().contains("RDMA_PS_TCP")
          && udOnTcp.getMessage().contains("UD"), udOnTcp.getMessage());
      tcp.close();
      RdmaException notJoined = assertThrows(RdmaException.class,
          () -> b.id.leaveMulticast(at("239.192.0.8", 0)));
      assertEquals(RdmaException.EADDRNOTAVAIL, notJoined.errno());

      // a sends to the group: b receives it
      AddressHandle toGroup = a.ah(ga.addressVector());
      byte[] hello = ascii("to every member of " + GROUP);
      a.send(toGroup, ga.qpNum(), ga.qkey(), hello);
      assertArrayEquals(hello, b.receive(a.qp.qpNum(), hello.length));
      // as InfiniBand multicast (no IBV_QP_CREATE_BLOCK_SELF_MCAST_LB): every QP attached to
      // the group receives a copy, the sender's own too
      assertArrayEquals(hello, a.receive(a.qp.qpNum(), hello.length), "the sender's own copy");

      // b leaves: the next datagram to the group does not reach it
      b.id.leaveMulticast(group);
      byte[] after = ascii("after b left");
      a.send(toGroup, ga.qpNum(), ga.qkey(), after);
      assertArrayEquals(after, a.receive(a.qp.qpNum(), after.length), "a is still a member");
      assertEquals(List.of(), b.poll(1, Duration.ofSeconds(1)), "b left the group");
      // a does not leave: destroying its QP leaves its groups first (an attached QP would stay)
      b.close();
      a.close();
      Map<String, Integer> now = NativeSmokeTest.rdmaResources(DEVICE);
      assertEquals(baseline.get("qp"), now.get("qp"), "the members' QPs are gone: " + now);
    }
    assertEquals(NONE, provider.liveResources());
  }

  @Test
  void badGroupsAndSpacesFailNamed() throws Exception {
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      for (RdmaPortSpace ps : new RdmaPortSpace[] {RdmaPortSpace.IB, RdmaPortSpace.IPOIB}) {
        RdmaException e = assertThrows(RdmaException.class, () -> ch.createId("x", ps));
        assertEquals(RdmaException.EPROTONOSUPPORT, e.errno());
        assertTrue(e.getMessage().contains("RDMA_PS_" + ps.name()), e.getMessage());
      }
      CmId id = ch.createId("member", RdmaPortSpace.UDP);
      RdmaException unbound = assertThrows(RdmaException.class,
          () -> id.joinMulticast(at(GROUP, 0)));
      System.out.println("join before bind: " + unbound.getMessage());
      assertEquals(RdmaException.EINVAL, unbound.errno());
      id.bind(at(SERVER, 0));
      // an IPv6 group on an IPv4 RoCE v2 port: the kernel refuses it, or its event says so
      InetSocketAddress v6 = new InetSocketAddress(InetAddress.getByName("ff0e::1:7"), 0);
      try {
        id.joinMulticast(v6);
        CmEvent e = ch.awaitEvent(WAIT);
        System.out.println("IPv6 group: " + e);
        assertNotNull(e);
        assertEquals(CmEventType.MULTICAST_ERROR, e.type());
        id.leaveMulticast(v6);
      } catch (RdmaException e) {
        System.out.println("IPv6 group: " + e.getMessage());
        assertTrue(e.getMessage().contains("ff0e"), e.getMessage());
      }
      assertFalse(ch.awaitEvent(Duration.ofMillis(200)) != null, "no stray event");
      id.close();
    }
    assertEquals(NONE, provider.liveResources());
  }
}

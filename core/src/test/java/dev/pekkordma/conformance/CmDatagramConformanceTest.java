package dev.pekkordma.conformance;

import static dev.pekkordma.conformance.CmConformanceTest.ascii;
import static dev.pekkordma.conformance.CmConformanceTest.assertStartsWith;
import static dev.pekkordma.conformance.CmConformanceTest.awaitCm;
import static dev.pekkordma.conformance.CmConformanceTest.cmAddress;
import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Datagram ids (RDMA_PS_UDP) as librdmacm has them: SIDR connect, accept and reject, UD traffic
 * with the address vectors the events carry, multicast groups, and the bad input around them;
 * in one JVM and across two.
 */
class CmDatagramConformanceTest extends ConformanceTest {
  static final Duration T = ConformanceProvider.TIMEOUT;
  static final Duration STARTUP = Duration.ofSeconds(120);
  static final int GRH = 40;
  private static final AtomicInteger GROUPS = new AtomicInteger();

  @BeforeEach
  void needsCmAndUd() {
    requireFeature(Feature.CONNECTION_MANAGER);
    requireFeature(Feature.UD);
  }

  /** A multicast group of its own for each use: 239.77.x.y, x from this JVM's pid. */
  static InetSocketAddress newGroup() {
    int x = (int) (ProcessHandle.current().pid() % 250) + 1;
    int y = GROUPS.incrementAndGet() % 250 + 1;
    try {
      return new InetSocketAddress(InetAddress.getByName("239.77." + x + "." + y), 0);
    } catch (UnknownHostException e) {
      throw new IllegalStateException(e);
    }
  }

  /** RoCEv2's GID of an IPv4 group, as the kernel's CM makes it: ::ffff:a.b.c.d. */
  static Gid mgidOf(InetSocketAddress group) {
    byte[] g = new byte[16];
    g[10] = (byte) 0xff;
    g[11] = (byte) 0xff;
    System.arraycopy(group.getAddress().getAddress(), 0, g, 12, 4);
    return Gid.of(g);
  }

  /** A datagram id and, once created, its PD, CQ, UD QP, buffer and address handles. */
  static final class Dgram implements AutoCloseable {
    final CmId id;
    ProtectionDomain pd;
    CompletionQueue cq;
    CompletionQueue recvCq;
    Region region;
    final List<AddressHandle> ahs = new ArrayList<>();
    /** Groups joined and not left yet: closing leaves them first, as an application must. */
    final List<InetSocketAddress> groups = new ArrayList<>();

    Dgram(CmId id) {
      this.id = id;
    }

    QueuePair qp() {
      return id.qp();
    }

    void createQp() {
      assertNotNull(id.verbs(), "verbs() of a bound, resolved or requested id");
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(32, null);
      recvCq = id.verbs().createCq(32, null);
      QueuePair qp = id.createQp(pd, QpInitAttributes.of(QpType.UD, cq, recvCq).maxSendWr(16)
          .maxRecvWr(16));
      assertSame(qp, id.qp(), "qp() after createQp");
      assertEquals(QpState.RTS, qp.state(), "a datagram id's QP after createQp");
      assertEquals(UdParameters.UDP_QKEY, qp.query().qkey(), "Q_Key of a datagram id's QP");
      region = Region.of(pd, 16384, Access.LOCAL_WRITE);
    }

    AddressHandle ah(AddressVector av) {
      AddressHandle ah = pd.createAddressHandle(av);
      ahs.add(ah);
      return ah;
    }

    void recv(long wrId, int offset) {
      postRecv(qp(), wrId, region, offset, GRH + 1024);
    }

    void sendTo(AddressHandle ah, int qpn, int qkey, long wrId, int offset, int length) {
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(wrId, WrOpcode.SEND, SIGNALED).sge(region.mr, offset, length).ud(ah, qpn, qkey);
        qp().postSend(sr);
      }
    }

    /** The next receive of {@code wrId}: GRH + {@code payload}, from {@code srcQp}. */
    Wc expect(long wrId, int offset, byte[] payload, int srcQp, String what) {
      Wc r = Completions.awaitSuccess(recvCq, what, wrId, WcOpcode.RECV);
      assertEquals(GRH + payload.length, r.byteLen(), what + ": byte_len (GRH + payload) of " + r);
      assertTrue(r.hasGrh(), what + ": GRH flag of " + r);
      assertEquals(srcQp, r.srcQp(), what + ": source QP of " + r);
      assertBytes(payload, region.get(offset + GRH, payload.length), what + ": payload");
      return r;
    }

    void leave(InetSocketAddress group) {
      id.leaveMulticast(group);
      groups.remove(group);
    }

    @Override
    public void close() {
      for (InetSocketAddress g : new ArrayList<>(groups)) leave(g);
      if (id.qp() != null) id.destroyQp();
      for (AddressHandle ah : ahs) ah.close();
      if (region != null) region.close();
      if (recvCq != null) recvCq.close();
      if (cq != null) cq.close();
      if (pd != null) pd.close();
      id.close();
    }
  }

  /** Closes each, keeping the first failure. */
  static void closeAll(AutoCloseable... all) {
    RuntimeException first = null;
    for (AutoCloseable c : all) {
      if (c == null) continue;
      try {
        c.close();
      } catch (Exception e) {
        RuntimeException r = e instanceof RuntimeException ? (RuntimeException) e
            : new RuntimeException(e);
        if (first == null) first = r; else first.addSuppressed(r);
      }
    }
    if (first != null) throw first;
  }

  static void resolve(CmEventChannel ch, CmId id, InetSocketAddress to) {
    id.resolveAddress(null, to, Duration.ofSeconds(2));
    awaitCm(ch, CmEventType.ADDR_RESOLVED, id, "resolve " + to, T);
    id.resolveRoute(Duration.ofSeconds(2));
    awaitCm(ch, CmEventType.ROUTE_RESOLVED, id, "route to " + to, T);
  }

  /** A UDP listener on the CM address and a client id on another channel. */
  final class Sidr implements AutoCloseable {
    final CmEventChannel serverCh = fx.provider.createCmEventChannel();
    final CmEventChannel clientCh = fx.provider.createCmEventChannel();
    final CmId listener = serverCh.createId("udp-listener", RdmaPortSpace.UDP);
    final Dgram client = new Dgram(clientCh.createId("udp-client", RdmaPortSpace.UDP));
    Dgram server;
    final InetSocketAddress address;

    Sidr(boolean listen) {
      listener.bind(new InetSocketAddress(cmAddress(), 0));
      address = new InetSocketAddress(cmAddress(), listener.localAddress().getPort());
      if (listen) listener.listen(4);
    }

    /** Resolves, connects with {@code hello}; returns the server's CONNECT_REQUEST. */
    CmEvent request(byte[] hello) {
      resolve(clientCh, client.id, address);
      client.createQp();
      client.id.connect(ConnectionParameters.withPrivateData(hello));
      CmEvent req = awaitCm(serverCh, CmEventType.CONNECT_REQUEST, null, "server", T);
      assertSame(listener, req.listenId(), "listenId of " + req);
      assertNotSame(listener, req.id(), "a new id for the request");
      assertEquals(RdmaPortSpace.UDP, req.id().portSpace(), "port space of the request's id");
      assertStartsWith(hello, req.privateData(), "private data of the SIDR request");
      assertNotNull(req.ud(), "ud of a datagram id's CONNECT_REQUEST");
      assertStartsWith(hello, req.ud().privateData(), "ud private data of the SIDR request");
      // a SIDR request carries neither: the reply goes to the source QP of what arrives
      assertEquals(0, req.ud().qpNum(), "CONNECT_REQUEST's qp_num");
      assertEquals(0, req.ud().qkey(), "CONNECT_REQUEST's qkey");
      server = new Dgram(req.id());
      return req;
    }

    @Override
    public void close() {
      closeAll(server, client, listener, serverCh, clientCh);
    }
  }

  // ---- ids, addresses, QPs

  @Test
  void udpIdsBindResolveAndMakeUdQpsInTheirOwnPortSpace() {
    CmEventChannel ch = fx.provider.createCmEventChannel();
    CmId udp = ch.createId("udp", RdmaPortSpace.UDP);
    CmId tcp = ch.createId("tcp");
    CmId udpShared = ch.createId("udp-shared", RdmaPortSpace.UDP);
    Dgram other = new Dgram(ch.createId("udp-2", RdmaPortSpace.UDP));
    try {
      assertEquals(RdmaPortSpace.UDP, udp.portSpace(), "portSpace()");
      assertEquals(RdmaPortSpace.TCP, tcp.portSpace(), "portSpace() of createId(context)");
      udp.bind(new InetSocketAddress(cmAddress(), 0));
      int port = udp.localAddress().getPort();
      assertTrue(port > 0, "port after bind(0): " + port);
      assertNotNull(udp.verbs(), "verbs() after bind");
      // RDMA_PS_TCP and RDMA_PS_UDP are separate port spaces: the same number binds in both.
      // The number is one no TCP socket of this machine holds (the software provider's TCP ids
      // are TCP sockets, and any connection of the machine may hold a UDP id's number there).
      int shared = bindToAPortFreeInTcp(udpShared);
      tcp.bind(new InetSocketAddress(cmAddress(), shared));
      assertEquals(shared, tcp.localAddress().getPort(), "a TCP id on a UDP id's port");
      resolve(ch, other.id, new InetSocketAddress(cmAddress(), port));
      assertNotNull(other.id.localAddress(), "local address after resolve");
      other.createQp();
    } finally {
      closeAll(other, udp, udpShared, tcp, ch);
    }
  }

  /** Binds {@code id} to a port that no TCP socket holds as we look; its number. */
  private static int bindToAPortFreeInTcp(CmId id) {
    RdmaException last = null;
    for (int tries = 0; tries < 10; tries++) {
      int port;
      try (java.net.ServerSocket probe = new java.net.ServerSocket(0, 1, cmAddress())) {
        port = probe.getLocalPort();
      } catch (java.io.IOException e) {
        throw new AssertionError("no free TCP port on " + cmAddress(), e);
      }
      try {
        id.bind(new InetSocketAddress(cmAddress(), port));
        return port;
      } catch (RdmaException inUse) { // taken in UDP: another number
        last = inUse;
      }
    }
    throw new AssertionError("ten TCP ports in a row were taken in UDP", last);
  }

  @Test
  void createQpTakesTheQpTypeOfThePortSpace() {
    CmEventChannel ch = fx.provider.createCmEventChannel();
    CmId udp = ch.createId("udp", RdmaPortSpace.UDP);
    CmId tcp = ch.createId("tcp", RdmaPortSpace.TCP);
    ProtectionDomain pd = null;
    CompletionQueue cq = null;
    try {
      udp.bind(new InetSocketAddress(cmAddress(), 0));
      tcp.bind(new InetSocketAddress(cmAddress(), 0));
      pd = udp.verbs().allocPd();
      cq = udp.verbs().createCq(8, null);
      QpInitAttributes rc = QpInitAttributes.of(QpType.RC, cq, cq);
      QpInitAttributes ud = QpInitAttributes.of(QpType.UD, cq, cq);
      ProtectionDomain p = pd;
      assertRdma(RdmaException.EINVAL, () -> udp.createQp(p, rc), "an RC QP on a UDP id",
          "RC", "UDP");
      assertRdma(RdmaException.EINVAL, () -> tcp.createQp(p, ud), "a UD QP on a TCP id",
          "UD", "TCP");
      assertEquals(null, udp.qp(), "no QP after the refusal");
      assertEquals(null, tcp.qp(), "no QP after the refusal");
    } finally {
      closeAll(cq, pd, udp, tcp, ch);
    }
  }

  // ---- SIDR

  @Test
  void sidrConnectAcceptAndDatagramsBothWays() {
    try (Sidr s = new Sidr(true)) {
      CmEvent req = s.request(ascii("hello-sidr"));
      s.server.createQp();
      s.server.recv(100, 0);
      s.client.recv(200, 0);
      byte[] welcome = ascii("welcome-sidr");
      s.server.id.accept(ConnectionParameters.withPrivateData(welcome));
      CmEvent est = awaitCm(s.clientCh, CmEventType.ESTABLISHED, s.client.id, "client", T);
      UdParameters ud = est.ud();
      assertNotNull(ud, "ud of a datagram id's ESTABLISHED");
      assertEquals(s.server.qp().qpNum(), ud.qpNum(), "ESTABLISHED's qp_num: the server QP's");
      assertEquals(UdParameters.UDP_QKEY, ud.qkey(), "ESTABLISHED's qkey");
      assertStartsWith(welcome, ud.privateData(), "ud private data of the accept");
      assertStartsWith(welcome, est.privateData(), "private data of the accept");
      assertNotNull(ud.addressVector(), "ESTABLISHED's address vector");

      byte[] ping = Region.pattern(100, 61);
      s.client.region.put(8192, ping);
      s.client.sendTo(s.client.ah(ud.addressVector()), ud.qpNum(), ud.qkey(), 1, 8192, 100);
      Completions.awaitSuccess(s.client.cq, "client CQ", 1, WcOpcode.SEND);
      Wc in = s.server.expect(100, 0, ping, s.client.qp().qpNum(), "server");

      // back: to the requester's address (the CONNECT_REQUEST's) and its QP (the receive's)
      assertNotNull(req.ud().addressVector(), "CONNECT_REQUEST's address vector");
      byte[] pong = Region.pattern(64, 62);
      s.server.region.put(8192, pong);
      s.server.sendTo(s.server.ah(req.ud().addressVector()), in.srcQp(), UdParameters.UDP_QKEY,
          2, 8192, 64);
      Completions.awaitSuccess(s.server.cq, "server CQ", 2, WcOpcode.SEND);
      s.client.expect(200, 0, pong, s.server.qp().qpNum(), "client");
      // librdmacm gives the accepting side of a datagram id no ESTABLISHED
      CmEvent late = s.serverCh.awaitEvent(ConformanceProvider.QUIET);
      assertTrue(late == null, "no event for the server after its accept: " + late);
    }
  }

  @Test
  void sidrRejectReachesTheRequesterAsUnreachableWithItsPrivateData() {
    try (Sidr s = new Sidr(true)) {
      s.request(ascii("may I"));
      byte[] no = ascii("no: datagrams refused");
      s.server.id.reject(no);
      CmEvent e = awaitCm(s.clientCh, CmEventType.UNREACHABLE, s.client.id, "client", T);
      assertEquals(CmEvent.SIDR_REJECT, e.status(), "SIDR status of " + e);
      assertStartsWith(no, e.privateData(), "private data of the reject");
    }
  }

  @Test
  void sidrToAPortWithoutListenerIsUnreachable() {
    try (Sidr s = new Sidr(false)) {
      InetSocketAddress nobody = s.address;
      s.listener.close(); // the port is free again: nothing there
      resolve(s.clientCh, s.client.id, nobody);
      s.client.createQp();
      s.client.id.connect(ConnectionParameters.defaults());
      CmEvent e = awaitCm(s.clientCh, CmEventType.UNREACHABLE, s.client.id,
          "client sending a SIDR request to " + nobody + " where nobody listens", T);
      assertEquals(CmEvent.SIDR_UNSUPPORTED, e.status(), "SIDR status of " + e);
      assertEquals(nobody, s.client.id.remoteAddress(), "the address the request went to");
    }
  }

  @Test
  void sidrToAPortBoundButNotListenedOnIsAnsweredUnsupportedAtOnce() {
    try (Sidr s = new Sidr(false)) { // the listener's id is bound and does not listen
      resolve(s.clientCh, s.client.id, s.address);
      s.client.createQp();
      s.client.id.connect(ConnectionParameters.withPrivateData(ascii("anyone?")));
      // the id on the port answers (the kernel's CM: IB_SIDR_UNSUPPORTED within milliseconds),
      // well before the requester's own timeout would end it with -ETIMEDOUT
      CmEvent e = awaitCm(s.clientCh, CmEventType.UNREACHABLE, s.client.id,
          "client sending a SIDR request to " + s.address + ", bound but not listened on",
          Duration.ofSeconds(2));
      assertEquals(CmEvent.SIDR_UNSUPPORTED, e.status(), "SIDR status of " + e);
      CmEvent late = s.serverCh.awaitEvent(ConformanceProvider.QUIET);
      assertTrue(late == null, "an event for the id that does not listen: " + late);
    }
  }

  @Test
  void sidrPrivateDataArrivesPaddedToTheWholeMessage() {
    try (Sidr s = new Sidr(true)) {
      byte[] hello = ascii("short hello");
      CmEvent req = s.request(hello);
      assertEquals(180, req.privateData().length, "CONNECT_REQUEST's private data length");
      assertEquals(180, req.ud().privateData().length, "CONNECT_REQUEST's ud private data length");
      assertZerosAfter(hello.length, req.privateData(), "CONNECT_REQUEST's private data");
      s.server.createQp();
      byte[] welcome = ascii("short welcome");
      s.server.id.accept(ConnectionParameters.withPrivateData(welcome));
      CmEvent est = awaitCm(s.clientCh, CmEventType.ESTABLISHED, s.client.id, "client", T);
      assertEquals(136, est.privateData().length, "ESTABLISHED's private data length");
      assertEquals(136, est.ud().privateData().length, "ESTABLISHED's ud private data length");
      assertStartsWith(welcome, est.privateData(), "ESTABLISHED's private data");
      assertZerosAfter(welcome.length, est.privateData(), "ESTABLISHED's private data");
    }
  }

  @Test
  void sidrRejectPrivateDataArrivesPaddedToTheWholeMessage() {
    try (Sidr s = new Sidr(true)) {
      s.request(ascii("may I"));
      byte[] no = ascii("no");
      s.server.id.reject(no);
      CmEvent e = awaitCm(s.clientCh, CmEventType.UNREACHABLE, s.client.id, "client", T);
      assertEquals(136, e.privateData().length, "the reject's private data length");
      assertStartsWith(no, e.privateData(), "the reject's private data");
      assertZerosAfter(no.length, e.privateData(), "the reject's private data");
    }
  }

  private static void assertZerosAfter(int from, byte[] data, String what) {
    for (int i = from; i < data.length; i++) {
      assertEquals(0, data[i], what + ": byte " + i + " after the " + from + " sent");
    }
  }

  @Test
  void aBoundIdsRemoteAddressIsTheUnspecifiedAddressUntilResolved() {
    CmEventChannel ch = fx.provider.createCmEventChannel();
    CmId udp = ch.createId("udp", RdmaPortSpace.UDP);
    CmId tcp = ch.createId("tcp");
    try {
      udp.bind(new InetSocketAddress(cmAddress(), 0));
      tcp.bind(new InetSocketAddress(cmAddress(), 0));
      // the kernel's rdma_bind_addr gives the destination the bound address's family
      InetSocketAddress unspecified = new InetSocketAddress(
          cmAddress() instanceof java.net.Inet6Address ? "::" : "0.0.0.0", 0);
      assertEquals(unspecified, udp.remoteAddress(), "remoteAddress() of a bound datagram id");
      assertEquals(unspecified, tcp.remoteAddress(), "remoteAddress() of a bound id");
    } finally {
      closeAll(udp, tcp, ch);
    }
  }

  @Test
  void oversizedSidrPrivateDataIsRefused() {
    try (Sidr s = new Sidr(true)) {
      resolve(s.clientCh, s.client.id, s.address);
      byte[] big = new byte[181];
      assertRdma(RdmaException.EINVAL,
          () -> s.client.id.connect(ConnectionParameters.withPrivateData(big)),
          "a SIDR request with 181 bytes of private data", "181", "180");
    }
  }

  // ---- UD datagrams of a datagram id

  @Test
  void aDatagramOverThePathMtuIsNeverDelivered() {
    CmEventChannel ch = fx.provider.createCmEventChannel();
    Dgram d = new Dgram(ch.createId("mtu", RdmaPortSpace.UDP));
    try {
      d.id.bind(new InetSocketAddress(cmAddress(), 0));
      d.createQp();
      int mtu = d.id.verbs().queryPort(d.id.portNum()).activeMtu().bytes;
      int size = mtu + 1;
      Region big = Region.of(d.pd, 2 * size + 2 * GRH, Access.LOCAL_WRITE);
      try {
        postRecv(d.qp(), 7, big, 0, size + GRH);
        AddressHandle self = d.ah(fx.loopback());
        try (SendRequests sr = new SendRequests(1, 1)) {
          sr.add(8, WrOpcode.SEND, SIGNALED).sge(big.mr, size + GRH, size)
              .ud(self, d.qp().qpNum(), UdParameters.UDP_QKEY);
          try {
            d.qp().postSend(sr);
          } catch (RdmaException e) {
            // refused at post: the message names both sizes
            assertEquals(RdmaException.EINVAL, e.errno(), e.getMessage());
            assertMentions(e, "a UD send of " + size + " bytes over the MTU of " + mtu,
                String.valueOf(size), String.valueOf(mtu));
            return;
          }
        }
        // taken (rxe emits no packet for it, C10-93.1.1): it must not arrive
        List<Wc> wcs = Completions.drain(d.recvCq, ConformanceProvider.QUIET);
        for (Wc w : wcs) {
          assertTrue(!(w.ok() && w.opcode() == WcOpcode.RECV),
              "a datagram of " + size + " bytes over the MTU of " + mtu + " arrived: " + w);
        }
      } finally {
        if (d.id.qp() != null) d.id.destroyQp();
        big.close();
      }
    } finally {
      closeAll(d, ch);
    }
  }

  // ---- multicast

  /** Joins {@code group}; checks MULTICAST_JOIN's ud; returns it. */
  static UdParameters join(CmEventChannel ch, Dgram m, InetSocketAddress group) {
    m.id.joinMulticast(group);
    m.groups.add(group);
    CmEvent j = awaitCm(ch, CmEventType.MULTICAST_JOIN, m.id, "join " + group, T);
    UdParameters ud = j.ud();
    assertNotNull(ud, "ud of MULTICAST_JOIN");
    assertEquals(UdParameters.MULTICAST_QPN, ud.qpNum(), "MULTICAST_JOIN's qp_num");
    assertEquals(UdParameters.UDP_QKEY, ud.qkey(), "MULTICAST_JOIN's qkey");
    assertTrue(ud.addressVector().global(), "MULTICAST_JOIN's address vector has a GRH");
    assertEquals(mgidOf(group), ud.addressVector().dgid(),
        "MULTICAST_JOIN's group GID (RoCEv2: ::ffff:a.b.c.d)");
    return ud;
  }

  static Dgram member(CmEventChannel ch, String name) {
    Dgram m = new Dgram(ch.createId(name, RdmaPortSpace.UDP));
    m.id.bind(new InetSocketAddress(cmAddress(), 0));
    m.createQp();
    return m;
  }

  @Test
  void multicastReachesEveryMemberAndNotOneThatLeft() {
    InetSocketAddress group = newGroup();
    CmEventChannel ch = fx.provider.createCmEventChannel();
    Dgram a = null;
    Dgram b = null;
    Dgram c = null;
    try {
      a = member(ch, "a");
      b = member(ch, "b");
      UdParameters ud = join(ch, a, group);
      join(ch, b, group);
      AddressHandle toGroup = a.ah(ud.addressVector());
      b.recv(1, 0);
      byte[] first = Region.pattern(64, 71);
      a.region.put(8192, first);
      a.sendTo(toGroup, ud.qpNum(), ud.qkey(), 10, 8192, 64);
      Completions.awaitSuccess(a.cq, "sender's CQ", 10, WcOpcode.SEND);
      b.expect(1, 0, first, a.qp().qpNum(), "member b");

      c = member(ch, "c");
      join(ch, c, group);
      b.recv(2, 2048);
      c.recv(3, 0);
      byte[] second = Region.pattern(100, 72);
      a.region.put(8192, second);
      a.sendTo(toGroup, ud.qpNum(), ud.qkey(), 11, 8192, 100);
      b.expect(2, 2048, second, a.qp().qpNum(), "member b");
      c.expect(3, 0, second, a.qp().qpNum(), "member c");

      b.leave(group);
      b.recv(4, 4096);
      c.recv(5, 2048);
      byte[] third = Region.pattern(32, 73);
      a.region.put(8192, third);
      a.sendTo(toGroup, ud.qpNum(), ud.qkey(), 12, 8192, 32);
      c.expect(5, 2048, third, a.qp().qpNum(), "member c");
      List<Wc> atB = Completions.drain(b.recvCq, ConformanceProvider.QUIET);
      assertTrue(atB.stream().noneMatch(w -> w.opcode() == WcOpcode.RECV && w.ok()),
          "b left the group, yet received: " + atB);
      c.leave(group);
      a.leave(group);
    } finally {
      closeAll(a, b, c, ch);
    }
  }

  /** mckey's order: bind, resolve the group as the destination (port 0), then join. */
  @Test
  void aBoundIdResolvesAGroupAndJoinsIt() {
    InetSocketAddress group = newGroup();
    CmEventChannel ch = fx.provider.createCmEventChannel();
    Dgram sender = new Dgram(ch.createId("mckey-sender", RdmaPortSpace.UDP));
    Dgram member = null;
    try {
      InetSocketAddress source = new InetSocketAddress(cmAddress(), 0);
      sender.id.bind(source);
      sender.id.resolveAddress(sender.id.localAddress(), group, Duration.ofSeconds(2));
      awaitCm(ch, CmEventType.ADDR_RESOLVED, sender.id, "resolving group " + group, T);
      assertEquals(group, sender.id.remoteAddress(), "remoteAddress() after resolving a group");
      sender.createQp();
      UdParameters ud = join(ch, sender, group);
      member = member(ch, "mckey-member");
      join(ch, member, group);
      member.recv(1, 0);
      byte[] hello = Region.pattern(48, 74);
      sender.region.put(8192, hello);
      sender.sendTo(sender.ah(ud.addressVector()), ud.qpNum(), ud.qkey(), 5, 8192, 48);
      Completions.awaitSuccess(sender.cq, "sender's CQ", 5, WcOpcode.SEND);
      member.expect(1, 0, hello, sender.qp().qpNum(), "the member");
    } finally {
      closeAll(member, sender, ch);
    }
  }

  @Test
  void joinMulticastNamesWhatIsWrongWithTheGroupOrTheId() {
    InetSocketAddress group = newGroup();
    CmEventChannel ch = fx.provider.createCmEventChannel();
    CmId fresh = ch.createId("fresh", RdmaPortSpace.UDP);
    CmId bound = ch.createId("bound", RdmaPortSpace.UDP);
    CmId tcp = ch.createId("tcp");
    try {
      String name = group.getAddress().getHostAddress();
      assertRdma(RdmaException.EINVAL, () -> fresh.joinMulticast(group),
          "joining before bind or resolve", name);
      bound.bind(new InetSocketAddress(cmAddress(), 0));
      InetSocketAddress unicast = new InetSocketAddress(cmAddress(), 0);
      assertRdma(RdmaException.EINVAL, () -> bound.joinMulticast(unicast),
          "joining a unicast address", cmAddress().getHostAddress());
      tcp.bind(new InetSocketAddress(cmAddress(), 0));
      assertRdma(RdmaException.EINVAL, () -> tcp.joinMulticast(group), "joining on a TCP id",
          name);
      assertRdma(RdmaException.EADDRNOTAVAIL, () -> bound.leaveMulticast(group),
          "leaving a group never joined", name);
    } finally {
      closeAll(fresh, bound, tcp, ch);
    }
  }

  @Test
  void aJoinedQpIsLeftBeforeItIsDestroyedAndDestroyingAnIdLeavesItsGroups() {
    InetSocketAddress group = newGroup();
    CmEventChannel ch = fx.provider.createCmEventChannel();
    Dgram withQp = null;
    CmId withoutQp = ch.createId("no-qp", RdmaPortSpace.UDP);
    try {
      withQp = member(ch, "with-qp");
      join(ch, withQp, group);
      Dgram m = withQp;
      assertRdma(RdmaException.EBUSY, m.id::destroyQp,
          "destroying a QP still attached to a group", group.getAddress().getHostAddress());
      m.leave(group);
      m.id.destroyQp();
      // an id without a QP joins (nothing to attach) and leaves with its destruction
      withoutQp.bind(new InetSocketAddress(cmAddress(), 0));
      withoutQp.joinMulticast(group);
      awaitCm(ch, CmEventType.MULTICAST_JOIN, withoutQp, "join without a QP", T);
      withoutQp.close();
    } finally {
      closeAll(withQp, withoutQp, ch);
    }
  }

  // ---- across processes

  @Test
  void sidrWithAPeerProcess() throws Exception {
    try (PeerProcess peer = PeerProcess.start(CmDatagramPeerMain.class, "sidr")) {
      int port = Integer.parseInt(peer.awaitLine("LISTENING ", STARTUP));
      CmEventChannel ch = fx.provider.createCmEventChannel();
      Dgram me = new Dgram(ch.createId("cross-process-sidr", RdmaPortSpace.UDP));
      try {
        resolve(ch, me.id, new InetSocketAddress(cmAddress(), port));
        me.createQp();
        me.recv(1, 0);
        me.id.connect(ConnectionParameters.withPrivateData(ascii(CmDatagramPeerMain.HELLO)));
        CmEvent est = awaitCm(ch, CmEventType.ESTABLISHED, me.id, "SIDR with the peer", T);
        assertStartsWith(ascii(CmDatagramPeerMain.WELCOME), est.ud().privateData(),
            "the peer's accept");
        byte[] ping = ascii("datagram from the parent");
        me.region.put(8192, ping);
        me.sendTo(me.ah(est.ud().addressVector()), est.ud().qpNum(), est.ud().qkey(), 2, 8192,
            ping.length);
        Completions.awaitSuccess(me.cq, "CQ", 2, WcOpcode.SEND);
        me.expect(1, 0, concat(ascii("echo:"), ping), est.ud().qpNum(), "the peer's echo");
      } catch (AssertionError | RuntimeException e) {
        throw peer.withOutput(e);
      } finally {
        closeAll(me, ch);
      }
      peer.awaitLine("PEER OK", T);
      assertEquals(0, peer.awaitExit(T), "peer exit code; output:\n" + peer.output());
    }
  }

  @Test
  void multicastWithAPeerProcess() throws Exception {
    InetSocketAddress group = newGroup();
    try (PeerProcess peer = PeerProcess.start(CmDatagramPeerMain.class, "multicast",
        group.getAddress().getHostAddress())) {
      int peerQpn = Integer.parseInt(peer.awaitLine("JOINED ", STARTUP));
      CmEventChannel ch = fx.provider.createCmEventChannel();
      Dgram me = null;
      try {
        me = member(ch, "cross-process-member");
        UdParameters ud = join(ch, me, group);
        for (int i = 0; i < 4; i++) me.recv(1 + i, i * 2048);
        byte[] ping = ascii("to the group from the parent");
        me.region.put(12288, ping);
        me.sendTo(me.ah(ud.addressVector()), ud.qpNum(), ud.qkey(), 9, 12288, ping.length);
        Completions.awaitSuccess(me.cq, "CQ", 9, WcOpcode.SEND);
        assertEquals(PeerProcess.hex(ping), peer.awaitLine("GOT ", T),
            "what the peer's member received");
        // the peer answers to the group: its datagram reaches this process's member
        Wc echo = awaitFrom(me, peerQpn);
        byte[] expected = concat(ascii("echo:"), ping);
        assertEquals(GRH + expected.length, echo.byteLen(), echo.toString());
        assertBytes(expected, me.region.get((int) (echo.wrId() - 1) * 2048 + GRH,
            expected.length), "the peer's answer to the group");
        me.leave(group);
      } catch (AssertionError | RuntimeException e) {
        throw peer.withOutput(e);
      } finally {
        closeAll(me, ch);
      }
      peer.awaitLine("PEER OK", T);
      assertEquals(0, peer.awaitExit(T), "peer exit code; output:\n" + peer.output());
    }
  }

  /** The receive from {@code srcQp} (a member that sends may also hear itself). */
  private static Wc awaitFrom(Dgram me, int srcQp) {
    long deadline = System.nanoTime() + T.toNanos();
    List<Wc> others = new ArrayList<>();
    while (System.nanoTime() < deadline) {
      for (Wc w : Completions.drain(me.recvCq, Duration.ofMillis(50))) {
        if (w.ok() && w.opcode() == WcOpcode.RECV && w.srcQp() == srcQp) return w;
        others.add(w);
      }
    }
    return fail("no datagram from QP " + srcQp + " within " + T.toMillis() + " ms; got "
        + others);
  }
}

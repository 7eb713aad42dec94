package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import dev.pekkordma.memory.OffHeapBuffer;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.MulticastSocket;
import java.net.NetworkInterface;
import java.time.Duration;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * What a peer we do not control may send a datagram id: garbage and forged SIDR messages to a
 * listener, requests sent again, and garbage or oversized datagrams on the fabric's multicast
 * port. Each is refused (logged naming the sender) or answered as the protocol says; nothing
 * kills a thread, and real traffic goes on after it.
 */
class HostileDatagramPeerTest extends CmFixture {
  private static final Gid GID = Gid.parse("fe80::7f00:1:1234:1");
  private static final int MULTICAST_PORT = 47910;

  private CmId udpListener(CmEventChannel ch) {
    CmId l = ch.createId("udp-listener", RdmaPortSpace.UDP);
    l.bind(LOOPBACK_ANY_PORT);
    l.listen(8);
    return l;
  }

  private static void send(DatagramSocket s, byte[] b, int port) throws Exception {
    s.send(new DatagramPacket(b, b.length, InetAddress.getLoopbackAddress(), port));
  }

  /** A UD QP on a datagram id, with a buffer: what accept and multicast need. */
  private static final class Ud implements AutoCloseable {
    final CmId id;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final OffHeapBuffer buffer = OffHeapBuffer.allocate(8192);
    final MemoryRegion mr;
    AddressHandle ah;

    Ud(CmId id) {
      this.id = id;
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(16, null);
      id.createQp(pd, QpInitAttributes.of(QpType.UD, cq, cq));
      mr = pd.registerMemory(buffer.address(), buffer.length(),
          dev.pekkordma.verbs.Access.LOCAL_WRITE);
    }

    QueuePair qp() {
      return id.qp();
    }

    void recv(long wrId) {
      try (RecvRequests r = new RecvRequests(1, 1)) {
        r.add(wrId).sge(mr, 0, 4096);
        qp().postRecv(r);
      }
    }

    /** Completions within {@code within}: "wrId status len". */
    String poll(Duration within) {
      long deadline = System.nanoTime() + within.toNanos();
      StringBuilder got = new StringBuilder();
      try (WorkCompletions wc = new WorkCompletions(8)) {
        while (System.nanoTime() < deadline) {
          int n = cq.poll(wc);
          for (int i = 0; i < n; i++) {
            got.append(wc.wrId(i)).append(' ').append(wc.statusCode(i)).append(' ')
                .append(wc.byteLength(i)).append(';');
          }
          if (got.length() > 0) return got.toString();
          Thread.onSpinWait();
        }
      }
      return got.toString();
    }

    @Override
    public void close() {
      id.destroyQp();
      if (ah != null) ah.close();
      mr.close();
      cq.close();
      pd.close();
      id.close();
      buffer.close();
    }
  }

  @Test
  void garbageToAUdpListenerIsRefusedAndLoggedThenARealRequestWorks() throws Exception {
    CmEventChannel ch = channel();
    CmId listener = udpListener(ch);
    int port = listener.localAddress().getPort();
    try (LogCapture logs = new LogCapture(); DatagramSocket raw = new DatagramSocket(0,
        InetAddress.getLoopbackAddress())) {
      Random random = new Random(7);
      for (int i = 0; i < 50; i++) {
        byte[] noise = new byte[random.nextInt(300)];
        random.nextBytes(noise);
        send(raw, noise, port);
      }
      byte[] req = SidrMessage.req(1, GID, new byte[3]).encode();
      byte[] badGid = req.clone();
      Arrays.fill(badGid, 9, 25, (byte) 0); // a zero GID
      send(raw, badGid, port);
      byte[] tooLong = Arrays.copyOf(req, req.length + 5);
      send(raw, tooLong, port);
      expectNone(ch, Duration.ofMillis(300));
      assertTrue(logs.warnings().stream().anyMatch(w -> w.contains("refused a SIDR datagram")
          && w.contains("127.0.0.1:" + raw.getLocalPort())), "refusals name the sender: "
          + logs.warnings());

      // a real requester still gets through
      CmEventChannel clientCh = channel();
      CmId client = clientCh.createId("client", RdmaPortSpace.UDP);
      client.resolveAddress(null, listener.localAddress(), WAIT);
      expect(clientCh, CmEventType.ADDR_RESOLVED);
      client.resolveRoute(WAIT);
      expect(clientCh, CmEventType.ROUTE_RESOLVED);
      client.connect(ConnectionParameters.defaults());
      CmEvent r = expect(ch, CmEventType.CONNECT_REQUEST);
      r.id().reject(new byte[] {1, 2});
      CmEvent u = expect(clientCh, CmEventType.UNREACHABLE);
      assertEquals(CmEvent.SIDR_REJECT, u.status());
      r.id().close();
      client.close();
    } finally {
      listener.close();
    }
  }

  @Test
  void aRequestSentAgainGetsOneConnectRequestAndTheSameReply() throws Exception {
    CmEventChannel ch = channel();
    CmId listener = udpListener(ch);
    int port = listener.localAddress().getPort();
    try (DatagramSocket raw = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
      raw.setSoTimeout(5000);
      byte[] req = SidrMessage.req(77, GID, "again".getBytes()).encode();
      send(raw, req, port);
      CmEvent r = expect(ch, CmEventType.CONNECT_REQUEST);
      assertNotNull(r.ud());
      assertEquals(GID, r.ud().addressVector().dgid(), "the requester's GID");
      assertEquals(new InetSocketAddress(InetAddress.getLoopbackAddress(), raw.getLocalPort()),
          r.id().remoteAddress(), "the requester's address");
      send(raw, req, port); // the REP is not out yet: nothing new
      expectNone(ch, Duration.ofMillis(300));
      try (Ud server = new Ud(r.id())) {
        server.id.accept(ConnectionParameters.withPrivateData(new byte[] {5}));
        byte[] first = receive(raw);
        SidrMessage rep = SidrMessage.parse(first, first.length);
        assertEquals(SidrMessage.SUCCESS, rep.status());
        assertEquals(77, rep.requestId());
        assertEquals(server.qp().qpNum(), rep.qpn());
        assertEquals(UdParameters.UDP_QKEY, rep.qkey());
        send(raw, req, port); // our REP was lost, say: the same one comes again
        assertArrayEquals(first, receive(raw));
        expectNone(ch, Duration.ofMillis(300));
      }
    } finally {
      listener.close();
    }
  }

  /** A multicast datagram of the fabric (see MulticastWire), from another process. */
  private static byte[] datagram(byte[] mgid, int srcQpn, int qkey, int length) {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(60 + length);
    b.putInt(0x734d4331).putLong(1).put(mgid).put(GID.toBytes()).putInt(srcQpn).putInt(qkey)
        .put((byte) WrOpcode.SEND.code).put((byte) 0).putShort((short) length).putInt(0);
    return b.array();
  }

  private static byte[] receive(DatagramSocket s) throws Exception {
    DatagramPacket p = new DatagramPacket(new byte[512], 512);
    s.receive(p);
    return Arrays.copyOf(p.getData(), p.getLength());
  }

  @Test
  void garbageOnTheMulticastPortHurtsNoMember() throws Exception {
    InetAddress group = InetAddress.getByName("239.77.251." + (1 + new Random().nextInt(200)));
    InetSocketAddress g = new InetSocketAddress(group, 0);
    // ports of 1024 bytes: a datagram larger than that is refused before it is copied
    dev.pekkordma.verbs.RdmaProvider small = newProvider("pekko-rdma.soft.mtu = 1024");
    try {
      CmEventChannel ch = channel(small);
      CmId a = ch.createId("a", RdmaPortSpace.UDP);
      a.bind(LOOPBACK_ANY_PORT);
      CmId b = ch.createId("b", RdmaPortSpace.UDP);
      b.bind(LOOPBACK_ANY_PORT);
      try (Ud sender = new Ud(a); Ud member = new Ud(b);
          MulticastSocket raw = new MulticastSocket()) {
        raw.setNetworkInterface(
            NetworkInterface.getByInetAddress(InetAddress.getLoopbackAddress()));
        a.joinMulticast(g);
        UdParameters ud = expect(ch, CmEventType.MULTICAST_JOIN).ud();
        b.joinMulticast(g);
        expect(ch, CmEventType.MULTICAST_JOIN);
        try {
          member.recv(1);
          Random random = new Random(11);
          for (int i = 0; i < 30; i++) {
            byte[] noise = new byte[random.nextInt(200)];
            random.nextBytes(noise);
            raw.send(new DatagramPacket(noise, noise.length, group, MULTICAST_PORT));
          }
          byte[] mgid = dev.pekkordma.verbs.Gid.ipv4Mapped((java.net.Inet4Address) group).toBytes();
          // well formed, from another process, but over the members' MTU
          byte[] big = datagram(mgid, 5, UdParameters.UDP_QKEY, 2048);
          raw.send(new DatagramPacket(big, big.length, group, MULTICAST_PORT));
          // well formed with the wrong Q_Key: dropped as any UD receive would drop it
          byte[] wrongKey = datagram(mgid, 5, 0x1111, 8);
          raw.send(new DatagramPacket(wrongKey, wrongKey.length, group, MULTICAST_PORT));
          // well formed, but sent to the port by unicast: not the group's, not read
          byte[] good = datagram(mgid, 5, UdParameters.UDP_QKEY, 24);
          raw.send(new DatagramPacket(good, good.length, InetAddress.getLoopbackAddress(),
              MULTICAST_PORT));
          assertEquals("", member.poll(Duration.ofMillis(300)), "nothing for the member");
          // the same to the group from another process arrives
          raw.send(new DatagramPacket(good, good.length, group, MULTICAST_PORT));
          assertEquals("1 0 64;", member.poll(WAIT), "the member's receive (GRH + 24 bytes)");

          // and so does a member's of this process
          member.recv(2);
          sender.ah = sender.pd.createAddressHandle(ud.addressVector());
          try (SendRequests sr = new SendRequests(1, 1)) {
            sr.add(9, WrOpcode.SEND, 0).sge(sender.mr, 0, 16).ud(sender.ah,
                UdParameters.MULTICAST_QPN, UdParameters.UDP_QKEY);
            sender.qp().postSend(sr);
          }
          assertEquals("2 0 56;", member.poll(WAIT), "the member's receive (GRH + 16 bytes)");
        } finally {
          a.leaveMulticast(g);
          b.leaveMulticast(g);
        }
      }
      ch.close();
    } finally {
      small.close();
    }
  }
}

package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Two JVM processes: plain verbs over an out-of-band socket, and the connection manager. */
class CrossProcessConformanceTest extends ConformanceTest {
  /** A JVM's start, up to its first line; under the Soft-RoCE VM's emulation, beside another
   *  JVM and the host's load, that once took over 30 s. */
  private static final Duration STARTUP = Duration.ofSeconds(120);
  private static final Duration T = ConformanceProvider.TIMEOUT;

  @Test
  void verbsBetweenTwoProcesses() throws Exception {
    ProtectionDomain pd = fx.context.allocPd();
    CompletionQueue sendCq = fx.context.createCq(16, null);
    CompletionQueue recvCq = fx.context.createCq(16, null);
    QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, sendCq, recvCq));
    Region r = Region.of(pd, 8192, Link.ALL_REMOTE);
    try (PeerProcess peer = PeerProcess.start(VerbsPeerMain.class)) {
      int port = Integer.parseInt(peer.awaitLine("PORT ", STARTUP));
      byte[] written = Region.pattern(256, 7);
      byte[] forPeerToRead = Region.pattern(256, 11);
      r.put(0, written).put(2048, forPeerToRead).put(3000, "done".getBytes(
          StandardCharsets.US_ASCII));
      qp.modify(QpAttributes.toInit(fx.port, Link.ALL_REMOTE));
      postRecv(qp, 50, r, 4096, 512);
      try {
        exchange(peer, port, qp, sendCq, recvCq, r, written, forPeerToRead);
      } catch (AssertionError | RuntimeException e) {
        throw peer.withOutput(e);
      }
      peer.awaitLine("PEER OK", T);
      assertEquals(0, peer.awaitExit(T), "peer exit code; output:\n" + peer.output());
    } finally {
      r.close();
      qp.close();
      recvCq.close();
      sendCq.close();
      pd.close();
    }
  }

  private void exchange(PeerProcess peer, int port, QueuePair qp, CompletionQueue sendCq,
      CompletionQueue recvCq, Region r, byte[] written, byte[] forPeerToRead) throws Exception {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
      s.setSoTimeout(30_000);
      BufferedReader in = new BufferedReader(
          new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
      PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.US_ASCII);
      int psn = 0x000777;
      out.println(VerbsPeerMain.describe(qp, psn, fx.endpoint, r));
      VerbsPeerMain.Remote peerQp = VerbsPeerMain.Remote.parse(in.readLine());
      System.out.println("[conformance] " + testName + ": peer QP " + peerQp);
      Link.defaults().sqPsn(psn).bringUp(qp, fx.attributes, fx.port,
          fx.addressTo(peerQp.gid(), peerQp.lid()), peerQp.qpn(), peerQp.psn(), fx.mtu());
      out.println("READY");
      assertEquals("", VerbsPeerMain.expectLine(in, "READY"), "peer READY");

      try (SendRequests sr = new SendRequests(2, 1)) {
        sr.add(1, WrOpcode.RDMA_WRITE, SIGNALED).sge(r.mr, 0, 256)
            .rdma(peerQp.addr(), peerQp.rkey());
        sr.add(2, WrOpcode.SEND, SIGNALED).sge(r.mr, 3000, 4);
        qp.postSend(sr);
      }
      Completions.awaitSuccess(sendCq, "send CQ", 1, WcOpcode.RDMA_WRITE);
      Completions.awaitSuccess(sendCq, "send CQ", 2, WcOpcode.SEND);
      Wc back = Completions.awaitSuccess(recvCq, "recv CQ (peer's write with immediate)", 50,
          WcOpcode.RECV_RDMA_WITH_IMM);
      assertEquals(VerbsPeerMain.IMM, back.imm(), "immediate from the peer: " + back);
      assertEquals(256, back.byteLen(), back.toString());
      assertBytes(written, r.get(1024, 256),
          "bytes the peer wrote back (those this process wrote into the peer)");
      assertEquals(PeerProcess.hex(forPeerToRead), VerbsPeerMain.expectLine(in, "READ"),
          "what the peer read from this process by RDMA READ");
      VerbsPeerMain.expectLine(in, "DONE");
      out.println("BYE");
    }
  }

  @Test
  void cmBetweenTwoProcesses() throws Exception {
    requireFeature(Feature.CONNECTION_MANAGER);
    try (PeerProcess peer = PeerProcess.start(CmPeerMain.class)) {
      int port = Integer.parseInt(peer.awaitLine("LISTENING ", STARTUP));
      CmEventChannel ch = fx.provider.createCmEventChannel();
      CmConformanceTest.Side me = new CmConformanceTest.Side(ch.createId("cross-process"));
      try {
        InetSocketAddress server = new InetSocketAddress(CmConformanceTest.cmAddress(), port);
        me.id.resolveAddress(null, server, Duration.ofSeconds(2));
        CmConformanceTest.awaitCm(ch, CmEventType.ADDR_RESOLVED, me.id, "resolve " + server, T);
        me.id.resolveRoute(Duration.ofSeconds(2));
        CmConformanceTest.awaitCm(ch, CmEventType.ROUTE_RESOLVED, me.id, "route", T);
        me.createQp();
        postRecv(me.qp(), 1, me.region, 5000, 256);
        postRecv(me.qp(), 2, me.region, 5500, 512);
        me.id.connect(ConnectionParameters.withPrivateData(
            CmPeerMain.HELLO.getBytes(StandardCharsets.US_ASCII)));
        talk(me, ch);
      } catch (AssertionError | RuntimeException e) {
        throw peer.withOutput(e);
      } finally {
        try {
          me.close();
        } finally {
          ch.close();
        }
      }
      peer.awaitLine("PEER OK", T);
      assertEquals(0, peer.awaitExit(T), "peer exit code; output:\n" + peer.output());
    }
  }

  private void talk(CmConformanceTest.Side me, CmEventChannel ch) {
    CmEvent est = CmConformanceTest.awaitCm(ch, CmEventType.ESTABLISHED, me.id, "connect", T);
    assertTrue(est.privateData() != null && est.privateData().length >= 16,
        "accept private data with the peer's buffer: " + est);
    ByteBuffer info = ByteBuffer.wrap(est.privateData());
    long addr = info.getLong();
    int rkey = info.getInt();
    int length = info.getInt();
    assertEquals(8192, length, "peer buffer length from the private data");

    byte[] hello = "hello from the parent".getBytes(StandardCharsets.US_ASCII);
    me.region.put(0, hello);
    send(me.qp(), 10, SIGNALED, me.region, 0, hello.length);
    Completions.awaitSuccess(me.cq, "CQ", 10, WcOpcode.SEND);
    Wc echo = Completions.awaitSuccess(me.recvCq, "recv CQ (echo)", 1, WcOpcode.RECV);
    byte[] expected = concat("echo:".getBytes(StandardCharsets.US_ASCII), hello);
    assertEquals(expected.length, echo.byteLen(), echo.toString());
    assertBytes(expected, me.region.get(5000, expected.length), "echo from the peer");

    byte[] written = Region.pattern(256, 5);
    me.region.put(1024, written);
    write(me.qp(), 11, SIGNALED, me.region, 1024, 256, addr, rkey);
    Completions.awaitSuccess(me.cq, "CQ", 11, WcOpcode.RDMA_WRITE);
    read(me.qp(), 12, SIGNALED, me.region, 2048, 256, addr + CmPeerMain.READ_OFFSET, rkey);
    Completions.awaitSuccess(me.cq, "CQ", 12, WcOpcode.RDMA_READ);
    assertBytes(Region.pattern(256, CmPeerMain.PATTERN_SEED), me.region.get(2048, 256),
        "RDMA READ of the peer's buffer");

    me.region.put(3000, "check".getBytes(StandardCharsets.US_ASCII));
    send(me.qp(), 13, SIGNALED, me.region, 3000, 5);
    Completions.awaitSuccess(me.cq, "CQ", 13, WcOpcode.SEND);
    Wc copy = Completions.awaitSuccess(me.recvCq, "recv CQ (peer's buffer)", 2, WcOpcode.RECV);
    assertEquals(256, copy.byteLen(), copy.toString());
    assertBytes(written, me.region.get(5500, 256),
        "the peer's buffer after this process's RDMA WRITE");

    CmConformanceTest.awaitCm(ch, CmEventType.DISCONNECTED, me.id,
        "the peer disconnects", T);
  }
}

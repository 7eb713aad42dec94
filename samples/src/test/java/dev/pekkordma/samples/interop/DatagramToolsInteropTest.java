package dev.pekkordma.samples.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.samples.interop.DatagramPeer.Datagram;
import dev.pekkordma.samples.interop.DatagramPeer.DatagramsLost;
import dev.pekkordma.samples.interop.DatagramPeer.PeerFailure;
import dev.pekkordma.samples.interop.DatagramPeer.Result;
import dev.pekkordma.samples.interop.RealToolsInteropTest.Tool;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Our datagram peer ({@link DatagramPeer}, the public API only) against rdma-core's {@code
 * udaddy} (SIDR on RDMA_PS_UDP, ten 100-byte datagrams each way) and {@code mckey} (ten
 * datagrams to an IPv4 multicast group), each tool in both its roles, on the native provider
 * over rxe0 in the Soft-RoCE VM ({@code run-native-tests.sh} sets {@code pekko-rdma.interop=true}
 * and the CM addresses). The tools run as child processes; their exit status, their summary
 * lines and what crossed are checked, and our resources are back where they were.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.interop", matches = "true")
@Timeout(300)
class DatagramToolsInteropTest {
  private static final ResourceCounts NONE = new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0);
  private static final Duration TOOL_TIMEOUT = Duration.ofSeconds(120);
  private static final Duration PEER_TIMEOUT = Duration.ofSeconds(60);
  private static final String CM_ADDRESS =
      System.getProperty("pekko-rdma.test.cm-address", "192.0.2.1");
  private static final String CM_SOURCE =
      System.getProperty("pekko-rdma.test.cm-source", "192.0.2.2");
  private static final String GROUP =
      System.getProperty("pekko-rdma.test.multicast-group", "239.192.0.9");

  private final ByteArrayOutputStream ours = new ByteArrayOutputStream();
  private final PrintStream oursOut = new PrintStream(ours, true, StandardCharsets.UTF_8);

  private static void log(String line) {
    RealToolsInteropTest.log(line);
  }

  /** The tool printed its summary: every transfer done, status 0. */
  private static void assertToolSummary(Tool tool) {
    List<String> out = tool.output();
    assertTrue(out.contains("data transfers complete"), tool.name + ": " + out);
    assertTrue(out.contains("return status 0"), tool.name + ": " + out);
  }

  /** Ten datagrams from one QP, each with that QP's number as the immediate (the tools' form). */
  private static int assertFromOneQp(List<Datagram> got, String who) {
    assertEquals(DatagramPeer.COUNT, got.size(), who);
    int qpn = got.get(0).sourceQp();
    for (Datagram d : got) {
      assertEquals(qpn, d.sourceQp(), who + ": the source QP");
      assertEquals(qpn, d.immediate(), who + ": the immediate is the sender's QP number");
    }
    return qpn;
  }

  /** RoCE v2's MGID of an IPv4 group: the group's IPv4-mapped IPv6 address. */
  private static Gid mgidOf(String group) throws Exception {
    byte[] raw = new byte[16];
    raw[10] = (byte) 0xff;
    raw[11] = (byte) 0xff;
    System.arraycopy(InetAddress.getByName(group).getAddress(), 0, raw, 12, 4);
    return Gid.of(raw);
  }

  /** mckey's "joined dgid" line names the MGID we joined too. */
  private static void assertSameGroup(Tool tool, UdParameters ours) throws Exception {
    String joined = tool.output().stream().filter(l -> l.startsWith("mckey: joined dgid: "))
        .findFirst().orElse(null);
    assertNotNull(joined, tool.name + " printed no join: " + tool.output());
    assertEquals("::ffff:" + GROUP, joined.split(" ")[3], joined);
    assertEquals(mgidOf(GROUP), ours.addressVector().dgid(), "our MULTICAST_JOIN's MGID");
    assertEquals(UdParameters.MULTICAST_QPN, ours.qpNum());
    assertEquals(UdParameters.UDP_QKEY, ours.qkey());
  }

  private static String hex(byte[] b) {
    StringBuilder s = new StringBuilder();
    for (byte x : b) s.append(String.format("%02x", x & 0xff));
    return s.toString();
  }

  /** What a run of a tool and our peer does; it may find a datagram dropped. */
  private interface Exchange {
    void run() throws Exception;
  }

  /**
   * Runs {@code exchange}, and once more if it lost a datagram: UD does not retransmit, and a
   * busy VM drops one now and then. What crosses is checked in full on the run that counts.
   */
  private static void onceMoreOnLoss(String what, Exchange exchange) throws Exception {
    try {
      exchange.run();
    } catch (DatagramsLost | ExecutionException e) {
      Throwable why = e instanceof ExecutionException ? e.getCause() : e;
      if (!(why instanceof DatagramsLost)) throw e;
      log(what + ": " + why.getMessage() + " (UD dropped one); once more");
      exchange.run();
    }
  }

  @Test
  void realUdaddyServerWithOurClient() throws Exception {
    onceMoreOnLoss("udaddy server <-> our client", this::udaddyServerWithOurClient);
  }

  private void udaddyServerWithOurClient() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load();
        Tool tool = new Tool("udaddy server", "udaddy", "-b", CM_ADDRESS)) {
      ResourceCounts before = provider.liveResources();
      InetAddress server = InetAddress.getByName(CM_ADDRESS);
      InetAddress source = InetAddress.getByName(CM_SOURCE);
      Result r = null;
      // its output is a pipe (held until it exits): until it listens, a request is unreachable
      long deadline = System.nanoTime() + TOOL_TIMEOUT.toNanos();
      while (r == null) {
        try {
          r = DatagramPeer.udaddyClient(provider, server, source, PEER_TIMEOUT, oursOut);
        } catch (PeerFailure e) {
          boolean early = e.event != null && e.event.type() == CmEventType.UNREACHABLE;
          if (!early || System.nanoTime() > deadline || !tool.process.isAlive()) throw e;
          log("udaddy server not listening yet (" + e.getMessage() + "); again");
          Thread.sleep(300);
        }
      }
      assertEquals(0, tool.exit(TOOL_TIMEOUT), "udaddy's exit status");
      assertToolSummary(tool);
      assertEquals(r.peerQpn(), assertFromOneQp(r.received(), "udaddy's replies"),
          "the replies come from the QP that ESTABLISHED named");
      // udaddy's server replies with the first 100 bytes of its receive buffer: the last
      // datagram's 40-byte GRH (on RoCE v2 over IPv4 its last 20 bytes are the IPv4 header),
      // then the first 60 bytes of our last message
      byte[] last = DatagramPeer.message(DatagramPeer.COUNT - 1);
      for (Datagram d : r.received()) {
        log("reply: " + hex(Arrays.copyOf(d.data(), DatagramPeer.GRH)) + " | "
            + new String(d.data(), DatagramPeer.GRH, 30, StandardCharsets.US_ASCII));
        assertArrayEquals(Arrays.copyOf(last, DatagramPeer.SIZE - DatagramPeer.GRH),
            Arrays.copyOfRange(d.data(), DatagramPeer.GRH, DatagramPeer.SIZE),
            "udaddy echoes our last datagram");
        assertArrayEquals(source.getAddress(), Arrays.copyOfRange(d.data(), 32, 36),
            "the echoed GRH's IPv4 source: our address");
        assertArrayEquals(server.getAddress(), Arrays.copyOfRange(d.data(), 36, 40),
            "the echoed GRH's IPv4 destination: the server's");
      }
      assertEquals(NONE, provider.liveResources().minus(before));
      log("udaddy server <-> our client: OK, " + DatagramPeer.COUNT + " datagrams of "
          + DatagramPeer.SIZE + " bytes each way, udaddy's echo of ours checked");
    }
  }

  @Test
  void ourUdaddyServerWithTheRealClient() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load()) {
      ResourceCounts before = provider.liveResources();
      CountDownLatch listening = new CountDownLatch(1);
      CompletableFuture<Result> server = new CompletableFuture<>();
      Thread t = new Thread(() -> {
        try {
          server.complete(DatagramPeer.udaddyServer(provider, InetAddress.getByName(CM_ADDRESS),
              PEER_TIMEOUT, listening::countDown, oursOut));
        } catch (Throwable e) {
          server.completeExceptionally(e);
        }
      }, "udaddy-peer-server");
      t.setDaemon(true);
      t.start();
      assertTrue(listening.await(60, TimeUnit.SECONDS) || server.isDone(), "our server listens");
      Result r;
      try (Tool tool = new Tool("udaddy client", "udaddy", "-s", CM_ADDRESS, "-b", CM_SOURCE)) {
        assertEquals(0, tool.exit(TOOL_TIMEOUT), "udaddy's exit status");
        assertToolSummary(tool);
        r = server.get(TOOL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
      }
      int qpn = assertFromOneQp(r.received(), "udaddy client's datagrams");
      assertEquals(qpn, r.peerQpn(), "we replied to the QP the immediates named");
      log("request's private data: " + r.ud().privateDataOrEmpty().length + " bytes, "
          + "the way back: " + r.ud().addressVector());
      assertEquals(NONE, provider.liveResources().minus(before));
      log("our server <-> udaddy client: OK, " + DatagramPeer.COUNT + " datagrams of "
          + DatagramPeer.SIZE + " bytes each way from QP " + qpn
          + ", replied with the request's address vector");
    }
  }

  @Test
  void realMckeyReceiverWithOurSender() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load();
        // line-buffered (stdbuf), so that its join shows before it exits
        Tool tool = new Tool("mckey receiver", "stdbuf", "-oL", "mckey", "-m", GROUP, "-b",
            CM_ADDRESS)) {
      ResourceCounts before = provider.liveResources();
      assertNotNull(tool.awaitLine("mckey: joined dgid: ", TOOL_TIMEOUT),
          "mckey joined: " + tool.output());
      Result r = DatagramPeer.mckeySend(provider, InetAddress.getByName(GROUP),
          InetAddress.getByName(CM_SOURCE), PEER_TIMEOUT, oursOut);
      assertEquals(0, tool.exit(TOOL_TIMEOUT), "mckey's exit status");
      assertToolSummary(tool);
      assertSameGroup(tool, r.ud());
      assertEquals(NONE, provider.liveResources().minus(before));
      log("mckey receiver <-> our sender: OK, " + DatagramPeer.COUNT + " datagrams to "
          + GROUP + ", received by mckey");
    }
  }

  @Test
  void ourMckeyReceiverWithTheRealSender() throws Exception {
    onceMoreOnLoss("our receiver <-> mckey sender", this::ourMckeyReceiverWithMckeySender);
  }

  private void ourMckeyReceiverWithMckeySender() throws Exception {
    try (RdmaProvider provider = RdmaProviders.load()) {
      ResourceCounts before = provider.liveResources();
      CountDownLatch joined = new CountDownLatch(1);
      CompletableFuture<Result> receiver = new CompletableFuture<>();
      Thread t = new Thread(() -> {
        try {
          receiver.complete(DatagramPeer.mckeyReceive(provider, InetAddress.getByName(GROUP),
              InetAddress.getByName(CM_ADDRESS), PEER_TIMEOUT, joined::countDown, oursOut));
        } catch (Throwable e) {
          receiver.completeExceptionally(e);
        }
      }, "mckey-peer-receiver");
      t.setDaemon(true);
      t.start();
      assertTrue(joined.await(60, TimeUnit.SECONDS) || receiver.isDone(), "we joined");
      Result r;
      try (Tool tool = new Tool("mckey sender", "mckey", "-m", GROUP, "-s", "-b", CM_SOURCE)) {
        assertEquals(0, tool.exit(TOOL_TIMEOUT), "mckey's exit status");
        assertToolSummary(tool);
        r = receiver.get(TOOL_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
        assertSameGroup(tool, r.ud());
      }
      int qpn = assertFromOneQp(r.received(), "mckey sender's datagrams");
      assertEquals(NONE, provider.liveResources().minus(before));
      log("our receiver <-> mckey sender: OK, " + DatagramPeer.COUNT + " datagrams of "
          + DatagramPeer.SIZE + " bytes to " + GROUP + " from QP " + qpn);
    }
  }
}

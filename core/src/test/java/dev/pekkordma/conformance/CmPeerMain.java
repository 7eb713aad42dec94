package dev.pekkordma.conformance;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.WcOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * The other process of {@link CrossProcessConformanceTest#cmBetweenTwoProcesses}: a CM server.
 * It prints {@code LISTENING port}, accepts one connection whose private data starts with
 * {@link #HELLO}, answering with private data {@code address (8) rkey (4) length (4)} big-endian
 * of a registered buffer whose bytes [4096, 4352) are {@code Region.pattern(256, 9)}. It echoes
 * the first message it receives back prefixed with {@code echo:}, answers the second with the
 * first 256 bytes of its buffer (which the test wrote by RDMA), then disconnects and prints
 * {@code PEER OK} once DISCONNECTED came.
 */
public final class CmPeerMain {
  static final String HELLO = "conformance-parent";
  static final int READ_OFFSET = 4096;
  static final int PATTERN_SEED = 9;

  private CmPeerMain() {}

  public static void main(String[] args) {
    PeerProcess.watchdog(Duration.ofSeconds(60));
    try {
      run();
      System.out.println("PEER OK");
      System.out.flush();
      System.exit(0);
    } catch (Throwable t) {
      System.out.println("PEER FAIL " + t);
      t.printStackTrace(System.out);
      System.out.flush();
      System.exit(1);
    }
  }

  static CmEvent await(CmEventChannel ch, CmEventType type, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    StringBuilder others = new StringBuilder();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new IllegalStateException("peer: no " + type + " within " + timeout.toMillis()
            + " ms; other events: [" + others + "]");
      }
      CmEvent e = ch.awaitEvent(Duration.ofNanos(left));
      if (e == null) continue;
      System.out.println("peer CM event " + e);
      if (e.type() == type) return e;
      others.append(e).append(' ');
    }
  }

  private static void run() throws Exception {
    Duration t = Duration.ofSeconds(20);
    try (RdmaProvider provider = ConformanceProvider.loadProvider(ConfigFactory.empty())) {
      CmEventChannel ch = provider.createCmEventChannel();
      CmId listener = ch.createId("peer-listener");
      CmId id = null;
      ProtectionDomain pd = null;
      CompletionQueue cq = null;
      CompletionQueue recvCq = null;
      Region r = null;
      try {
        listener.bind(new InetSocketAddress(
            InetAddress.getByName(ConformanceProvider.cmAddress()), 0));
        listener.listen(1);
        System.out.println("LISTENING " + listener.localAddress().getPort());
        System.out.flush();
        CmEvent req = await(ch, CmEventType.CONNECT_REQUEST, t);
        id = req.id();
        byte[] hello = HELLO.getBytes(StandardCharsets.US_ASCII);
        byte[] pdata = req.privateData() == null ? new byte[0] : req.privateData();
        if (pdata.length < hello.length
            || !Arrays.equals(hello, Arrays.copyOf(pdata, hello.length))) {
          throw new IllegalStateException("connect private data " + PeerProcess.hex(pdata));
        }
        pd = id.verbs().allocPd();
        // separate CQs: the test's next message may arrive before the ack of our last send
        cq = id.verbs().createCq(32, null);
        recvCq = id.verbs().createCq(32, null);
        id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, recvCq).maxSendWr(8).maxRecvWr(8));
        QueuePair qp = id.qp();
        r = Region.of(pd, 8192, Link.ALL_REMOTE);
        r.put(READ_OFFSET, Region.pattern(256, PATTERN_SEED));
        ConformanceTest.postRecv(qp, 1, r, 6000, 256);
        ConformanceTest.postRecv(qp, 2, r, 6500, 256);
        byte[] info = ByteBuffer.allocate(16).putLong(r.address()).putInt(r.rkey())
            .putInt(r.length()).array();
        id.accept(ConnectionParameters.withPrivateData(info));
        await(ch, CmEventType.ESTABLISHED, t);

        Wc first = Completions.awaitOne(recvCq, "peer recv CQ (first message)");
        if (!first.ok() || first.opcode() != WcOpcode.RECV || first.wrId() != 1) {
          throw new IllegalStateException("first receive: " + first);
        }
        byte[] echo = ConformanceTest.concat("echo:".getBytes(StandardCharsets.US_ASCII),
            r.get(6000, first.byteLen()));
        r.put(7000, echo);
        ConformanceTest.send(qp, 10, dev.pekkordma.verbs.SendRequests.SIGNALED, r, 7000,
            echo.length);
        Wc sent = Completions.awaitOne(cq, "peer CQ (echo)");
        if (!sent.ok() || sent.wrId() != 10) throw new IllegalStateException("echo: " + sent);

        Wc second = Completions.awaitOne(recvCq, "peer recv CQ (second message)");
        if (!second.ok() || second.wrId() != 2) {
          throw new IllegalStateException("second receive: " + second);
        }
        ConformanceTest.send(qp, 11, dev.pekkordma.verbs.SendRequests.SIGNALED, r, 0, 256);
        Wc sent2 = Completions.awaitOne(cq, "peer CQ (buffer copy)");
        if (!sent2.ok() || sent2.wrId() != 11) {
          throw new IllegalStateException("buffer copy: " + sent2);
        }
        id.disconnect();
        await(ch, CmEventType.DISCONNECTED, t);
      } finally {
        if (id != null && id.qp() != null) id.destroyQp();
        if (r != null) r.close();
        if (recvCq != null) recvCq.close();
        if (cq != null) cq.close();
        if (pd != null) pd.close();
        if (id != null) id.close();
        listener.close();
        ch.close();
      }
    }
  }
}

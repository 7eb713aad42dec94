package dev.pekkordma.conformance;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * The other process of {@link CrossProcessConformanceTest#verbsBetweenTwoProcesses}: plain verbs,
 * with QP numbers, GIDs, PSNs and keys exchanged over a TCP socket on 127.0.0.1.
 *
 * <p>Protocol (lines): peer prints {@code PORT n}; the test connects and sends {@code QP qpn psn
 * gid lid addr rkey}; the peer answers the same; both say {@code READY} once in RTS. The test
 * RDMA-writes 256 bytes to the peer's offset 0 and sends 4 bytes; on that receive the peer writes
 * those 256 bytes back to the test's offset 1024 with immediate {@link #IMM}, RDMA-reads the
 * test's offset 2048 (256 bytes) and reports them as {@code READ hex}, then {@code DONE}; the
 * test answers {@code BYE}; the peer prints {@code PEER OK}.
 */
public final class VerbsPeerMain {
  static final int IMM = 0x5eed1234;
  static final int PEER_PSN = 0x00abcd;

  private VerbsPeerMain() {}

  /** The line describing a QP endpoint. */
  static String describe(QueuePair qp, int psn, ConformanceProvider.Endpoint ep, Region r) {
    return "QP " + qp.qpNum() + " " + psn + " " + PeerProcess.hex(ep.gid().toBytes()) + " "
        + ep.lid() + " " + r.address() + " " + r.rkey();
  }

  /** Parsed {@code QP ...} line. */
  record Remote(int qpn, int psn, Gid gid, int lid, long addr, int rkey) {
    static Remote parse(String line) {
      String[] f = line.trim().split(" ");
      if (f.length != 7 || !f[0].equals("QP")) {
        throw new IllegalStateException("not a QP line: '" + line + "'");
      }
      return new Remote(Integer.parseInt(f[1]), Integer.parseInt(f[2]),
          Gid.of(PeerProcess.unhex(f[3])), Integer.parseInt(f[4]), Long.parseLong(f[5]),
          Integer.parseInt(f[6]));
    }
  }

  static String expectLine(BufferedReader in, String prefix) throws java.io.IOException {
    String line = in.readLine();
    if (line == null || !line.startsWith(prefix)) {
      throw new IllegalStateException("expected '" + prefix + "...' from the test, got '" + line
          + "'");
    }
    return line.substring(prefix.length()).trim();
  }

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

  private static void run() throws Exception {
    try (RdmaProvider provider = ConformanceProvider.loadProvider(ConfigFactory.empty())) {
      RdmaDevice device = provider.devices().get(0);
      String wanted = System.getProperty(ConformanceProvider.DEVICE_PROPERTY);
      if (wanted != null && !wanted.isBlank()) {
        for (RdmaDevice d : provider.devices()) if (d.name().equals(wanted)) device = d;
      }
      try (DeviceContext ctx = provider.open(device)) {
        ConformanceProvider.Endpoint ep = ConformanceProvider.Endpoint.find(ctx);
        System.out.println("peer endpoint " + ep);
        ProtectionDomain pd = ctx.allocPd();
        CompletionQueue sendCq = ctx.createCq(16, null);
        CompletionQueue recvCq = ctx.createCq(16, null);
        QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, sendCq, recvCq));
        Region r = Region.of(pd, 8192, Link.ALL_REMOTE);
        try (ServerSocket ss = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
          ss.setSoTimeout(30_000);
          System.out.println("PORT " + ss.getLocalPort());
          System.out.flush();
          try (Socket s = ss.accept()) {
            s.setSoTimeout(30_000);
            BufferedReader in = new BufferedReader(
                new InputStreamReader(s.getInputStream(), StandardCharsets.US_ASCII));
            PrintWriter out = new PrintWriter(s.getOutputStream(), true, StandardCharsets.US_ASCII);
            Remote test = Remote.parse(in.readLine());
            qp.modify(QpAttributes.toInit(ep.port(), Link.ALL_REMOTE));
            ConformanceTest.postRecv(qp, 1, r, 4096, 256);
            out.println(describe(qp, PEER_PSN, ep, r));
            Link.defaults().sqPsn(PEER_PSN).bringUp(qp, ctx.queryDevice(), ep.port(),
                ep.addressTo(test.gid(), test.lid()), test.qpn(), test.psn(),
                ctx.queryPort(ep.port()).activeMtu());
            out.println("READY");
            expectLine(in, "READY");

            Wc got = Completions.awaitOne(recvCq, "peer recv CQ");
            if (!got.ok() || got.opcode() != WcOpcode.RECV || got.byteLen() != 4) {
              throw new IllegalStateException("peer receive: " + got);
            }
            try (SendRequests sr = new SendRequests(2, 1)) {
              sr.add(2, WrOpcode.RDMA_WRITE_WITH_IMM, SendRequests.SIGNALED).sge(r.mr, 0, 256)
                  .rdma(test.addr() + 1024, test.rkey()).immediate(IMM);
              sr.add(3, WrOpcode.RDMA_READ, SendRequests.SIGNALED).sge(r.mr, 6000, 256)
                  .rdma(test.addr() + 2048, test.rkey());
              qp.postSend(sr);
            }
            for (Wc wc : Completions.await(sendCq, 2, "peer send CQ")) {
              if (!wc.ok()) throw new IllegalStateException("peer send: " + wc);
            }
            out.println("READ " + PeerProcess.hex(r.get(6000, 256)));
            out.println("DONE");
            expectLine(in, "BYE");
          }
        } finally {
          r.close();
          qp.close();
          recvCq.close();
          sendCq.close();
          pd.close();
        }
      }
    }
  }
}

package dev.pekkordma.soft;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * A process with a soft provider (configured by its first argument, HOCON), one RC QP and a
 * 4 MiB region, driven line by line through stdin, for tests between real processes:
 *
 * <pre>
 * prints   PEER gid qpn address rkey pid
 * CONNECT gid qpn timeout retry       -> CONNECTED
 * FILL seed                           -> FILLED            (the region gets a pattern)
 * WRITE offset length raddr rkey n    -> DONE status cause (n writes, then the outcome)
 * READ offset length raddr rkey       -> DONE status cause
 * STREAM length raddr rkey            -> STREAMING, later FAILED status cause (writes until one fails)
 * SUM offset length                   -> SUM checksum
 * COUNTS                              -> COUNTS qps mrs cqs
 * EXIT                                -> everything closed, exit 0
 * </pre>
 */
public final class SoftPeerMain {
  static final int REGION = 4 << 20;
  private static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE
      | Access.REMOTE_READ | Access.REMOTE_ATOMIC;

  private SoftPeerMain() {}

  public static void main(String[] args) throws Exception {
    String config = args.length > 0 ? args[0] : "";
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString(config
        + "\npekko-rdma.provider = soft").withFallback(ConfigFactory.load()))) {
      DeviceContext ctx = p.open(p.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(256, null);
      QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64));
      OffHeapBuffer buf = OffHeapBuffer.allocate(REGION);
      MemoryRegion mr = pd.registerMemory(buf, ACCESS);
      say("PEER " + ctx.queryGid(1, 0) + " " + qp.qpNum() + " " + mr.address() + " " + mr.rkey()
          + " " + ProcessHandle.current().pid());
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
          StandardCharsets.UTF_8));
      try (SendRequests s = new SendRequests(64, 1); WorkCompletions wc = new WorkCompletions(64)) {
        String line;
        while ((line = in.readLine()) != null) {
          String[] w = line.trim().split(" ");
          switch (w[0]) {
            case "CONNECT" -> {
              if (qp.state() != QpState.RESET) qp.modify(new QpAttributes().state(QpState.RESET));
              qp.modify(QpAttributes.toInit(1, ACCESS));
              qp.modify(QpAttributes.toRtr(AddressVector.global(Gid.parse(w[1]), 0, 1),
                  Integer.parseInt(w[2]), 0, Mtu.MTU_4096).maxDestRdAtomic(4));
              qp.modify(QpAttributes.toRts(0).timeout(Integer.parseInt(w[3]))
                  .retryCount(Integer.parseInt(w[4])).maxRdAtomic(4));
              say("CONNECTED");
            }
            case "FILL" -> {
              java.util.Random r = new java.util.Random(Long.parseLong(w[1]));
              byte[] chunk = new byte[4096];
              for (int at = 0; at < REGION; at += chunk.length) {
                r.nextBytes(chunk);
                buf.put(at, chunk, 0, chunk.length);
              }
              say("FILLED");
            }
            case "WRITE", "READ" -> {
              boolean write = w[0].equals("WRITE");
              int n = w.length > 5 ? Integer.parseInt(w[5]) : 1;
              s.clear();
              for (int i = 0; i < n; i++) {
                s.add(i, write ? WrOpcode.RDMA_WRITE : WrOpcode.RDMA_READ, SendRequests.SIGNALED)
                    .sge(mr, Long.parseLong(w[1]), Integer.parseInt(w[2]))
                    .rdma(Long.parseLong(w[3]), Integer.parseInt(w[4]));
              }
              qp.postSend(s);
              say("DONE " + await(cq, wc, n, qp));
            }
            case "STREAM" -> {
              say("STREAMING");
              say("FAILED " + stream(qp, cq, mr, s, wc, Integer.parseInt(w[1]),
                  Long.parseLong(w[2]), Integer.parseInt(w[3])));
            }
            case "SUM" -> {
              byte[] b = new byte[Integer.parseInt(w[2])];
              buf.get(Long.parseLong(w[1]), b, 0, b.length);
              say("SUM " + java.util.Arrays.hashCode(b));
            }
            case "COUNTS" -> {
              var c = p.liveResources();
              say("COUNTS " + c.qps() + " " + c.mrs() + " " + c.cqs());
            }
            case "EXIT" -> {
              qp.close();
              mr.close();
              buf.close();
              cq.close();
              pd.close();
              ctx.close();
              say("BYE");
              return;
            }
            default -> say("UNKNOWN " + line);
          }
        }
      }
    }
  }

  /** Waits for {@code n} completions; the first error's status and the QP's cause, or SUCCESS. */
  private static String await(CompletionQueue cq, WorkCompletions wc, int n, QueuePair qp)
      throws InterruptedException {
    WcStatus first = WcStatus.SUCCESS;
    int got = 0;
    long deadline = System.nanoTime() + 120_000_000_000L;
    while (got < n && System.nanoTime() < deadline) {
      int k = cq.poll(wc);
      for (int i = 0; i < k; i++) {
        if (!wc.ok(i) && first == WcStatus.SUCCESS) first = wc.status(i);
      }
      got += k;
      if (k == 0) Thread.sleep(1);
    }
    if (got < n) return "TIMEOUT no completion within 120 s";
    return first + " " + qp.errorCause().orElse("-");
  }

  private static String stream(QueuePair qp, CompletionQueue cq, MemoryRegion mr,
      SendRequests s, WorkCompletions wc, int length, long raddr, int rkey)
      throws InterruptedException {
    while (true) {
      s.clear();
      for (int i = 0; i < 8; i++) {
        s.add(i, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, 0, length).rdma(raddr, rkey);
      }
      qp.postSend(s);
      String outcome = await(cq, wc, 8, qp);
      if (!outcome.startsWith("SUCCESS")) return outcome;
    }
  }

  private static void say(String line) {
    System.out.println(line);
    System.out.flush();
  }
}

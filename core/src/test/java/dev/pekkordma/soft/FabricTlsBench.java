package dev.pekkordma.soft;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.conformance.PeerProcess;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.testing.TlsStores;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Not a test: what mutual TLS costs the fabric between two processes, side by side with the
 * clear, in alternating rounds: RDMA WRITE bandwidth (1 MiB writes, 16 in flight) and the round
 * trip of one 64-byte RDMA WRITE (posted, acknowledged, polled). Run by bench/tls.sh; prints
 * each round, the medians, their ratios and the machine's load.
 */
public final class FabricTlsBench {
  private static final Duration T = Duration.ofSeconds(120);
  private static final int CHUNK = 1 << 20;
  private static final int WINDOW = 16;
  private static final int LAT_WARMUP = 2000;
  /** Both processes as a user's would run: the full JIT (its AES and GHASH intrinsics). */
  private static final List<String> JVM = List.of("-Xmx512m");

  private FabricTlsBench() {}

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("requester")) {
      requester(args[1], Long.parseLong(args[2]), Integer.parseInt(args[3]));
      return;
    }
    int rounds = Integer.getInteger("rounds", 3);
    long bytes = Long.getLong("bytes", 512L << 20);
    int latIters = Integer.getInteger("latIters", 20_000);
    TlsStores stores = TlsStores.get();
    String[] modes = {"plain", "tls"};
    String[] configs = {"", stores.config(TlsStores.ALICE)};
    String[] requesterConfigs = {"", stores.config(TlsStores.BOB)};
    List<List<double[]>> results = List.of(new ArrayList<>(), new ArrayList<>());
    System.out.println("load before: " + load());
    for (int round = 1; round <= rounds; round++) {
      for (int m = 0; m < modes.length; m++) {
        double[] r = run(configs[m], requesterConfigs[m], bytes, latIters);
        results.get(m).add(r);
        System.out.printf("round %d %-5s  write %8.1f MB/s   64 B write round trip p50 %6.1f us"
            + "  p99 %6.1f us%n", round, modes[m], r[0], r[1], r[2]);
      }
    }
    double[] plain = medians(results.get(0));
    double[] tls = medians(results.get(1));
    System.out.printf("median plain  write %8.1f MB/s   p50 %6.1f us  p99 %6.1f us%n",
        plain[0], plain[1], plain[2]);
    System.out.printf("median tls    write %8.1f MB/s   p50 %6.1f us  p99 %6.1f us%n",
        tls[0], tls[1], tls[2]);
    System.out.printf("tls/plain     bandwidth %.2fx   p50 latency %.2fx   p99 latency %.2fx%n",
        tls[0] / plain[0], tls[1] / plain[1], tls[2] / plain[2]);
    System.out.println("load after: " + load() + "  (" + Runtime.getRuntime().availableProcessors()
        + " cores)");
  }

  /** One round of one mode: a responder and a requester process; {MB/s, p50 us, p99 us}. */
  private static double[] run(String responderConfig, String requesterConfig, long bytes,
      int latIters) throws Exception {
    try (PeerJvm responder = PeerJvm.start(JVM, responderConfig);
        PeerProcess requester = PeerProcess.start(JVM, FabricTlsBench.class, "requester",
            requesterConfig, String.valueOf(bytes), String.valueOf(latIters))) {
      String[] me = requester.awaitLine("REQUESTER ", T).split(" ");
      responder.connect(Gid.parse(me[0]), Integer.parseInt(me[1]), 17, 7);
      requester.send(responder.gid + " " + responder.qpn + " " + responder.address + " "
          + responder.rkey);
      String[] r = requester.awaitLine("RESULT ", Duration.ofMinutes(10)).split(" ");
      responder.ask("EXIT", "BYE", T);
      return new double[] {Double.parseDouble(r[0]), Double.parseDouble(r[1]),
          Double.parseDouble(r[2])};
    }
  }

  private static void requester(String config, long bytes, int latIters) throws Exception {
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString(config
        + "\npekko-rdma.provider = soft").withFallback(ConfigFactory.load()))) {
      DeviceContext ctx = p.open(p.devices().get(0));
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(256, null);
      QueuePair qp = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(64));
      OffHeapBuffer buf = OffHeapBuffer.allocate(WINDOW * CHUNK);
      MemoryRegion mr = pd.registerMemory(buf, HostileFabric.ACCESS);
      System.out.println("REQUESTER " + ctx.queryGid(1, 0) + " " + qp.qpNum());
      System.out.flush();
      String[] peer = new BufferedReader(new InputStreamReader(System.in,
          StandardCharsets.UTF_8)).readLine().split(" ");
      qp.modify(QpAttributes.toInit(1, HostileFabric.ACCESS));
      qp.modify(QpAttributes.toRtr(AddressVector.global(Gid.parse(peer[0]), 0, 1),
          Integer.parseInt(peer[1]), 0, Mtu.MTU_4096).maxDestRdAtomic(4));
      qp.modify(QpAttributes.toRts(0).timeout(17).retryCount(7).maxRdAtomic(4));
      long raddr = Long.parseLong(peer[2]);
      int rkey = Integer.parseInt(peer[3]);
      try (SendRequests s = new SendRequests(WINDOW, 1); WorkCompletions wc =
          new WorkCompletions(WINDOW)) {
        bandwidth(qp, cq, mr, s, wc, raddr, rkey, bytes / 8); // warm-up
        double mbs = bandwidth(qp, cq, mr, s, wc, raddr, rkey, bytes);
        long[] lat = new long[latIters];
        for (int i = -LAT_WARMUP; i < latIters; i++) {
          s.clear();
          s.add(i, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, 0, 64).rdma(raddr, rkey);
          long start = System.nanoTime();
          qp.postSend(s);
          while (cq.poll(wc) == 0) Thread.onSpinWait();
          if (!wc.ok(0)) throw new IllegalStateException(wc.describe(0));
          if (i >= 0) lat[i] = System.nanoTime() - start;
        }
        Arrays.sort(lat);
        System.out.printf("RESULT %.1f %.2f %.2f%n", mbs, lat[latIters / 2] / 1e3,
            lat[latIters * 99 / 100] / 1e3);
      }
    }
  }

  private static double bandwidth(QueuePair qp, CompletionQueue cq, MemoryRegion mr,
      SendRequests s, WorkCompletions wc, long raddr, int rkey, long bytes) {
    long writes = bytes / CHUNK;
    long posted = 0;
    long done = 0;
    long start = System.nanoTime();
    while (done < writes) {
      if (posted - done < WINDOW && posted < writes) {
        s.clear();
        int n = (int) Math.min(WINDOW - (posted - done), writes - posted);
        for (int i = 0; i < n; i++, posted++) {
          long at = (posted % WINDOW) * CHUNK;
          s.add(posted, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, at, CHUNK)
              .rdma(raddr + at % SoftPeerMain.REGION, rkey);
        }
        qp.postSend(s);
      }
      int k = cq.poll(wc);
      for (int i = 0; i < k; i++) if (!wc.ok(i)) throw new IllegalStateException(wc.describe(i));
      done += k;
    }
    return writes * (double) CHUNK / ((System.nanoTime() - start) / 1e9) / 1e6;
  }

  private static double[] medians(List<double[]> rows) {
    double[] m = new double[3];
    for (int c = 0; c < 3; c++) {
      double[] col = new double[rows.size()];
      for (int r = 0; r < rows.size(); r++) col[r] = rows.get(r)[c];
      Arrays.sort(col);
      m[c] = col[col.length / 2];
    }
    return m;
  }

  private static String load() {
    try {
      return Files.readString(Path.of("/proc/loadavg")).trim();
    } catch (Exception e) {
      return "unknown";
    }
  }
}

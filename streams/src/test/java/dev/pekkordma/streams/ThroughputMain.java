package dev.pekkordma.streams;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.util.Locale;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;

/**
 * A throwaway measurement, one JVM, software provider: raw verbs (RDMA WRITE WITH IMM into a
 * ring, depth-limited, no data made or checked) against the streams' message flow, the bulk
 * sinks, and Pekko's Tcp over loopback, at each message size given (default 4k 64k 1m).
 * Run: {@code mvn -pl streams exec:java -Dexec.classpathScope=test
 * -Dexec.mainClass=dev.pekkordma.streams.ThroughputMain -Dexec.args="256m 4k 64k 1m"}.
 */
public final class ThroughputMain {
  private static ActorSystem<Void> system;
  private static RdmaStreams rdma;

  public static void main(String[] args) throws Exception {
    long total = args.length > 0 ? parse(args[0]) : 256L << 20;
    String[] sizes = args.length > 1 ? java.util.Arrays.copyOfRange(args, 1, args.length)
        : new String[] {"4k", "64k", "1m"};
    system = ActorSystem.create(Behaviors.empty(), "throughput", ConfigFactory.parseString(
        "pekko-rdma.provider = soft\npekko.loglevel = WARNING\n").withFallback(
        ConfigFactory.load()));
    rdma = RdmaStreams.get(system);
    try {
      System.out.printf("%-8s %12s %12s %12s %12s %12s%n", "size", "raw verbs", "stream",
          "bulk chunks", "bulk bytes", "pekko tcp");
      for (String s : sizes) {
        int size = (int) parse(s);
        raw(size, total / 4); // warm-up
        double v = raw(size, total);
        stream(size, total / 4);
        double st = stream(size, total);
        bulkChunks(size, total / 4);
        double bc = bulkChunks(size, total);
        bulkBytes(size, total / 4);
        double bb = bulkBytes(size, total);
        tcp(size, total / 4);
        double t = tcp(size, total);
        System.out.printf(Locale.ROOT, "%-8s %8.0f MiB/s %7.0f MiB/s %7.0f MiB/s %7.0f MiB/s %7.0f"
            + " MiB/s%n", s, v, st, bc, bb, t);
      }
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(20, TimeUnit.SECONDS);
    }
    System.exit(0);
  }

  static long parse(String s) {
    s = s.toLowerCase(Locale.ROOT);
    long unit = s.endsWith("k") ? 1 << 10 : s.endsWith("m") ? 1 << 20 : s.endsWith("g") ? 1 << 30
        : 1;
    return Long.parseLong(unit == 1 ? s : s.substring(0, s.length() - 1)) * unit;
  }

  static double rate(long bytes, long nanos) {
    return bytes / (1024.0 * 1024.0) / (nanos / 1e9);
  }

  /** Writes with immediate into a 32-slot ring, 32 in flight, receives reposted at once. */
  static double raw(int size, long total) {
    RdmaProvider provider = RdmaRuntime.get(system).provider();
    int slots = 32;
    int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
    long n = total / size;
    try (DeviceContext ctx = provider.open(provider.devices().get(0));
        ProtectionDomain pd = ctx.allocPd();
        OffHeapBuffer src = OffHeapBuffer.allocate((long) slots * size);
        OffHeapBuffer ring = OffHeapBuffer.allocate((long) slots * size);
        MemoryRegion srcMr = pd.registerMemory(src, access);
        MemoryRegion ringMr = pd.registerMemory(ring, access);
        CompletionQueue scq = ctx.createCq(256, null);
        CompletionQueue rcq = ctx.createCq(256, null);
        SendRequests wrs = new SendRequests(slots, 1);
        RecvRequests rrs = new RecvRequests(slots, 1);
        WorkCompletions wcs = new WorkCompletions(64)) {
      QueuePair a = pd.createQp(QpInitAttributes.of(QpType.RC, scq, scq).maxSendWr(64));
      QueuePair b = pd.createQp(QpInitAttributes.of(QpType.RC, rcq, rcq).maxRecvWr(64));
      AddressVector av = AddressVector.global(ctx.queryGid(1, 0), 0, 1);
      for (QueuePair[] p : new QueuePair[][] {{a, b}, {b, a}}) {
        p[0].modify(QpAttributes.toInit(1, access));
        p[0].modify(QpAttributes.toRtr(av, p[1].qpNum(), 0, Mtu.MTU_4096));
        p[0].modify(QpAttributes.toRts(0));
      }
      rrs.clear();
      for (int i = 0; i < slots; i++) rrs.add(i);
      b.postRecv(rrs);
      long t0 = System.nanoTime();
      long posted = 0;
      long received = 0;
      int inFlight = 0;
      while (received < n) {
        if (inFlight < slots && posted < n) {
          wrs.clear();
          while (inFlight < slots && posted < n) {
            int slot = (int) (posted % slots);
            wrs.add(posted, WrOpcode.RDMA_WRITE_WITH_IMM, SendRequests.SIGNALED)
                .sge(srcMr, (long) slot * size, size)
                .rdma(ringMr.address() + (long) slot * size, ringMr.rkey()).immediate(slot);
            posted++;
            inFlight++;
          }
          a.postSend(wrs);
        }
        int c = rcq.poll(wcs);
        if (c > 0) {
          rrs.clear();
          for (int i = 0; i < c; i++) rrs.add(i);
          b.postRecv(rrs);
          received += c;
          inFlight -= c;
        }
        scq.poll(wcs);
        if (c == 0) Thread.onSpinWait();
      }
      long nanos = System.nanoTime() - t0;
      while (scq.poll(wcs) > 0) {
        // the last send completions
      }
      a.close();
      b.close();
      return rate(n * size, nanos);
    }
  }

  /** The message flow: client to server, one way; done when the server has taken it all. */
  static double stream(int size, long total) throws Exception {
    RdmaStreamSettings settings = rdma.settings().withBufferSize(Math.max(size, 64 << 10));
    ServerBinding binding = rdma.bind("127.0.0.1", 0, settings, false)
        .to(Sink.foreach(c -> c.handleWith(Flow.fromSinkAndSourceCoupled(Sink.ignore(),
            Source.<ByteString>maybe()), system))).run(system).toCompletableFuture().get();
    ByteString bs = ByteString.fromArray(new byte[size]);
    long n = total / size;
    long t0 = System.nanoTime();
    Pair<CompletionStage<OutgoingConnection>, CompletionStage<TransferResult>> m =
        Source.repeat(bs).take(n).viaMat(rdma.outgoingConnectionWithResult(
            new InetSocketAddress("127.0.0.1", binding.localAddress().getPort()), settings, true),
            Keep.right()).to(Sink.ignore()).run(system);
    TransferResult r = m.second().toCompletableFuture().get(120, TimeUnit.SECONDS);
    long nanos = System.nanoTime() - t0;
    binding.unbind().toCompletableFuture().get();
    return rate(r.bytesSent(), nanos);
  }

  static double bulkChunks(int size, long total) throws Exception {
    RdmaStreamSettings settings = rdma.bulkSettings().withBufferSize(size)
        .withReceiveBuffers(Math.max(16, (16 << 20) / size > 64 ? 64 : (16 << 20) / size));
    AtomicLong got = new AtomicLong();
    CompletionStage<ServerBinding> bound = rdma.bulkSource("127.0.0.1", 0, settings)
        .to(Sink.foreach(b -> got.addAndGet(b.length()))).run(system);
    ServerBinding binding = bound.toCompletableFuture().get();
    long n = total / size;
    long t0 = System.nanoTime();
    TransferResult r = Source.range(1, (int) n).<BulkChunk>map(i -> buf -> buf.position(size))
        .runWith(rdma.bulkChunkSink(new InetSocketAddress("127.0.0.1",
            binding.localAddress().getPort()), settings), system)
        .toCompletableFuture().get(120, TimeUnit.SECONDS);
    long nanos = System.nanoTime() - t0;
    if (got.get() != r.bytesSent()) {
      throw new IllegalStateException("bulk chunks: lost data: " + got.get() + " of " + r);
    }
    return rate(r.bytesSent(), nanos);
  }

  static double bulkBytes(int size, long total) throws Exception {
    RdmaStreamSettings settings = rdma.bulkSettings().withBufferSize(Math.min(size, 1 << 20))
        .withReceiveBuffers(16);
    AtomicLong got = new AtomicLong();
    ServerBinding binding = rdma.bulkSource("127.0.0.1", 0, settings)
        .to(Sink.foreach(b -> got.addAndGet(b.length()))).run(system)
        .toCompletableFuture().get();
    ByteString bs = ByteString.fromArray(new byte[size]);
    long n = total / size;
    long t0 = System.nanoTime();
    TransferResult r = Source.repeat(bs).take(n)
        .runWith(rdma.bulkSink(new InetSocketAddress("127.0.0.1",
            binding.localAddress().getPort()), settings), system)
        .toCompletableFuture().get(120, TimeUnit.SECONDS);
    long nanos = System.nanoTime() - t0;
    if (got.get() != r.bytesSent()) {
      throw new IllegalStateException("bulk bytes: lost data: " + got.get() + " of " + r);
    }
    return rate(r.bytesSent(), nanos);
  }

  /** Pekko's Tcp over loopback, client to server; done when the server has it all. */
  static double tcp(int size, long total) throws Exception {
    Tcp tcp = Tcp.get(system);
    ByteString bs = ByteString.fromArray(new byte[size]);
    long n = total / size;
    long bytes = n * size;
    java.util.concurrent.CompletableFuture<Long> done = new java.util.concurrent.CompletableFuture<>();
    AtomicLong got = new AtomicLong();
    var binding = tcp.bind("127.0.0.1", 0).to(Sink.foreach(c -> c.handleWith(
        Flow.fromSinkAndSource(Sink.foreach(b -> {
          if (got.addAndGet(b.length()) == bytes) done.complete(System.nanoTime());
        }), Source.<ByteString>maybe().mapMaterializedValue(x -> NotUsed.getInstance())),
        system))).run(system).toCompletableFuture().get();
    long t0 = System.nanoTime();
    Source.repeat(bs).take(n).via(tcp.outgoingConnection("127.0.0.1",
        binding.localAddress().getPort())).runWith(Sink.ignore(), system);
    long end = done.get(120, TimeUnit.SECONDS);
    binding.unbind().toCompletableFuture().get();
    return rate(bytes, end - t0);
  }
}

package dev.pekkordma.samples.cluster;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.cluster.Channel;
import dev.pekkordma.cluster.Codec;
import dev.pekkordma.cluster.PeerEvent;
import dev.pekkordma.cluster.RdmaCluster;
import dev.pekkordma.cluster.Received;
import dev.pekkordma.samples.BadOption;
import dev.pekkordma.samples.Providers;
import dev.pekkordma.samples.SampleCommandLine;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.Callable;
import java.util.zip.CRC32;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.cluster.ClusterEvent;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;
import org.apache.pekko.cluster.typed.Leave;
import org.apache.pekko.cluster.typed.Subscribe;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.util.ByteString;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * A clustered application that moves data between its members over RDMA: each member streams
 * checksummed chunks to every other member it is connected to, checks what it receives, and
 * prints what happens, one line each, for people and for tests:
 *
 * <pre>
 * UP address=... endpoint=...          this member is Up, its RDMA endpoint advertised
 * EVENT Connected member=...           a PeerEvent (Connected, Disconnected, Paused, Resumed,
 *                                      Removed, Refused)
 * SENDER to=... ok=N failed=M pending=0   a sender stopped: every chunk it sent is accounted for
 * STATS chunks=N bytes=N bad=N from=[...]  once a second: what arrived, and from whom
 * GAP from=... seq=N expected=M         chunks missing: they failed at their sender (a
 *                                      connection ended), which counted them as failed
 * BAD from=... seq=N expected=M         a chunk out of order or not as sent (never expected)
 * RESOURCES ResourceCounts[...]          on "resources": the provider's live resources
 * </pre>
 *
 * <p>Start several on one machine (software provider by default):
 *
 * <pre>
 * ClusterTransfer --port 25520                        (no seed: it forms the cluster)
 * ClusterTransfer --port 0 --seed 127.0.0.1:25520
 * ClusterTransfer --port 0 --seed 127.0.0.1:25520
 * </pre>
 *
 * <p>Options: {@code --port} (Pekko port, 0 picks one), {@code --seed host:port} (repeat it; with
 * none the member forms a cluster of its own), {@code --hostname} (127.0.0.1), {@code
 * --provider} (soft, auto or native), {@code --connect} (eager or lazy), {@code --chunk} (bytes,
 * 1024), {@code --rate} (chunks a second to each peer, 200). Type {@code leave}, {@code
 * resources} or {@code quit}. Any config key can be set with {@code -Dkey=value}.
 */
public final class ClusterTransfer {
  private ClusterTransfer() {}

  /** One chunk: a sequence number per sender run, a CRC32 of the data, the data. */
  record Chunk(long run, long seq, long crc, byte[] data) {
    static Chunk make(long run, long seq, int size) {
      byte[] data = new byte[size];
      long x = seq * 0x9E3779B97F4A7C15L + run;
      for (int i = 0; i < size; i++) {
        x ^= x << 13;
        x ^= x >>> 7;
        x ^= x << 17;
        data[i] = (byte) x;
      }
      return new Chunk(run, seq, crc(data), data);
    }

    static long crc(byte[] data) {
      CRC32 c = new CRC32();
      c.update(data);
      return c.getValue();
    }
  }

  /** Chunks as bytes: run, seq and crc as longs, then the data. */
  static final Codec<Chunk> CHUNKS = new Codec<>() {
    @Override
    public ByteString encode(Chunk c) {
      ByteBuffer b = ByteBuffer.allocate(24 + c.data().length);
      b.putLong(c.run()).putLong(c.seq()).putLong(c.crc()).put(c.data());
      return ByteString.fromArrayUnsafe(b.array());
    }

    @Override
    public Chunk decode(ByteString bytes) {
      ByteBuffer b = bytes.asByteBuffer();
      long run = b.getLong();
      long seq = b.getLong();
      long crc = b.getLong();
      byte[] data = new byte[b.remaining()];
      b.get(data);
      return new Chunk(run, seq, crc, data);
    }
  };

  record Options(String hostname, int port, List<String> seeds, String provider, String connect,
      int chunk, int rate) {}

  /** The command line: picocli's, so that --help works and bad input exits 2. */
  @CommandLine.Command(name = "pekko-rdma cluster-demo", mixinStandardHelpOptions = true,
      description = "A member of a cluster that streams checksummed chunks to every other member"
          + " over RDMA and checks what it receives. Type leave, resources or quit.",
      footer = {"", "It exits 0 after leave or quit, 1 if it ended otherwise (a failure: see the"
          + " log)."})
  static final class Cli implements Callable<Integer> {
    @Option(names = "--hostname", defaultValue = "127.0.0.1",
        description = "Pekko's hostname (default: ${DEFAULT-VALUE}).")
    String hostname;

    @Option(names = "--port", defaultValue = "0",
        description = "Pekko's port, 0 picks one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(names = "--seed", description = "A seed node, host:port; repeat it. None: this"
        + " member forms a cluster of its own.")
    List<String> seeds = new ArrayList<>();

    @Option(names = "--provider", defaultValue = "soft",
        description = "soft, auto or native (default: ${DEFAULT-VALUE}).")
    String provider;

    @Option(names = "--connect", defaultValue = "eager",
        description = "eager or lazy (default: ${DEFAULT-VALUE}).")
    String connect;

    @Option(names = "--chunk", defaultValue = "1024",
        description = "Bytes a chunk (default: ${DEFAULT-VALUE}).")
    int chunk;

    @Option(names = "--rate", defaultValue = "200",
        description = "Chunks a second to each peer (default: ${DEFAULT-VALUE}).")
    int rate;

    @Override
    public Integer call() {
      if (chunk < 1 || rate < 1) throw new BadOption("--chunk and --rate must be at least 1");
      Providers.check(provider);
      if (!List.of("eager", "lazy").contains(connect)) {
        throw new BadOption("--connect must be eager or lazy, was '" + connect + "'");
      }
      return run(new Options(hostname, port, seeds, provider, connect, chunk, rate));
    }
  }

  /** Set when the member is told to end (leave, quit): any other end is a failure. */
  private static volatile boolean toldToEnd;

  public static void main(String[] args) {
    System.exit(run(args, System.out, System.err));
  }

  /** Runs the command line and returns the exit code. */
  public static int run(String[] args, PrintStream out, PrintStream err) {
    return SampleCommandLine.execute(args, out, err, SampleCommandLine::withClassName, new Cli());
  }

  private static int run(Options o) {
    ActorSystem<Command> system = ActorSystem.create(guardian(o), "transfer", config(o));
    Thread stdin = new Thread(() -> readCommands(system), "commands");
    stdin.setDaemon(true);
    stdin.start();
    system.getWhenTerminated().toCompletableFuture().join();
    System.out.println(toldToEnd ? "TERMINATED" : "TERMINATED after a failure (see the log)");
    System.out.flush();
    return toldToEnd ? 0 : 1;
  }

  /** The options as config, under -D overrides, over application.conf and the defaults. */
  static Config config(Options o) {
    StringBuilder seeds = new StringBuilder();
    for (String s : o.seeds()) {
      if (seeds.length() > 0) seeds.append(", ");
      seeds.append('"').append("pekko://transfer@").append(s).append('"');
    }
    Config options = ConfigFactory.parseString(""
        + "pekko.actor.provider = cluster\n"
        + "pekko.remote.artery.canonical { hostname = \"" + o.hostname() + "\", port = "
        + o.port() + " }\n"
        + "pekko.cluster.seed-nodes = [" + seeds + "]\n"
        + "pekko.cluster.downing-provider-class ="
        + " \"org.apache.pekko.cluster.sbr.SplitBrainResolverProvider\"\n"
        + "pekko.cluster.split-brain-resolver { active-strategy = keep-majority,"
        + " stable-after = 5s }\n"
        + "pekko.cluster.down-removal-margin = 1s\n"
        + "pekko.coordinated-shutdown.exit-jvm = off\n"
        + "pekko-rdma.provider = " + o.provider() + "\n"
        + "pekko-rdma.cluster.connect = " + o.connect() + "\n"
        + "pekko-rdma.actors.buffer-pool { buffer-size = 16KiB, slab-size = 1MiB, slabs = 4 }\n");
    return ConfigFactory.systemProperties().withFallback(options).withFallback(
        ConfigFactory.load());
  }

  private static void readCommands(ActorSystem<Command> system) {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
        StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        switch (line.trim()) {
          case "leave" -> {
            toldToEnd = true;
            system.tell(LeaveCluster.INSTANCE);
          }
          case "resources" -> System.out.println("RESOURCES "
              + RdmaExtension.get(system).provider().liveResources());
          case "quit" -> {
            toldToEnd = true;
            system.terminate();
          }
          case "" -> { }
          default -> System.out.println("commands: leave, resources, quit");
        }
        System.out.flush();
      }
    } catch (Exception e) {
      // stdin closed: keep running until terminated
    }
  }

  // ---------------------------------------------------------------- the application

  sealed interface Command {}

  enum LeaveCluster implements Command { INSTANCE }

  private enum Report implements Command { INSTANCE }

  private record Event(PeerEvent event) implements Command {}

  private record Arrived(Received<Chunk> received) implements Command {}

  private record SelfUp(ClusterEvent.MemberUp up) implements Command {}

  private record SenderDone(Address to, long ok, long failed, long pending) implements Command {}

  private static Behavior<Command> guardian(Options o) {
    return Behaviors.setup(ctx -> Behaviors.withTimers(timers -> {
      timers.startTimerAtFixedRate(Report.INSTANCE, Duration.ofSeconds(1));
      return new App(ctx, o).behavior();
    }));
  }

  private static final class App {
    private final ActorContext<Command> ctx;
    private final Options o;
    private final RdmaCluster rdma;
    private final Channel<Chunk> chunks;
    private final Map<Address, UniqueKillSwitch> senders = new HashMap<>();
    private final Map<Address, long[]> from = new HashMap<>(); // run, next seq, chunks
    private long received;
    private long bytes;
    private long bad;
    private long runs = System.nanoTime();

    App(ActorContext<Command> ctx, Options o) {
      this.ctx = ctx;
      this.o = o;
      this.rdma = RdmaCluster.get(ctx.getSystem());
      this.chunks = rdma.channel("chunks", CHUNKS);
      chunks.subscribe(ctx.messageAdapter(receivedClass(), Arrived::new));
      rdma.subscribe(ctx.messageAdapter(PeerEvent.class, Event::new));
      Cluster.get(ctx.getSystem()).subscriptions().tell(Subscribe.create(
          ctx.messageAdapter(ClusterEvent.MemberUp.class, SelfUp::new),
          ClusterEvent.MemberUp.class));
      if (o.seeds().isEmpty()) { // the first member: it forms the cluster
        var cluster = Cluster.get(ctx.getSystem());
        cluster.manager().tell(Join.create(cluster.selfMember().address()));
      }
      int max = rdma.maxMessageSize() - 24;
      if (o.chunk() > max) {
        throw new IllegalArgumentException("--chunk " + o.chunk() + " is more than a message "
            + "carries here (" + max + " B)");
      }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static Class<Received<Chunk>> receivedClass() {
      return (Class) Received.class;
    }

    Behavior<Command> behavior() {
      return Behaviors.receive(Command.class)
          .onMessage(SelfUp.class, u -> {
            var self = Cluster.get(ctx.getSystem()).selfMember();
            if (u.up().member().uniqueAddress().equals(self.uniqueAddress())) {
              rdma.selfEndpoint().thenAccept(e -> print("UP address=" + self.address()
                  + " endpoint=" + e.cmAddress() + " provider=" + e.provider()));
            }
            return Behaviors.same();
          })
          .onMessage(Event.class, e -> event(e.event()))
          .onMessage(Arrived.class, a -> arrived(a.received()))
          .onMessage(SenderDone.class, d -> {
            print("SENDER to=" + d.to() + " ok=" + d.ok() + " failed=" + d.failed()
                + " pending=" + d.pending());
            return Behaviors.same();
          })
          .onMessageEquals(Report.INSTANCE, () -> {
            print("STATS chunks=" + received + " bytes=" + bytes + " bad=" + bad + " from="
                + from.keySet() + " sending-to=" + senders.keySet());
            return Behaviors.same();
          })
          .onMessageEquals(LeaveCluster.INSTANCE, () -> {
            var cluster = Cluster.get(ctx.getSystem());
            cluster.manager().tell(Leave.create(cluster.selfMember().address()));
            return Behaviors.same();
          })
          .build();
    }

    private Behavior<Command> event(PeerEvent e) {
      String detail = e instanceof PeerEvent.Refused r ? " reason=" + r.reason() + " detail="
          + r.detail() : e instanceof PeerEvent.Disconnected d ? " detail=" + d.reason() : "";
      print("EVENT " + e.getClass().getSimpleName() + " member=" + e.member() + detail);
      if (e instanceof PeerEvent.Connected c && !senders.containsKey(c.member())) {
        startSender(c.member());
      } else if (e instanceof PeerEvent.Removed || e instanceof PeerEvent.Refused) {
        UniqueKillSwitch s = senders.remove(e.member());
        if (s != null) s.shutdown(); // what it has in flight still completes, and is counted
        from.remove(e.member());
      }
      return Behaviors.same();
    }

    /** Chunks to {@code to} at the rate, each accounted for: delivered, or failed. */
    private void startSender(Address to) {
      long run = ++runs;
      AtomicLong launched = new AtomicLong();
      AtomicLong ok = new AtomicLong();
      AtomicLong failed = new AtomicLong();
      ActorRef<Command> self = ctx.getSelf();
      var pair = Source.unfold(0L, seq -> java.util.Optional.of(
              org.apache.pekko.japi.Pair.create(seq + 1, seq)))
          .throttle(o.rate(), Duration.ofSeconds(1))
          .viaMat(KillSwitches.single(), Keep.right())
          .mapAsync(16, seq -> {
            launched.incrementAndGet();
            return chunks.send(to, Chunk.make(run, seq, o.chunk())).handle((d, t) -> {
              (t == null ? ok : failed).incrementAndGet();
              return t == null;
            });
          })
          .toMat(Sink.ignore(), Keep.both())
          .run(ctx.getSystem());
      senders.put(to, pair.first());
      pair.second().whenComplete((d, t) -> self.tell(new SenderDone(to, ok.get(), failed.get(),
          launched.get() - ok.get() - failed.get())));
    }

    private Behavior<Command> arrived(Received<Chunk> r) {
      Chunk c = r.message();
      long[] s = from.computeIfAbsent(r.from(), a -> new long[] {c.run(), 0, 0});
      if (s[0] != c.run()) { // the sender started again (it reconnected, or restarted)
        s[0] = c.run();
        s[1] = 0;
      }
      if (c.seq() < s[1] || Chunk.crc(c.data()) != c.crc()
          || !java.util.Arrays.equals(c.data(), Chunk.make(c.run(), c.seq(), c.data().length)
              .data())) {
        bad++; // out of order, or not what was sent
        print("BAD from=" + r.from() + " seq=" + c.seq() + " expected=" + s[1]);
      } else if (c.seq() > s[1]) {
        // chunks that failed on a connection that ended (their senders were told so)
        print("GAP from=" + r.from() + " seq=" + c.seq() + " expected=" + s[1]);
      }
      s[1] = c.seq() + 1;
      s[2]++;
      received++;
      bytes += c.data().length;
      return Behaviors.same();
    }
  }

  private static void print(String line) {
    System.out.println(line);
    System.out.flush();
  }
}

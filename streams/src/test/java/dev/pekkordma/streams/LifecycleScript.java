package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.BoundedSourceQueue;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.KillSwitches;
import org.apache.pekko.stream.SinkShape;
import org.apache.pekko.stream.UniqueKillSwitch;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.util.ByteString;

/**
 * A connection's life as a script, run the same on Pekko's Tcp and on RdmaStreams ({@link
 * TcpLike}) and observed at its four ends ({@link EndProbe}s): the client's application is
 * scripted, the server's is scripted or one of the handler shapes Tcp users write; each step
 * (a write, an upstream completed or failed, a reading side cancelled or failed) comes once the
 * one before has settled. What each side's application read, and how each of its two ends
 * ended, is what {@link #differences} compares.
 */
record LifecycleScript(boolean clientHalfClose, boolean serverHalfClose, Shape server,
    boolean idleTimeout, List<Step> steps) {
  /** How long nothing an application sees may change before the next step. */
  static final Duration SETTLE = Duration.ofMillis(40);
  static final Duration SETTLE_MAX = Duration.ofSeconds(1);
  // longer than a script's steps take: it fires after them, when nothing moves, on both
  static final Duration IDLE = Duration.ofMillis(600);
  static final Duration FINAL = Duration.ofMillis(150);

  /** What the server's application is. */
  enum Shape {
    /** Driven by the script, as the client is. */
    SCRIPTED,
    /** {@code Flow.of(ByteString.class)}. */
    ECHO,
    /** Reads nothing (never asks), writes what the script says. */
    NEVER_READ,
    /** Reads everything, writes two elements and completes. */
    WRITE_THEN_COMPLETE,
    /** {@code Sink.cancelled()}, and writes what the script says. */
    SINK_CANCELLED,
    /** Reads everything (until the script cancels), writes nothing: {@code Source.maybe()}. */
    SOURCE_MAYBE
  }

  enum Side { CLIENT, SERVER }

  enum Action { WRITE, COMPLETE, FAIL, CANCEL, FAIL_READING }

  record Step(Side side, Action action, int size) {
    @Override
    public String toString() {
      return side.name().toLowerCase() + " " + action.name().toLowerCase()
          + (action == Action.WRITE ? " " + size : "");
    }
  }

  /** The most a reader that never asks is sent: what the smallest ring of RDMA's holds. */
  static final int UNREAD_MAX = 3000;

  /**
   * Whether a server that never reads is sent no more than both transports hold for it (Tcp's
   * socket buffers, RDMA's small ring): beyond, the writer waits on RDMA where Tcp buffers.
   */
  boolean withinBuffers() {
    if (server != Shape.NEVER_READ) return true;
    int sent = 0;
    for (Step s : steps) {
      if (s.side() == Side.CLIENT && s.action() == Action.WRITE) sent += s.size();
    }
    return sent <= UNREAD_MAX;
  }

  /** One side's application as the script drives it, and its two probes. */
  static final class App {
    final EndProbe writing = EndProbe.create();
    final EndProbe reading = EndProbe.create();
    BoundedSourceQueue<ByteString> out; // null: the shape writes on its own
    UniqueKillSwitch readSwitch; // null: the shape reads (or not) on its own
    CompletableFuture<Optional<ByteString>> maybe; // Source.maybe's

    /** Ends what is still open (after the observation): the connection aborts. */
    void abort() {
      RuntimeException end = new IllegalStateException("the script is over");
      if (out != null) ended(() -> out.fail(end));
      if (readSwitch != null) readSwitch.abort(end);
      if (maybe != null) maybe.completeExceptionally(end);
    }
  }

  /** How one side's application saw its connection. */
  record SideSeen(EndProbe.How writing, String writingCause, ByteString written,
      EndProbe.How reading, String readingCause, ByteString read) {
    /**
     * Its writing failed loudly and its application carried that failure to its reading side
     * (an echo does): the application's own abort.
     */
    boolean carriedLoudFailure() {
      return writing == EndProbe.How.CANCELLED_WITH_FAILURE && TcpDifferences.loud(writingCause)
          && reading == EndProbe.How.CANCELLED_WITH_FAILURE
          && String.valueOf(writingCause).equals(readingCause);
    }

    @Override
    public String toString() {
      return "writing " + writing + (writingCause == null ? "" : " (" + writingCause + ")")
          + " after " + written.size() + " bytes, reading " + reading + " after "
          + read.size() + " bytes";
    }
  }

  /** What a run saw: the client's connection (its materialized value), both sides. */
  record Seen(String connection, SideSeen client, SideSeen server) {
    SideSeen side(Side s) {
      return s == Side.CLIENT ? client : server;
    }
  }

  private static SideSeen seen(App app) {
    EndProbe.Seen w = app.writing.seen;
    EndProbe.Seen r = app.reading.seen;
    return new SideSeen(w.how(), message(w.cause()), w.bytes(), r.how(), message(r.cause()),
        r.bytes());
  }

  private static String message(Throwable t) {
    return t == null ? null : String.valueOf(t.getMessage());
  }

  /** A flow of the application {@code shape}, materializing its controls. */
  private static Flow<ByteString, ByteString, App> application(Shape shape) {
    App app = new App();
    Flow<ByteString, ByteString, ?> reads = app.reading.flow();
    Sink<ByteString, UniqueKillSwitch> switched = reads.viaMat(KillSwitches.single(),
        Keep.right()).to(Sink.ignore());
    Source<ByteString, BoundedSourceQueue<ByteString>> queue =
        Source.<ByteString>queue(256).via(app.writing.flow());
    return switch (shape) {
      case SCRIPTED -> Flow.fromSinkAndSourceMat(switched, queue, (k, q) -> {
        app.readSwitch = k;
        app.out = q;
        return app;
      });
      case ECHO -> reads.via(app.writing.flow()).mapMaterializedValue(m -> app);
      case NEVER_READ -> Flow.fromSinkAndSourceMat(reads.to(Sink.fromGraph(new NeverAsks())),
          queue, (n, q) -> {
            app.out = q;
            return app;
          });
      case WRITE_THEN_COMPLETE -> Flow.fromSinkAndSourceMat(reads.to(Sink.ignore()),
          Source.from(List.of(bytes(1500, 1), bytes(20, 2))).via(app.writing.flow()),
          (n, m) -> app);
      case SINK_CANCELLED -> Flow.fromSinkAndSourceMat(reads.to(Sink.cancelled()), queue,
          (n, q) -> {
            app.out = q;
            return app;
          });
      case SOURCE_MAYBE -> Flow.fromSinkAndSourceMat(switched,
          Source.<ByteString>maybe().via(app.writing.flow()), (k, m) -> {
            app.readSwitch = k;
            app.maybe = m;
            return app;
          });
    };
  }

  /** {@code size} bytes that say which write they are. */
  static ByteString bytes(int size, int n) {
    byte[] b = new byte[size];
    for (int i = 0; i < size; i++) b[i] = (byte) (n * 31 + i);
    return ByteString.fromArrayUnsafe(b);
  }

  /** A connection each way, so that the scripts' first does not wait for the JIT. */
  static void warmUp(TcpLike t, ActorSystem<?> system) throws Exception {
    new LifecycleScript(true, false, Shape.ECHO, false,
        List.of(new Step(Side.CLIENT, Action.WRITE, 100), new Step(Side.CLIENT, Action.COMPLETE,
            0))).run(t, system);
  }

  /** Runs the script on {@code t}: what its four ends saw. */
  Seen run(TcpLike t, ActorSystem<?> system) throws Exception {
    Optional<Duration> idle = idleTimeout ? Optional.of(IDLE) : Optional.empty();
    CompletableFuture<App> served = new CompletableFuture<>();
    ServerBinding binding = t.bind(HOST, 0, 100, List.of(), serverHalfClose, idle)
        .to(Sink.foreach(c -> served.complete(c.handleWith(application(server), system))))
        .run(system).toCompletableFuture().get(5, TimeUnit.SECONDS);
    int port = binding.localAddress().getPort();
    Pair<App, CompletionStage<OutgoingConnection>> client = application(Shape.SCRIPTED)
        .joinMat(t.outgoingConnection(new InetSocketAddress(HOST, port), Optional.empty(),
            List.of(), clientHalfClose, Optional.empty(), idle), Keep.both())
        .run(system);
    App c = client.first();
    String connection;
    App s;
    try {
      OutgoingConnection out = client.second().toCompletableFuture().get(5, TimeUnit.SECONDS);
      connection = out.remoteAddress().getPort() == port ? "connected" : "connected elsewhere";
      s = served.get(5, TimeUnit.SECONDS);
    } catch (Exception e) {
      c.abort();
      binding.unbind();
      throw e;
    }
    try {
      settle(c, s);
      int n = 0;
      for (Step step : steps) {
        apply(step.side() == Side.CLIENT ? c : s, step, n++);
        settle(c, s);
      }
      long deadline = System.nanoTime() + FINAL.toNanos() + (idleTimeout ? IDLE.toNanos() : 0);
      while (System.nanoTime() < deadline && !ended(c, s)) Thread.sleep(10);
      return new Seen(connection, seen(c), seen(s));
    } finally {
      c.abort();
      s.abort();
      binding.unbind();
    }
  }

  /**
   * Waits until what both applications see (each probe's end and bytes) has not changed for
   * {@link #SETTLE}, for at most {@link #SETTLE_MAX}: the step's effects are over, however busy
   * the machine.
   */
  private static void settle(App... apps) throws InterruptedException {
    long deadline = System.nanoTime() + SETTLE_MAX.toNanos();
    String last = state(apps);
    long since = System.nanoTime();
    while (System.nanoTime() < deadline) {
      Thread.sleep(5);
      String now = state(apps);
      if (!now.equals(last)) {
        last = now;
        since = System.nanoTime();
      } else if (System.nanoTime() - since >= SETTLE.toNanos()) {
        return;
      }
    }
  }

  private static String state(App... apps) {
    StringBuilder b = new StringBuilder();
    for (App a : apps) {
      b.append(a.writing.seen.how()).append(a.writing.seen.bytes().size()).append(' ')
          .append(a.reading.seen.how()).append(a.reading.seen.bytes().size()).append(' ');
    }
    return b.toString();
  }

  /** Completes or fails a queue, which may have ended already (a second end is refused). */
  private static void ended(Runnable end) {
    try {
      end.run();
    } catch (IllegalStateException e) {
      // it had
    }
  }

  private static boolean ended(App... apps) {
    for (App a : apps) {
      if (a.writing.seen.how() == EndProbe.How.OPEN
          || a.reading.seen.how() == EndProbe.How.OPEN) {
        return false;
      }
    }
    return true;
  }

  private static void apply(App app, Step step, int n) {
    RuntimeException failure = new IllegalStateException("the script failed it");
    switch (step.action()) {
      case WRITE -> {
        if (app.out != null) app.out.offer(bytes(step.size(), n));
      }
      case COMPLETE -> {
        if (app.out != null) ended(app.out::complete);
        if (app.maybe != null) app.maybe.complete(Optional.empty());
      }
      case FAIL -> {
        if (app.out != null) ended(() -> app.out.fail(failure));
        if (app.maybe != null) app.maybe.completeExceptionally(failure);
      }
      case CANCEL -> {
        if (app.readSwitch != null) app.readSwitch.shutdown();
      }
      case FAIL_READING -> {
        if (app.readSwitch != null) app.readSwitch.abort(failure);
      }
    }
  }

  // ------------------------------------------------------------ the comparison

  /**
   * Runs the script on both transports (at once) and compares what they saw ({@link
   * TcpDifferences}): none unexplained when one run of three agrees (the second and third one
   * transport after the other), else each run's report.
   */
  TcpDifferences.Result compare(TcpLike tcp, TcpLike rdma, ActorSystem<?> system)
      throws Exception {
    List<String> reports = new ArrayList<>();
    for (int run = 0; run < 3; run++) {
      Seen onTcp;
      Seen onRdma;
      if (run == 0) {
        CompletableFuture<Seen> t = CompletableFuture.supplyAsync(() -> {
          try {
            return run(tcp, system);
          } catch (Exception e) {
            throw new IllegalStateException(e);
          }
        });
        onRdma = run(rdma, system);
        onTcp = t.get();
      } else {
        onTcp = run(tcp, system);
        onRdma = run(rdma, system);
      }
      TcpDifferences.Result r = TcpDifferences.compare(this, onTcp, onRdma);
      if (r.unexplained().isEmpty()) return r;
      reports.add("run " + (run + 1) + ": " + r.unexplained() + "\n    Tcp:  " + onTcp
          + "\n    RDMA: " + onRdma);
    }
    reports.add(0, toString());
    return new TcpDifferences.Result(reports, java.util.Set.of());
  }

  /** A sink that never asks for anything: an application that does not read. */
  private static final class NeverAsks extends GraphStage<SinkShape<ByteString>> {
    private final Inlet<ByteString> in = Inlet.create("NeverAsks.in");
    private final SinkShape<ByteString> shape = SinkShape.of(in);

    @Override
    public SinkShape<ByteString> shape() {
      return shape;
    }

    @Override
    public GraphStageLogic createLogic(Attributes attributes) {
      return new GraphStageLogic(shape) {
        {
          setHandler(in, new AbstractInHandler() {
            @Override
            public void onPush() {}
          });
        }
      };
    }
  }

  @Override
  public String toString() {
    return "client halfClose " + clientHalfClose + ", server " + server + " halfClose "
        + serverHalfClose + (idleTimeout ? ", idle timeout " + IDLE.toMillis() + " ms" : "")
        + ", steps " + steps;
  }
}

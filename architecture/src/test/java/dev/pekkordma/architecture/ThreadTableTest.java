package dev.pekkordma.architecture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.actors.DeviceActor;
import dev.pekkordma.actors.RdmaExtension;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.streams.RdmaStreams;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.AskPattern;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Test;

/**
 * ARCHITECTURE.md's thread table is true: a system that uses the streams, the actors and a
 * completion source has no thread the table does not name, and the ones each part starts.
 */
class ThreadTableTest {
  private static final String SYSTEM = "threads";

  /** A row of the table: what the thread is, and the names it may have. */
  record Row(String thread, List<Pattern> names) {}

  @Test
  void everyThreadOfARunningSystemIsInTheTable() throws Exception {
    List<Row> table = table(architecture());
    Set<Long> before = liveThreads().keySet();
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), SYSTEM, ConfigFactory
        .parseString("pekko-rdma.soft.devices = [soft0]\npekko-rdma.actors.devices = [soft0]")
        .withFallback(ConfigFactory.load()));
    Map<String, String> seen = new TreeMap<>(); // thread name -> its row
    List<String> unlisted = new ArrayList<>();
    try {
      RdmaStreams rdma = RdmaStreams.get(system);
      ServerBinding binding = rdma.bind("127.0.0.1", 0)
          .to(Sink.foreach(c -> c.handleWith(Flow.of(ByteString.class), system))).run(system)
          .toCompletableFuture().get(30, TimeUnit.SECONDS);
      List<ByteString> echoed = Source.single(ByteString.fromString("threads"))
          .via(rdma.outgoingConnection("127.0.0.1", binding.localAddress().getPort()))
          .runWith(Sink.seq(), system).toCompletableFuture().get(30, TimeUnit.SECONDS);
      assertEquals("threads", echoed.get(0).utf8String());
      AskPattern.<DeviceActor.Command, DeviceActor.DeviceInfo>askWithStatus(
          RdmaExtension.get(system).device("soft0"), DeviceActor.GetInfo::new,
          Duration.ofSeconds(30), system.scheduler())
          .toCompletableFuture().get(30, TimeUnit.SECONDS);
      try (DeviceContext ctx = RdmaRuntime.get(system).provider().open("soft0");
          CompletionChannel channel = ctx.createCompletionChannel();
          CompletionQueue cq = ctx.createCq(16, channel)) {
        var completions = rdma.completions(cq, 16).to(Sink.ignore()).run(system);
        Thread.sleep(300); // the completion source's thread is up
        for (Map.Entry<Long, String> t : liveThreads().entrySet()) {
          if (before.contains(t.getKey())) continue;
          Row row = table.stream().filter(r -> r.names().stream()
              .anyMatch(p -> p.matcher(t.getValue()).matches())).findFirst().orElse(null);
          if (row == null) {
            unlisted.add(t.getValue());
          } else {
            seen.put(t.getValue(), row.thread());
          }
        }
      }
      binding.unbind().toCompletableFuture().get(30, TimeUnit.SECONDS);
    } finally {
      system.terminate();
      system.getWhenTerminated().toCompletableFuture().get(60, TimeUnit.SECONDS);
    }
    assertEquals(List.of(), unlisted, "threads ARCHITECTURE.md's table does not name (seen: "
        + seen + ")");
  }

  private static Map<Long, String> liveThreads() {
    Map<Long, String> m = new LinkedHashMap<>();
    for (ThreadInfo t : ManagementFactory.getThreadMXBean().dumpAllThreads(false, false)) {
      m.put(t.getThreadId(), t.getThreadName());
    }
    return m;
  }

  private static String architecture() throws IOException {
    Path dir = Path.of("").toAbsolutePath();
    while (dir != null && !Files.exists(dir.resolve("ARCHITECTURE.md"))) dir = dir.getParent();
    if (dir == null) throw new IllegalStateException("no ARCHITECTURE.md above " + Path.of(""));
    return Files.readString(dir.resolve("ARCHITECTURE.md"));
  }

  /**
   * The rows of the table under "## The threads": its first column says what the thread is,
   * its second the names, each in backticks, {@code <...>} standing for any text.
   */
  static List<Row> table(String page) {
    int at = page.indexOf("\n## The threads");
    assertTrue(at >= 0, "ARCHITECTURE.md has a section 'The threads'");
    String section = page.substring(at + 1);
    int next = section.indexOf("\n## ", 1);
    if (next > 0) section = section.substring(0, next);
    List<Row> rows = new ArrayList<>();
    Pattern code = Pattern.compile("`([^`]+)`");
    for (String line : section.lines().toList()) {
      if (!line.startsWith("|") || line.startsWith("|---")) continue;
      String[] cells = line.split("\\|");
      if (cells.length < 3) continue;
      List<Pattern> names = new ArrayList<>();
      Matcher m = code.matcher(cells[2]);
      while (m.find()) names.add(pattern(m.group(1)));
      if (!names.isEmpty()) rows.add(new Row(cells[1].trim(), names));
    }
    assertTrue(rows.size() > 5, "the thread table's rows: " + rows);
    return rows;
  }

  /** A name as the table writes it, {@code <...>} any text: as a pattern. */
  static Pattern pattern(String name) {
    return Pattern.compile(Arrays.stream(name.split("<[^>]+>", -1)).map(Pattern::quote)
        .collect(Collectors.joining(".+")));
  }
}

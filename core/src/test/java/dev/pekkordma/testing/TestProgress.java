package dev.pekkordma.testing;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Says where a test run is while it runs, for runs whose output is otherwise seen only at their
 * end (Maven's {@code -q}, the Soft-RoCE VM): each test class's start and end, with its seconds
 * and result, goes to the file that {@code -Dpekko-rdma.test.progress} names ({@code /dev/console}
 * in the VM, so the lines reach the host's log as they happen). A test that runs past
 * {@code -Dpekko-rdma.test.progress.slow-seconds} (60 by default) is named again each time that
 * much more has passed, so a hang names its test. A test that fails on its timeout, or runs past
 * {@code -Dpekko-rdma.test.progress.dump-seconds} (240 by default; for engines without timeouts,
 * such as jqwik's), gets a dump of every thread in this JVM's test output (Surefire's
 * {@code -output.txt}; in the VM, the step's {@code output.txt}).
 *
 * <p>Registered for every module that uses core's test-jar, through
 * {@code META-INF/services/org.junit.platform.launcher.TestExecutionListener}; without the
 * property it only dumps the threads.
 */
public final class TestProgress implements TestExecutionListener {
  private static final String SINK = "pekko-rdma.test.progress";
  private static final String SLOW = "pekko-rdma.test.progress.slow-seconds";
  private static final String DUMP = "pekko-rdma.test.progress.dump-seconds";

  private final Optional<Path> sink =
      Optional.ofNullable(System.getProperty(SINK)).filter(s -> !s.isBlank()).map(Path::of);
  private final Duration slow = Duration.ofSeconds(Long.getLong(SLOW, 60));
  private final Duration dump = Duration.ofSeconds(Long.getLong(DUMP, 240));
  private final String module = Path.of(System.getProperty("user.dir")).getFileName().toString();
  private final Map<TestIdentifier, Long> running = new ConcurrentHashMap<>();
  private final Set<TestIdentifier> dumped = ConcurrentHashMap.newKeySet();
  private final Map<TestIdentifier, Tally> classes = new ConcurrentHashMap<>();
  private ScheduledExecutorService watchdog;

  private static final class Tally {
    final long startNanos = System.nanoTime();
    /** When a test of the class last started or ended, or the class did. */
    volatile long lastNanos = startNanos;
    int tests, failed, skipped;
  }

  @Override
  public void testPlanExecutionStarted(TestPlan plan) {
    watchdog = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "test-progress-watchdog");
      t.setDaemon(true);
      return t;
    });
    long every = Math.max(1, slow.toSeconds());
    watchdog.scheduleAtFixedRate(this::nameSlowTests, every, every, TimeUnit.SECONDS);
  }

  @Override
  public void testPlanExecutionFinished(TestPlan plan) {
    if (watchdog != null) watchdog.shutdownNow();
  }

  @Override
  public void executionStarted(TestIdentifier id) {
    if (isClass(id)) {
      classes.put(id, new Tally());
      say(className(id) + " started");
    } else if (id.isTest()) {
      running.put(id, System.nanoTime());
      tallyOf(id).ifPresent(t -> t.lastNanos = System.nanoTime());
    }
  }

  @Override
  public void executionSkipped(TestIdentifier id, String reason) {
    if (id.isTest()) tallyOf(id).ifPresent(t -> { t.tests++; t.skipped++; });
    else if (isClass(id)) say(className(id) + " skipped: " + reason);
  }

  @Override
  public void executionFinished(TestIdentifier id, TestExecutionResult result) {
    boolean timedOut = result.getThrowable().map(TestProgress::isTimeout).orElse(false);
    if (timedOut) {
      dumpThreads(testName(id) + " timed out");
      say(testName(id) + " TIMED OUT: " + result.getThrowable().get().getMessage()
          + " (every thread's stack is in the test output)");
    }
    if (id.isTest()) {
      running.remove(id);
      dumped.remove(id);
      // ABORTED: an assumption did not hold, so the test was skipped
      boolean aborted = result.getStatus() == TestExecutionResult.Status.ABORTED;
      boolean failed = result.getStatus() == TestExecutionResult.Status.FAILED;
      tallyOf(id).ifPresent(t -> {
        t.tests++;
        if (failed) t.failed++;
        if (aborted) t.skipped++;
        t.lastNanos = System.nanoTime();
      });
      if (failed && !timedOut) say(testName(id) + " FAILED");
    } else if (isClass(id)) {
      Tally t = classes.remove(id);
      dumped.remove(id);
      double seconds = t == null ? 0 : (System.nanoTime() - t.startNanos) / 1e9;
      String outcome = result.getStatus() != TestExecutionResult.Status.FAILED
          && (t == null || t.failed == 0) ? "passed" : "FAILED";
      say(String.format("%s %s in %.1f s (%d tests, %d failed, %d skipped)", className(id),
          outcome, seconds, t == null ? 0 : t.tests, t == null ? 0 : t.failed,
          t == null ? 0 : t.skipped));
    }
  }

  private void nameSlowTests() {
    long now = System.nanoTime();
    // a class none of whose tests runs is in its set-up or tear-down (or between tests)
    classes.forEach((id, tally) -> {
      long seconds = TimeUnit.NANOSECONDS.toSeconds(now - tally.lastNanos);
      boolean testRunning = running.keySet().stream()
          .anyMatch(t -> t.getUniqueId().startsWith(id.getUniqueId()));
      if (!testRunning && seconds >= slow.toSeconds()) {
        say(className(id) + ": no test of it has started or ended for " + seconds + " s");
      }
      if (!testRunning && seconds >= dump.toSeconds() && dumped.add(id)) {
        dumpThreads(className(id) + " has run no test for " + seconds + " s");
      }
    });
    running.forEach((id, started) -> {
      long seconds = TimeUnit.NANOSECONDS.toSeconds(now - started);
      if (seconds >= slow.toSeconds()) say(testName(id) + " still running after " + seconds + " s");
      if (seconds >= dump.toSeconds() && dumped.add(id)) {
        dumpThreads(testName(id) + " has run " + seconds + " s");
        say(testName(id) + ": every thread's stack is in the test output");
      }
    });
  }

  private static void dumpThreads(String why) {
    System.out.println("==== " + why + "; every thread of this JVM:");
    System.out.println(threadDump());
  }

  private Optional<Tally> tallyOf(TestIdentifier test) {
    String uid = test.getUniqueId();
    return classes.entrySet().stream()
        .filter(e -> uid.startsWith(e.getKey().getUniqueId()))
        .map(Map.Entry::getValue)
        .findFirst();
  }

  private static boolean isTimeout(Throwable t) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (c instanceof TimeoutException) return true;
    }
    return false;
  }

  private static boolean isClass(TestIdentifier id) {
    return id.isContainer() && id.getSource().filter(ClassSource.class::isInstance).isPresent();
  }

  private static String className(TestIdentifier id) {
    return id.getSource().filter(ClassSource.class::isInstance).map(ClassSource.class::cast)
        .map(s -> s.getJavaClass().getSimpleName()).orElse(id.getDisplayName());
  }

  private String testName(TestIdentifier id) {
    String uid = id.getUniqueId();
    String owner = classes.keySet().stream().filter(c -> uid.startsWith(c.getUniqueId()))
        .map(TestProgress::className).findFirst().orElse("?");
    return owner + "#" + id.getDisplayName();
  }

  private synchronized void say(String line) {
    if (sink.isEmpty()) return;
    byte[] bytes = ("[tests] " + module + ": " + line + "\n").getBytes(StandardCharsets.UTF_8);
    try (OutputStream out = new FileOutputStream(sink.get().toFile(), true)) {
      out.write(bytes);
    } catch (IOException e) {
      System.err.println("TestProgress: cannot write to " + sink.get() + ": " + e);
    }
  }

  /** Every live thread with its whole stack and the locks it holds or waits for. */
  static String threadDump() {
    StringBuilder b = new StringBuilder();
    for (ThreadInfo info : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
      b.append('"').append(info.getThreadName()).append("\" ").append(info.getThreadState());
      if (info.getLockName() != null) b.append(" on ").append(info.getLockName());
      if (info.getLockOwnerName() != null) b.append(" owned by \"").append(info.getLockOwnerName()).append('"');
      b.append('\n');
      for (StackTraceElement e : info.getStackTrace()) b.append("\tat ").append(e).append('\n');
      b.append('\n');
    }
    return b.toString();
  }
}

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
 * much more has passed, so a hang names its test; one that fails on its timeout gets a dump of
 * every thread in this JVM's output (the surefire report's {@code -output.txt}).
 *
 * <p>Registered for every module that uses core's test-jar, through
 * {@code META-INF/services/org.junit.platform.launcher.TestExecutionListener}; without the
 * property it only dumps the threads on a timeout.
 */
public final class TestProgress implements TestExecutionListener {
  private static final String SINK = "pekko-rdma.test.progress";
  private static final String SLOW = "pekko-rdma.test.progress.slow-seconds";

  private final Optional<Path> sink =
      Optional.ofNullable(System.getProperty(SINK)).filter(s -> !s.isBlank()).map(Path::of);
  private final Duration slow = Duration.ofSeconds(Long.getLong(SLOW, 60));
  private final String module = Path.of(System.getProperty("user.dir")).getFileName().toString();
  private final Map<TestIdentifier, Long> running = new ConcurrentHashMap<>();
  private final Map<TestIdentifier, Tally> classes = new ConcurrentHashMap<>();
  private ScheduledExecutorService watchdog;

  private static final class Tally {
    final long startNanos = System.nanoTime();
    int tests, failed, skipped;
  }

  @Override
  public void testPlanExecutionStarted(TestPlan plan) {
    if (sink.isEmpty()) return;
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
      String name = testName(id);
      System.out.println("==== " + name + " timed out; every thread of this JVM:");
      System.out.println(threadDump());
      say(name + " TIMED OUT: " + result.getThrowable().get().getMessage()
          + " (the threads are in " + module + "'s surefire report output)");
    }
    if (id.isTest()) {
      running.remove(id);
      boolean failed = result.getStatus() != TestExecutionResult.Status.SUCCESSFUL;
      tallyOf(id).ifPresent(t -> { t.tests++; if (failed) t.failed++; });
      if (failed && !timedOut) say(testName(id) + " " + result.getStatus());
    } else if (isClass(id)) {
      Tally t = classes.remove(id);
      double seconds = t == null ? 0 : (System.nanoTime() - t.startNanos) / 1e9;
      String outcome = result.getStatus() == TestExecutionResult.Status.SUCCESSFUL
          && (t == null || t.failed == 0) ? "passed" : "FAILED";
      say(String.format("%s %s in %.1f s (%d tests, %d failed, %d skipped)", className(id),
          outcome, seconds, t == null ? 0 : t.tests, t == null ? 0 : t.failed,
          t == null ? 0 : t.skipped));
    }
  }

  private void nameSlowTests() {
    long now = System.nanoTime();
    running.forEach((id, started) -> {
      long seconds = TimeUnit.NANOSECONDS.toSeconds(now - started);
      if (seconds >= slow.toSeconds()) say(testName(id) + " still running after " + seconds + " s");
    });
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

package dev.pekkordma.cluster;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;
import ch.qos.logback.core.AppenderBase;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.slf4j.LoggerFactory;

/** Keeps the WARN and ERROR lines logged in this JVM while installed, for tests to read. */
final class LogCapture extends AppenderBase<ILoggingEvent> {
  private final List<ILoggingEvent> events = new CopyOnWriteArrayList<>();

  static LogCapture install() {
    LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
    LogCapture c = new LogCapture();
    c.setContext(ctx);
    c.start();
    ctx.getLogger(Logger.ROOT_LOGGER_NAME).addAppender(c);
    return c;
  }

  void uninstall() {
    ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger(Logger.ROOT_LOGGER_NAME)
        .detachAppender(this);
    stop();
  }

  @Override
  protected void append(ILoggingEvent e) {
    if (e.getLevel().isGreaterOrEqual(Level.WARN)) events.add(e);
  }

  /** How many lines so far: a mark to read from. */
  int mark() {
    return events.size();
  }

  /** The lines of at least {@code level} since {@code mark}. */
  List<String> since(int mark, Level level) {
    return events.subList(mark, events.size()).stream()
        .filter(e -> e.getLevel().isGreaterOrEqual(level))
        .map(LogCapture::line).collect(Collectors.toList());
  }

  /** The message, then each exception of the cause chain logged with it. */
  private static String line(ILoggingEvent e) {
    StringBuilder b = new StringBuilder(e.getFormattedMessage());
    for (IThrowableProxy t = e.getThrowableProxy(); t != null; t = t.getCause()) {
      b.append(" | ").append(t.getClassName()).append(": ").append(t.getMessage());
    }
    return b.toString();
  }

  /** The first line of {@code level} since {@code mark} that matches; fails listing the others. */
  String await(int mark, Level level, Predicate<String> p, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      for (String m : since(mark, level)) {
        if (p.test(m)) return m;
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no matching " + level + " line within " + timeout + "; logged: "
            + since(mark, Level.WARN));
      }
      TestCluster.sleep(20);
    }
  }
}

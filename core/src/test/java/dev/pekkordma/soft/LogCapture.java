package dev.pekkordma.soft;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.stream.Collectors;
import org.slf4j.LoggerFactory;

/** Collects what a logger writes while it is open, for tests that check a line was logged. */
final class LogCapture implements AutoCloseable {
  private final Logger logger;
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  LogCapture(Class<?> source) {
    logger = (Logger) LoggerFactory.getLogger(source);
    appender.start();
    logger.addAppender(appender);
  }

  /** The formatted messages logged so far. */
  List<String> lines() {
    synchronized (appender.list) {
      return appender.list.stream().map(ILoggingEvent::getFormattedMessage)
          .collect(Collectors.toList());
    }
  }

  /** Waits up to {@code millis} for a line containing every one of {@code parts}. */
  String await(long millis, String... parts) throws InterruptedException {
    long deadline = System.nanoTime() + millis * 1_000_000;
    while (System.nanoTime() < deadline) {
      for (String line : lines()) {
        boolean all = true;
        for (String p : parts) all &= line.contains(p);
        if (all) return line;
      }
      Thread.sleep(5);
    }
    throw new AssertionError("no line with " + List.of(parts) + " was logged; logged: " + lines());
  }

  @Override
  public void close() {
    logger.detachAppender(appender);
    appender.stop();
  }
}

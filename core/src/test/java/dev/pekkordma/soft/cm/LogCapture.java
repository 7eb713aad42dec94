package dev.pekkordma.soft.cm;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;
import org.slf4j.LoggerFactory;

/** What the software provider's CM and TLS log at WARN and above, read back by tests. */
final class LogCapture implements AutoCloseable {
  private final List<Logger> loggers = new ArrayList<>();
  private final ListAppender<ILoggingEvent> appender = new ListAppender<>();

  LogCapture() {
    appender.setName("test-capture-" + System.identityHashCode(this));
    appender.start();
    for (String name : List.of("dev.pekkordma.soft.cm", "dev.pekkordma.soft.tls")) {
      Logger l = (Logger) LoggerFactory.getLogger(name);
      l.addAppender(appender);
      loggers.add(l);
    }
  }

  /** The formatted WARN and ERROR lines so far. */
  List<String> warnings() {
    List<ILoggingEvent> events;
    synchronized (appender) { // AppenderBase appends holding the appender's monitor
      events = new ArrayList<>(appender.list);
    }
    List<String> out = new ArrayList<>();
    for (ILoggingEvent e : events) {
      if (e.getLevel().isGreaterOrEqual(Level.WARN)) out.add(e.getFormattedMessage());
    }
    return out;
  }

  /** WARN lines naming the peer {@code 127.0.0.1:port}. */
  List<String> naming(String hostAndPort) {
    return naming(hostAndPort, 0);
  }

  /** WARN lines naming the peer since the {@code from}th (a {@link #mark}): ports get reused. */
  List<String> naming(String hostAndPort, int from) {
    List<String> all = warnings();
    List<String> out = new ArrayList<>();
    for (String w : all.subList(Math.min(from, all.size()), all.size())) {
      if (names(w, hostAndPort)) out.add(w);
    }
    return out;
  }

  /** How many WARN lines there are so far. */
  int mark() {
    return warnings().size();
  }

  /** Whether {@code line} names {@code hostAndPort} as a whole (not as a prefix of a port). */
  static boolean names(String line, String hostAndPort) {
    int at = line.indexOf(hostAndPort);
    while (at >= 0) {
      int end = at + hostAndPort.length();
      if (end == line.length() || !Character.isDigit(line.charAt(end))) return true;
      at = line.indexOf(hostAndPort, at + 1);
    }
    return false;
  }

  /** Waits until a WARN line matches; fails listing what was logged. */
  String await(Predicate<String> wanted, Duration timeout, String what) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (true) {
      for (String w : warnings()) if (wanted.test(w)) return w;
      if (System.nanoTime() > deadline) {
        throw new AssertionError("no warning " + what + " within " + timeout.toMillis()
            + " ms; logged: " + warnings());
      }
      LockSupport.parkNanos(5_000_000);
    }
  }

  @Override
  public void close() {
    for (Logger l : loggers) l.detachAppender(appender);
    appender.stop();
  }
}

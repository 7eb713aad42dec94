package dev.pekkordma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import com.typesafe.config.ConfigFactory;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The provider chosen, and why, is said once at INFO: nobody runs on the emulation unawares. */
class ProviderChoiceTest {
  private static List<String> choices(String setting) {
    Logger logger = (Logger) LoggerFactory.getLogger(RdmaProviders.class);
    ListAppender<ILoggingEvent> appender = new ListAppender<>();
    appender.start();
    Level before = logger.getLevel();
    logger.setLevel(Level.INFO);
    logger.addAppender(appender);
    try (RdmaProvider p = RdmaProviders.load(ConfigFactory.parseString(
        "pekko-rdma.provider = " + setting).withFallback(ConfigFactory.load()))) {
      assertEquals("soft", p.name(), "this machine has no RDMA device");
    } finally {
      logger.detachAppender(appender);
      logger.setLevel(before);
    }
    List<String> lines = new ArrayList<>();
    for (ILoggingEvent e : appender.list) {
      if (e.getLevel() == Level.INFO) lines.add(e.getFormattedMessage());
    }
    return lines;
  }

  @Test
  void autoSaysWhyItFellBackToTheSoftwareProvider() {
    List<String> lines = choices("auto");
    assertEquals(1, lines.size(), lines.toString());
    String line = lines.get(0);
    // core's tests have no native provider on their class path
    assertTrue(line.contains("the soft provider") && line.contains("pekko-rdma.provider = auto")
        && line.contains("pekko-rdma-native is not on the class path")
        && line.contains("[soft0]"), line);
  }

  @Test
  void aProviderNamedInTheSettingSaysSo() {
    List<String> lines = choices("soft");
    assertEquals(1, lines.size(), lines.toString());
    assertTrue(lines.get(0).contains("(pekko-rdma.provider = soft)"), lines.get(0));
  }
}

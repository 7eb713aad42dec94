package dev.pekkordma.config;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

class RdmaSettingsTest {
  private static RdmaSettings parse(String text) {
    return RdmaSettings.from(ConfigFactory.parseString(text));
  }

  private static void assertRejected(String text, String path, String why) {
    ConfigException e = assertThrows(ConfigException.class, () -> parse(text));
    assertTrue(e.getMessage().contains(path), "message names " + path + ": " + e.getMessage());
    assertTrue(e.getMessage().contains(why), "message says " + why + ": " + e.getMessage());
  }

  @Test
  void defaultsComeFromReferenceConf() {
    RdmaSettings s = parse("");
    assertEquals("auto", s.provider());
    assertEquals(java.util.List.of("soft0"), s.soft().devices);
    assertEquals(4096, s.soft().mtu);
  }

  @Test
  void overridesAreRead() {
    RdmaSettings s = parse("pekko-rdma { provider = soft, soft.devices = [a, b], soft.mtu = 1024 }");
    assertEquals("soft", s.provider());
    assertEquals(java.util.List.of("a", "b"), s.soft().devices);
    assertEquals(1024, s.soft().mtu);
  }

  @Test
  void wrongValuesFailNamingTheirPath() {
    assertRejected("pekko-rdma.provider = fast", "pekko-rdma.provider", "auto, native or soft");
    assertRejected("pekko-rdma.soft.mtu = 1000", "pekko-rdma.soft.mtu", "256, 512");
    assertRejected("pekko-rdma.soft.fabric.port = 70000", "pekko-rdma.soft.fabric.port", "65535");
    assertRejected("pekko-rdma.soft.limits.max-sge = 0", "pekko-rdma.soft.limits.max-sge", "positive");
    assertRejected("pekko-rdma.soft.devices = []", "pekko-rdma.soft.devices", "at least one");
    assertRejected("pekko-rdma.soft.devices = [x, x]", "pekko-rdma.soft.devices", "repeat");
    assertRejected("pekko-rdma.cm.connect-timeout = 0s", "pekko-rdma.cm.connect-timeout", "positive");
  }

  @Test
  void wrongTypesFailNamingTheirPath() {
    assertRejected("pekko-rdma.soft.mtu = big", "soft.mtu", "");
    assertRejected("pekko-rdma.cm.connect-timeout = soon", "connect-timeout", "");
  }
}

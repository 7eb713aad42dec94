package dev.pekkordma.cluster;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

/** Every wrong value fails naming its key. */
class ClusterSettingsTest {
  private static ClusterSettings read(String s) {
    return ClusterSettings.from(ConfigFactory.parseString(s).withFallback(ConfigFactory.load()));
  }

  private static void fails(String setting, String key, String why) {
    var e = assertThrows(ConfigException.class, () -> read(setting));
    assertTrue(e.getMessage().contains(key) && e.getMessage().contains(why), e.getMessage());
  }

  @Test
  void defaultsAreValid() {
    ClusterSettings s = read("");
    assertEquals(ClusterSettings.Connect.EAGER, s.connect);
    assertEquals(16, s.receiveDepth);
  }

  @Test
  void connectIsEagerOrLazy() {
    assertEquals(ClusterSettings.Connect.LAZY, read("pekko-rdma.cluster.connect = lazy").connect);
    fails("pekko-rdma.cluster.connect = sometimes", "pekko-rdma.cluster.connect",
        "must be eager or lazy, was 'sometimes'");
  }

  @Test
  void badValuesNameTheirKey() {
    fails("pekko-rdma.cluster.receive-depth = 1", "pekko-rdma.cluster.receive-depth",
        "at least 2");
    fails("pekko-rdma.cluster.bind-port = 70000", "pekko-rdma.cluster.bind-port", "65535");
    fails("pekko-rdma.cluster.flush-timeout = 0s", "pekko-rdma.cluster.flush-timeout",
        "positive");
    fails("pekko-rdma.cluster.reconnect-backoff { min-backoff = 2s, max-backoff = 1s }",
        "pekko-rdma.cluster.reconnect-backoff.max-backoff", "at least min-backoff");
    fails("pekko-rdma.cluster.pending-request-timeout = 9s",
        "pekko-rdma.cluster.pending-request-timeout", "pekko-rdma.actors.cm.accept-timeout");
  }

  @Test
  void aSystemThatIsNoClusterIsRefusedSayingSo() {
    var kit = org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit.create("NoCluster",
        ConfigFactory.parseString("pekko-rdma.provider = soft"));
    try {
      var e = assertThrows(RuntimeException.class, () -> RdmaCluster.get(kit.system()));
      assertTrue(String.valueOf(e.getMessage()).contains("cluster"), e.toString());
    } finally {
      kit.shutdownTestKit();
    }
  }

  @Test
  void aWrongSettingStopsTheExtensionNamingTheKey() {
    var kit = org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit.create("BadSettings",
        TestCluster.config("pekko-rdma.cluster.connect = never"));
    try {
      var e = assertThrows(ConfigException.class, () -> RdmaCluster.get(kit.system()));
      assertTrue(e.getMessage().contains("pekko-rdma.cluster.connect"), e.getMessage());
    } finally {
      kit.shutdownTestKit();
    }
  }
}

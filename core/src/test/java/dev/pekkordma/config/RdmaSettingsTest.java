package dev.pekkordma.config;

import static org.junit.jupiter.api.Assertions.*;

import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.testing.TlsStores;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
    assertEquals(32, s.cmMaxPendingHandshakes());
    assertEquals(32768, s.cmMaxConnections());
    RdmaSettings.TlsSettings tls = s.soft().tls;
    assertFalse(tls.enabled);
    assertEquals("TLSv1.3", tls.protocol);
    assertEquals(List.of("TLSv1.3"), tls.enabledProtocols, "empty: the protocol alone");
    assertEquals(List.of(), tls.enabledAlgorithms);
    assertTrue(tls.requireMutualAuthentication);
    assertEquals(Duration.ofSeconds(10), tls.handshakeTimeout);
    assertEquals(List.of(), tls.identities);
    assertEquals(256, s.soft().fabricMaxConnections);
    assertEquals(32, s.soft().fabricMaxHandshakes);
    assertEquals(Duration.ofSeconds(5), s.soft().fabricHandshakeTimeout);
    assertEquals(Duration.ofSeconds(60), s.soft().fabricIdleTimeout);
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
    assertRejected("pekko-rdma.soft.fabric.max-handshakes = 0",
        "pekko-rdma.soft.fabric.max-handshakes", "1");
    assertRejected("pekko-rdma.soft.fabric.idle-timeout = 0s",
        "pekko-rdma.soft.fabric.idle-timeout", "positive");
    assertRejected("pekko-rdma.soft.limits { max-mr = 8000000, max-mw = 1000000 }",
        "pekko-rdma.soft.limits.max-mr", "8388608");
    assertRejected("pekko-rdma.soft.devices = [x, x]", "pekko-rdma.soft.devices", "repeat");
    assertRejected("pekko-rdma.cm.connect-timeout = 0s", "pekko-rdma.cm.connect-timeout", "positive");
    assertRejected("pekko-rdma.cm.max-pending-handshakes = 0", "pekko-rdma.cm.max-pending-handshakes",
        "at least 1");
    assertRejected("pekko-rdma.cm.max-connections = 1", "pekko-rdma.cm.max-connections",
        "at least 2");
    assertRejected("pekko-rdma.soft.tls.handshake-timeout = 0s",
        "pekko-rdma.soft.tls.handshake-timeout", "positive");
  }

  @Test
  void tlsSettingsAreReadAndTheirStoresOpened() {
    TlsStores stores = TlsStores.get();
    RdmaSettings s = parse(stores.config(TlsStores.ALICE)
        + "pekko-rdma.soft.tls.enabled-protocols = [TLSv1.3, TLSv1.2]");
    RdmaSettings.TlsSettings tls = s.soft().tls;
    assertTrue(tls.enabled);
    assertEquals(stores.keyStore(TlsStores.ALICE).toString(), tls.keyStore);
    assertEquals(stores.trustStore().toString(), tls.trustStore);
    assertEquals(List.of("TLSv1.3", "TLSv1.2"), tls.enabledProtocols);
    assertArrayEquals(TlsStores.PASSWORD.toCharArray(), tls.keyPassword());
    assertFalse(tls.toString().contains(TlsStores.PASSWORD), "no password in " + tls);
  }

  @Test
  void brokenTlsSettingsFailNamingTheSettingAndTheFile(@TempDir Path dir) throws Exception {
    TlsStores stores = TlsStores.get();
    String on = stores.config(TlsStores.ALICE);
    String tls = "pekko-rdma.soft.tls.";
    Path missing = dir.resolve("missing.p12");
    assertRejected(on + tls + "key-store = \"" + missing + "\"", tls + "key-store",
        "no such file: " + missing);
    assertRejected(on + tls + "trust-store = \"" + missing + "\"", tls + "trust-store",
        "no such file: " + missing);
    assertRejected(on + tls + "key-store = \"\"", tls + "key-store", "must name a key store");
    Path text = Files.writeString(dir.resolve("not-a-store.p12"), "hello");
    assertRejected(on + tls + "key-store = \"" + text + "\"", tls + "key-store",
        "cannot read " + text);
    assertRejected(on + tls + "key-store-password = wrong", tls + "key-store-password",
        "does not open " + stores.keyStore(TlsStores.ALICE));
    assertRejected(on + tls + "trust-store-password = wrong", tls + "trust-store-password",
        "does not open " + stores.trustStore());
    assertRejected(on + tls + "key-password = wrong", tls + "key-password",
        "does not open the private key");
    Path empty = emptyStore(dir.resolve("empty.p12"));
    assertRejected(on + tls + "trust-store = \"" + empty + "\"", tls + "trust-store",
        "holds no certificate");
    assertRejected(on + tls + "key-store = \"" + empty + "\"", tls + "key-store",
        "holds no private key");
    assertRejected(on + tls + "protocol = TLSv9", tls + "protocol", "TLSv9");
    assertRejected(on + tls + "enabled-protocols = [TLSv1.3, SSLv9]", tls + "enabled-protocols",
        "SSLv9");
    assertRejected(on + tls + "enabled-algorithms = [TLS_NO_SUCH_SUITE]",
        tls + "enabled-algorithms", "TLS_NO_SUCH_SUITE");
    // off: the stores are not looked at
    assertFalse(parse(on + tls + "enabled = off\n" + tls + "key-store = \"" + missing + "\"")
        .soft().tls.enabled);
  }

  private static Path emptyStore(Path file) throws Exception {
    KeyStore ks = KeyStore.getInstance("PKCS12");
    ks.load(null, null);
    try (OutputStream out = Files.newOutputStream(file)) {
      ks.store(out, TlsStores.PASSWORD.toCharArray());
    }
    return file;
  }

  @Test
  void wrongTypesFailNamingTheirPath() {
    assertRejected("pekko-rdma.soft.mtu = big", "soft.mtu", "");
    assertRejected("pekko-rdma.cm.connect-timeout = soon", "connect-timeout", "");
  }
}

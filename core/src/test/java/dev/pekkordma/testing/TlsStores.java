package dev.pekkordma.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Key stores and a trust store for TLS tests, made once per JVM by the JDK's own {@code keytool}
 * in a temporary directory (deleted at exit): four self-signed identities, {@link #ALICE},
 * {@link #BOB} and {@link #CAROL}, whose certificates the {@link #trustStore() trust store}
 * holds, and {@link #ROGUE}, a valid certificate that nobody trusts. Each names 127.0.0.1 as a
 * subject alternative name, so it may claim any fabric address there. Every store has the
 * password {@link #PASSWORD}. {@link #config} gives the {@code pekko-rdma.soft.tls} settings of
 * one.
 */
public final class TlsStores {
  public static final String ALICE = "alice";
  public static final String BOB = "bob";
  /** Trusted as well: a third party, for tests where a trusted peer misbehaves. */
  public static final String CAROL = "carol";
  public static final String ROGUE = "rogue";
  public static final String PASSWORD = "changeit-for-tests";
  private static final long KEYTOOL_SECONDS = 60;
  private static TlsStores made;

  private final Path dir;

  private TlsStores(Path dir) {
    this.dir = dir;
  }

  /** The stores, made on first use (a few seconds: keytool is a JVM of its own). */
  public static synchronized TlsStores get() {
    if (made == null) {
      try {
        made = make();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException("interrupted making key stores", e);
      }
    }
    return made;
  }

  /** The PKCS12 key store holding {@code identity}'s private key and certificate. */
  public Path keyStore(String identity) {
    return dir.resolve(identity + ".p12");
  }

  /** The PKCS12 trust store holding the certificates of ALICE, BOB and CAROL. */
  public Path trustStore() {
    return dir.resolve("trusted.p12");
  }

  /** {@code identity}'s PEM certificate. */
  public Path certificate(String identity) {
    return dir.resolve(identity + ".crt");
  }

  /**
   * HOCON turning TLS on with {@code identity}'s key store and the shared trust store, for
   * {@code ConfigFactory.parseString} (paths quoted, so any directory works).
   */
  public String config(String identity) {
    return "pekko-rdma.soft.tls {\n"
        + "  enabled = on\n"
        + "  key-store = " + quote(keyStore(identity)) + "\n"
        + "  key-store-password = " + quote(PASSWORD) + "\n"
        + "  key-password = " + quote(PASSWORD) + "\n"
        + "  trust-store = " + quote(trustStore()) + "\n"
        + "  trust-store-password = " + quote(PASSWORD) + "\n"
        + "}\n";
  }

  private static String quote(Object o) {
    return "\"" + o.toString().replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
  }

  private static TlsStores make() throws IOException, InterruptedException {
    Path dir = Files.createTempDirectory("pekko-rdma-tls-");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteQuietly(dir)));
    TlsStores s = new TlsStores(dir);
    List<String> identities = List.of(ALICE, BOB, CAROL, ROGUE);
    // each keytool is a JVM: the key pairs, then the exports, run side by side
    List<Keytool> running = new ArrayList<>();
    for (String id : identities) {
      running.add(start(dir, "-genkeypair", "-alias", id, "-keyalg", "EC", "-groupname",
          "secp256r1", "-sigalg", "SHA256withECDSA", "-dname", "CN=" + id + ", O=pekko-rdma tests",
          "-ext", "SAN=ip:127.0.0.1", "-validity", "30", "-storetype", "PKCS12", "-keystore",
          s.keyStore(id).toString(), "-storepass", PASSWORD, "-keypass", PASSWORD));
    }
    awaitAll(running);
    for (String id : identities) {
      running.add(start(dir, "-exportcert", "-rfc", "-alias", id, "-keystore",
          s.keyStore(id).toString(), "-storepass", PASSWORD, "-file",
          s.certificate(id).toString()));
    }
    awaitAll(running);
    for (String id : List.of(ALICE, BOB, CAROL)) { // one file: one import after the other
      running.add(start(dir, "-importcert", "-noprompt", "-alias", id, "-file",
          s.certificate(id).toString(), "-storetype", "PKCS12", "-keystore",
          s.trustStore().toString(), "-storepass", PASSWORD));
      awaitAll(running);
    }
    return s;
  }

  /** One keytool run and where its output goes. */
  private record Keytool(Process process, List<String> command, Path log) {}

  private static Keytool start(Path dir, String... args) throws IOException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
    cmd.addAll(List.of(args));
    Path log = Files.createTempFile(dir, "keytool-", ".log");
    Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
    return new Keytool(p, cmd, log);
  }

  private static void awaitAll(List<Keytool> running) throws IOException, InterruptedException {
    try {
      for (Keytool k : running) {
        if (!k.process.waitFor(KEYTOOL_SECONDS, TimeUnit.SECONDS)) {
          throw new IOException(k.command + " did not finish within " + KEYTOOL_SECONDS + " s");
        }
        if (k.process.exitValue() != 0) {
          throw new IOException(k.command + " failed (exit " + k.process.exitValue() + "): "
              + Files.readString(k.log, StandardCharsets.UTF_8));
        }
      }
    } finally {
      for (Keytool k : running) k.process.destroyForcibly();
      running.clear();
    }
  }

  private static void deleteQuietly(Path dir) {
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    } catch (IOException e) {
      // a temporary directory: the system cleans it up eventually
    }
  }

  @Override
  public String toString() {
    return "TlsStores(" + dir + ")";
  }
}

package dev.pekkordma.config;

import static dev.pekkordma.config.ConfigChecks.atLeast;
import static dev.pekkordma.config.ConfigChecks.port;
import static dev.pekkordma.config.ConfigChecks.positive;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import com.typesafe.config.ConfigFactory;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.KeyStoreException;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/**
 * The library's settings under {@code pekko-rdma}, checked when read: a wrong value fails with a
 * {@link ConfigException} naming its path.
 */
public final class RdmaSettings {
  public static final String ROOT = "pekko-rdma";
  private static final Set<String> PROVIDERS = Set.of("auto", "native", "soft");

  private final String provider;
  private final SoftSettings soft;
  private final Duration cmConnectTimeout;
  private final int cmMaxPendingHandshakes;
  private final int cmMaxConnections;

  /** Reads from the full config, by full paths, so that every error names the whole path. */
  private RdmaSettings(Config c) {
    provider = c.getString(ROOT + ".provider");
    if (!PROVIDERS.contains(provider)) {
      throw new ConfigException.BadValue(ROOT + ".provider",
          "must be auto, native or soft, was '" + provider + "'");
    }
    soft = new SoftSettings(c);
    cmConnectTimeout = positive(c, ROOT + ".cm.connect-timeout");
    cmMaxPendingHandshakes = atLeast(c, ROOT + ".cm.max-pending-handshakes", 1);
    cmMaxConnections = atLeast(c, ROOT + ".cm.max-connections", 2);
    atLeast(c, ROOT + ".native.map-reserve", 0); // checked here, read by the native provider
  }

  /** Reads and checks {@code pekko-rdma} in {@code config} (with reference.conf beneath it). */
  public static RdmaSettings from(Config config) {
    return new RdmaSettings(config.withFallback(ConfigFactory.defaultReference()).resolve());
  }

  public String provider() { return provider; }

  public SoftSettings soft() { return soft; }

  public Duration cmConnectTimeout() { return cmConnectTimeout; }

  /** Per listener of the software CM: accepted connections whose REQ has not arrived yet. */
  public int cmMaxPendingHandshakes() { return cmMaxPendingHandshakes; }

  /** Per software provider: CM connections open at once, each with a thread reading it. */
  public int cmMaxConnections() { return cmMaxConnections; }

  /** The software provider's settings ({@code pekko-rdma.soft}). */
  public static final class SoftSettings {
    private static final String P = ROOT + ".soft.";
    public final List<String> devices;
    public final String fabricHost;
    public final int fabricPort;
    public final String fabricAdvertisedHost;
    public final int fabricAdvertisedPort;
    public final int fabricMaxConnections;
    public final int fabricMaxHandshakes;
    public final Duration fabricHandshakeTimeout;
    public final Duration fabricFrameTimeout;
    public final Duration fabricIdleTimeout;
    /** The UDP port multicast datagrams travel on between processes (IP multicast). */
    public final int fabricMulticastPort;
    /** Whether links to processes on this host carry their frames through shared memory. */
    public final boolean fabricSharedMemory;
    /** Where the shared-memory links' files are made (a tmpfs: /dev/shm). */
    public final String fabricSharedMemoryDirectory;
    /** Each direction's ring of a shared-memory link, in bytes: a power of two. */
    public final int fabricSharedMemoryRing;
    public final int maxQp, maxQpWr, maxSge, maxCq, maxCqe, maxMr, maxPd, maxMw, maxSrq,
        maxSrqWr, maxInlineData, maxQpRdAtom;
    public final long maxMrSize;
    public final int mtu;
    public final long maxMsgSize;
    public final TlsSettings tls;

    SoftSettings(Config c) {
      devices = c.getStringList(P + "devices");
      if (devices.isEmpty()) {
        throw new ConfigException.BadValue(P + "devices", "must name at least one device");
      }
      for (String d : devices) {
        if (!d.matches("[A-Za-z0-9_.-]{1,63}")) {
          throw new ConfigException.BadValue(P + "devices",
              "'" + d + "' is not a device name (letters, digits, _ . -, at most 63)");
        }
      }
      if (devices.stream().distinct().count() != devices.size()) {
        throw new ConfigException.BadValue(P + "devices", "names repeat: " + devices);
      }
      fabricHost = c.getString(P + "fabric.host");
      fabricPort = port(c, P + "fabric.port");
      fabricAdvertisedHost = c.getString(P + "fabric.advertised-host");
      fabricAdvertisedPort = port(c, P + "fabric.advertised-port");
      fabricMaxConnections = ConfigChecks.atLeast(c, P + "fabric.max-connections", 1);
      fabricMaxHandshakes = ConfigChecks.atLeast(c, P + "fabric.max-handshakes", 1);
      fabricHandshakeTimeout = positive(c, P + "fabric.handshake-timeout");
      fabricFrameTimeout = positive(c, P + "fabric.frame-timeout");
      fabricIdleTimeout = positive(c, P + "fabric.idle-timeout");
      fabricMulticastPort = port(c, P + "fabric.multicast-port");
      if (fabricMulticastPort == 0) {
        throw new ConfigException.BadValue(P + "fabric.multicast-port",
            "must be a fixed port (every process of the fabric uses the same one), was 0");
      }
      String sharedMemory = c.getString(P + "fabric.shared-memory");
      if (!sharedMemory.equals("auto") && !sharedMemory.equals("off")) {
        throw new ConfigException.BadValue(P + "fabric.shared-memory",
            "must be auto or off, was " + sharedMemory);
      }
      fabricSharedMemory = sharedMemory.equals("auto");
      fabricSharedMemoryDirectory = c.getString(P + "fabric.shared-memory-directory");
      if (fabricSharedMemoryDirectory.isEmpty()) {
        throw new ConfigException.BadValue(P + "fabric.shared-memory-directory",
            "must name a directory");
      }
      long ring = c.getBytes(P + "fabric.shared-memory-ring");
      if (ring < 64 * 1024 || ring > 256 * 1024 * 1024 || Long.bitCount(ring) != 1) {
        throw new ConfigException.BadValue(P + "fabric.shared-memory-ring",
            "must be a power of two from 64 KiB to 256 MiB, was " + ring);
      }
      fabricSharedMemoryRing = (int) ring;
      maxQp = limit(c, "max-qp");
      maxQpWr = limit(c, "max-qp-wr");
      maxSge = limit(c, "max-sge");
      maxCq = limit(c, "max-cq");
      maxCqe = limit(c, "max-cqe");
      maxMr = limit(c, "max-mr");
      maxPd = limit(c, "max-pd");
      maxMw = limit(c, "max-mw");
      maxSrq = limit(c, "max-srq");
      maxSrqWr = limit(c, "max-srq-wr");
      maxInlineData = limit(c, "max-inline-data");
      maxQpRdAtom = limit(c, "max-qp-rd-atom");
      // a memory key's 24-bit identity is drawn at random: at most half of them are in use
      if ((long) maxMr + maxMw > 1 << 23) {
        throw new ConfigException.BadValue(P + "limits.max-mr",
            "max-mr + max-mw must be at most 8388608, was " + ((long) maxMr + maxMw));
      }
      maxMrSize = c.getLong(P + "limits.max-mr-size");
      if (maxMrSize <= 0) {
        throw new ConfigException.BadValue(P + "limits.max-mr-size", "must be positive");
      }
      mtu = c.getInt(P + "mtu");
      if (mtu != 256 && mtu != 512 && mtu != 1024 && mtu != 2048 && mtu != 4096) {
        throw new ConfigException.BadValue(P + "mtu",
            "must be 256, 512, 1024, 2048 or 4096, was " + mtu);
      }
      maxMsgSize = c.getLong(P + "max-msg-size");
      if (maxMsgSize < mtu || maxMsgSize > (1L << 31)) {
        throw new ConfigException.BadValue(P + "max-msg-size",
            "must be in [mtu, 2^31], was " + maxMsgSize);
      }
      tls = new TlsSettings(c);
    }

    private static int limit(Config c, String key) {
      int v = c.getInt(P + "limits." + key);
      if (v <= 0) {
        throw new ConfigException.BadValue(P + "limits." + key, "must be positive, was " + v);
      }
      return v;
    }
  }

  /**
   * A certificate, by its subject's distinguished name or its SHA-256 fingerprint (hex, colons
   * allowed), and the fabric addresses ({@code a.b.c.d} or {@code a.b.c.d:port}) it may claim.
   */
  public record TlsIdentity(String certificate, List<String> addresses) {
    /** Whether {@code s} is a SHA-256 fingerprint rather than a distinguished name. */
    public static boolean isFingerprint(String s) {
      return fingerprint(s).matches("[0-9a-f]{64}");
    }

    /** {@code s} as a fingerprint compares: lower-case hex, no colons. */
    public static String fingerprint(String s) {
      return s.replace(":", "").toLowerCase(java.util.Locale.ROOT);
    }
  }

  /**
   * Mutual TLS for the software provider ({@code pekko-rdma.soft.tls}). When enabled, the stores
   * are opened here, so a missing, unreadable or locked one fails at start naming its setting.
   */
  public static final class TlsSettings {
    private static final String P = ROOT + ".soft.tls.";
    public final boolean enabled;
    public final String keyStore;
    public final String trustStore;
    private final String keyStorePassword;
    private final String keyPassword;
    private final String trustStorePassword;
    public final String protocol;
    /** Never empty: the setting's list, or {@link #protocol} alone. */
    public final List<String> enabledProtocols;
    /** Empty: the JDK's defaults. */
    public final List<String> enabledAlgorithms;
    public final boolean requireMutualAuthentication;
    public final Duration handshakeTimeout;
    /** The fabric addresses certificates may claim, beyond their IP subject alternative names. */
    public final List<TlsIdentity> identities;

    TlsSettings(Config c) {
      enabled = c.getBoolean(P + "enabled");
      keyStore = c.getString(P + "key-store");
      keyStorePassword = c.getString(P + "key-store-password");
      keyPassword = c.getString(P + "key-password");
      trustStore = c.getString(P + "trust-store");
      trustStorePassword = c.getString(P + "trust-store-password");
      protocol = c.getString(P + "protocol");
      List<String> versions = c.getStringList(P + "enabled-protocols");
      enabledProtocols = versions.isEmpty() ? List.of(protocol) : List.copyOf(versions);
      enabledAlgorithms = List.copyOf(c.getStringList(P + "enabled-algorithms"));
      requireMutualAuthentication = c.getBoolean(P + "require-mutual-authentication");
      handshakeTimeout = positive(c, P + "handshake-timeout");
      identities = identities(c);
      if (enabled) check(c);
    }

    private static List<TlsIdentity> identities(Config c) {
      String path = P + "identities";
      List<TlsIdentity> ids = new java.util.ArrayList<>();
      for (Config entry : c.getConfigList(path)) {
        String certificate = entry.hasPath("certificate") ? entry.getString("certificate") : "";
        if (!TlsIdentity.isFingerprint(certificate)) {
          try {
            new javax.security.auth.x500.X500Principal(certificate);
          } catch (IllegalArgumentException e) {
            throw new ConfigException.BadValue(path, "certificate '" + certificate + "' is"
                + " neither a SHA-256 fingerprint nor a distinguished name (" + e.getMessage()
                + ")");
          }
        }
        List<String> addresses = entry.hasPath("addresses") ? entry.getStringList("addresses")
            : List.of();
        if (addresses.isEmpty()) {
          throw new ConfigException.BadValue(path, "certificate '" + certificate
              + "' is given no addresses");
        }
        for (String a : addresses) {
          if (!a.matches("(\\d{1,3}\\.){3}\\d{1,3}(:\\d{1,5})?")
              || a.contains(":") && Integer.parseInt(a.substring(a.indexOf(':') + 1)) > 65535) {
            throw new ConfigException.BadValue(path, "'" + a + "' is not an IPv4 address, with"
                + " or without a port (10.0.0.1, 10.0.0.1:7070)");
          }
        }
        ids.add(new TlsIdentity(certificate, List.copyOf(addresses)));
      }
      return List.copyOf(ids);
    }

    private void check(Config c) {
      try {
        SSLContext.getInstance(protocol);
      } catch (NoSuchAlgorithmException e) {
        throw new ConfigException.BadValue(P + "protocol", "'" + protocol
            + "' is not an SSLContext protocol of this JDK");
      }
      SSLParameters supported = supportedParameters();
      List<String> versions = List.of(supported.getProtocols());
      for (String v : enabledProtocols) {
        if (!versions.contains(v)) {
          throw new ConfigException.BadValue(P + (c.getStringList(P + "enabled-protocols")
              .isEmpty() ? "protocol" : "enabled-protocols"), "'" + v
              + "' is not a TLS version this JDK speaks " + versions);
        }
      }
      List<String> suites = List.of(supported.getCipherSuites());
      for (String a : enabledAlgorithms) {
        if (!suites.contains(a)) {
          throw new ConfigException.BadValue(P + "enabled-algorithms", "'" + a
              + "' is not a cipher suite of this JDK");
        }
      }
      KeyStore keys = ConfigChecks.keyStore(c, P + "key-store", P + "key-store-password");
      if (!hasEntry(keys, true)) {
        throw new ConfigException.BadValue(P + "key-store", keyStore + " holds no private key");
      }
      try {
        KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm())
            .init(keys, keyPassword.toCharArray());
      } catch (GeneralSecurityException e) {
        throw new ConfigException.BadValue(P + "key-password", "does not open the private key in "
            + keyStore + " (" + e.getMessage() + ")");
      }
      KeyStore trusted =
          ConfigChecks.keyStore(c, P + "trust-store", P + "trust-store-password");
      if (!hasEntry(trusted, false)) {
        throw new ConfigException.BadValue(P + "trust-store", trustStore
            + " holds no certificate: no peer would be trusted");
      }
    }

    private static SSLParameters supportedParameters() {
      try {
        return SSLContext.getDefault().getSupportedSSLParameters();
      } catch (NoSuchAlgorithmException e) {
        throw new IllegalStateException("the JDK has no default SSLContext", e);
      }
    }

    private static boolean hasEntry(KeyStore store, boolean privateKey) {
      try {
        for (String alias : Collections.list(store.aliases())) {
          if (privateKey ? store.isKeyEntry(alias) : store.isCertificateEntry(alias)
              || store.getCertificate(alias) != null) {
            return true;
          }
        }
        return false;
      } catch (KeyStoreException e) {
        return false;
      }
    }

    public char[] keyStorePassword() { return keyStorePassword.toCharArray(); }

    public char[] keyPassword() { return keyPassword.toCharArray(); }

    public char[] trustStorePassword() { return trustStorePassword.toCharArray(); }

    @Override
    public String toString() { // no passwords
      return "TlsSettings(enabled=" + enabled + ", key-store=" + keyStore + ", trust-store="
          + trustStore + ", protocols=" + enabledProtocols + ", mutual="
          + requireMutualAuthentication + ")";
    }
  }
}

package dev.pekkordma.soft.tls;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.config.RdmaSettings.TlsSettings;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import tlschannel.BufferAllocator;
import tlschannel.ClientTlsChannel;
import tlschannel.HeapBufferAllocator;
import tlschannel.ServerTlsChannel;

/**
 * Mutual TLS for the software provider's TCP connections ({@code pekko-rdma.soft.tls}), as Pekko
 * remoting's {@code config-ssl-engine} sets it up: this process's key store, the peers it trusts
 * in a trust store, and the client's certificate required unless mutual authentication is off.
 * TLS is layered over sockets that are already connected, so callers keep their own connect and
 * accept. Host names are not verified: a peer is whoever holds a trusted certificate.
 *
 * <p>A disabled instance hands sockets back unchanged, so callers may wrap unconditionally.
 */
@InternalApi
public final class SoftTls {
  private static final String SETTING = "pekko-rdma.soft.tls";
  private static final SoftTls DISABLED = new SoftTls(null, null);
  /**
   * TLS channels' buffers: on the heap (so that what an unproven connection costs is counted
   * where the rest of it is), made when first needed and grown to a record's size only when a
   * record needs it.
   */
  private static final BufferAllocator BUFFERS = new HeapBufferAllocator();
  /** Closes sockets whose handshake overran: a read timeout alone lets a trickling peer stay. */
  private static final ScheduledThreadPoolExecutor DEADLINES = deadlines();

  private final TlsSettings settings;
  private final SSLContext context;
  private final SSLSocketFactory factory;
  private final CertificateClaims claims;

  private SoftTls(TlsSettings settings, SSLContext context) {
    this.settings = settings;
    this.context = context;
    this.factory = context == null ? null : context.getSocketFactory();
    this.claims = new CertificateClaims(settings == null ? List.of() : settings.identities);
  }

  /**
   * The TLS of {@code settings}: a disabled instance when {@code pekko-rdma.soft.tls.enabled} is
   * off. The settings have checked the stores; should they have changed since, this fails naming
   * the setting.
   */
  public static SoftTls from(RdmaSettings settings) {
    TlsSettings t = settings.soft().tls;
    if (!t.enabled) return DISABLED;
    try {
      KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keys.init(load(t.keyStore, t.keyStorePassword()), t.keyPassword());
      TrustManagerFactory trust =
          TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
      trust.init(load(t.trustStore, t.trustStorePassword()));
      SSLContext context = SSLContext.getInstance(t.protocol);
      context.init(new KeyManager[] {new PresentAlways(keys)},
          new TrustManager[] {new NamingTrust(trust)}, new SecureRandom());
      return new SoftTls(t, context);
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalStateException(SETTING + ": cannot set up TLS from key-store "
          + t.keyStore + " and trust-store " + t.trustStore + ": " + e.getMessage(), e);
    }
  }

  /**
   * Presents this process's certificate whatever issuers the server names: the JDK's own choice
   * sends none to a server whose trust store lacks our issuer, which then could only say that no
   * certificate came, not whose it refused.
   */
  private static final class PresentAlways extends X509ExtendedKeyManager {
    private final X509ExtendedKeyManager keys;

    PresentAlways(KeyManagerFactory factory) {
      X509ExtendedKeyManager found = null;
      for (KeyManager k : factory.getKeyManagers()) {
        if (k instanceof X509ExtendedKeyManager) found = (X509ExtendedKeyManager) k;
      }
      if (found == null) throw new IllegalStateException("no X.509 key manager in " + factory);
      keys = found;
    }

    @Override
    public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
      return keys.chooseClientAlias(keyType, null, socket);
    }

    @Override
    public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine e) {
      return keys.chooseEngineClientAlias(keyType, null, e);
    }

    @Override
    public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
      return keys.chooseServerAlias(keyType, issuers, socket);
    }

    @Override
    public String chooseEngineServerAlias(String keyType, Principal[] issuers, SSLEngine e) {
      return keys.chooseEngineServerAlias(keyType, issuers, e);
    }

    @Override
    public String[] getClientAliases(String keyType, Principal[] issuers) {
      return keys.getClientAliases(keyType, issuers);
    }

    @Override
    public String[] getServerAliases(String keyType, Principal[] issuers) {
      return keys.getServerAliases(keyType, issuers);
    }

    @Override
    public X509Certificate[] getCertificateChain(String alias) {
      return keys.getCertificateChain(alias);
    }

    @Override
    public PrivateKey getPrivateKey(String alias) {
      return keys.getPrivateKey(alias);
    }
  }

  /** The trust store's verdict, naming the certificate it refused (for the log line). */
  private static final class NamingTrust extends X509ExtendedTrustManager {
    private final X509ExtendedTrustManager trust;

    NamingTrust(TrustManagerFactory factory) {
      X509ExtendedTrustManager found = null;
      for (TrustManager t : factory.getTrustManagers()) {
        if (t instanceof X509ExtendedTrustManager) found = (X509ExtendedTrustManager) t;
      }
      if (found == null) throw new IllegalStateException("no X.509 trust manager in " + factory);
      trust = found;
    }

    private interface Check {
      void run() throws CertificateException;
    }

    private static void named(X509Certificate[] chain, Check check) throws CertificateException {
      try {
        check.run();
      } catch (CertificateException e) {
        String who = chain != null && chain.length > 0
            ? chain[0].getSubjectX500Principal().getName() : "an empty chain";
        throw new UntrustedCertificate(
            "'" + who + "' is not trusted here (" + e.getMessage() + ")", e);
      }
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
        throws CertificateException {
      named(chain, () -> trust.checkClientTrusted(chain, authType, socket));
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
        throws CertificateException {
      named(chain, () -> trust.checkServerTrusted(chain, authType, socket));
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
        throws CertificateException {
      named(chain, () -> trust.checkClientTrusted(chain, authType, engine));
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
        throws CertificateException {
      named(chain, () -> trust.checkServerTrusted(chain, authType, engine));
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType)
        throws CertificateException {
      named(chain, () -> trust.checkClientTrusted(chain, authType));
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType)
        throws CertificateException {
      named(chain, () -> trust.checkServerTrusted(chain, authType));
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
      return trust.getAcceptedIssuers();
    }
  }

  private static final class UntrustedCertificate extends CertificateException {
    UntrustedCertificate(String message, Throwable cause) {
      super(message, cause);
    }
  }

  private static KeyStore load(String file, char[] password)
      throws IOException, GeneralSecurityException {
    KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
    try (InputStream in = Files.newInputStream(Paths.get(file))) {
      store.load(in, password);
    }
    return store;
  }

  public boolean enabled() {
    return factory != null;
  }

  /** How long a handshake may take; zero when disabled. */
  public Duration handshakeTimeout() {
    return enabled() ? settings.handshakeTimeout : Duration.ZERO;
  }

  /**
   * Wraps a connected socket as the client side; returns after the handshake (bounded by
   * handshake-timeout); the peer's certificate has been verified. Closing the result closes
   * {@code connected}; a failure closes it and throws an IOException naming the peer and why.
   */
  public Socket client(Socket connected, String peerDescription) throws IOException {
    if (!enabled()) return connected;
    SSLSocket s = layer(connected, peerDescription);
    s.setUseClientMode(true);
    return handshake(connected, s, peerDescription);
  }

  /**
   * Wraps an accepted socket as the server side; returns after the handshake; requires the
   * client's certificate when mutual auth is on. Failures as for {@link #client}.
   */
  public Socket server(Socket accepted, String peerDescription) throws IOException {
    if (!enabled()) return accepted;
    SSLSocket s = layer(accepted, peerDescription);
    s.setUseClientMode(false);
    s.setNeedClientAuth(settings.requireMutualAuthentication);
    return handshake(accepted, s, peerDescription);
  }

  /**
   * The server side of TLS over an accepted channel, blocking or not, as {@link #server} sets it
   * up (protocols, cipher suites, the client's certificate required unless mutual
   * authentication is off); its handshake is the caller's to drive. Its buffers are made when
   * first needed.
   */
  public ServerTlsChannel serverChannel(SocketChannel accepted) {
    requireEnabled();
    SSLEngine engine = engine();
    engine.setUseClientMode(false);
    engine.setNeedClientAuth(settings.requireMutualAuthentication);
    return ServerTlsChannel.newBuilder(accepted, context).withEngineFactory(c -> engine)
        .withPlainBufferAllocator(BUFFERS).withEncryptedBufferAllocator(BUFFERS).build();
  }

  /** The client side of TLS over a connected channel, as {@link #client} sets it up. */
  public ClientTlsChannel clientChannel(SocketChannel connected, InetSocketAddress peer) {
    requireEnabled();
    SSLEngine engine = context.createSSLEngine(peer.getAddress().getHostAddress(),
        peer.getPort());
    configure(engine::setEnabledProtocols, engine::setEnabledCipherSuites);
    engine.setUseClientMode(true);
    return ClientTlsChannel.newBuilder(connected, engine).withPlainBufferAllocator(BUFFERS)
        .withEncryptedBufferAllocator(BUFFERS).build();
  }

  private SSLEngine engine() {
    SSLEngine engine = context.createSSLEngine();
    configure(engine::setEnabledProtocols, engine::setEnabledCipherSuites);
    return engine;
  }

  /** The protocols and cipher suites of the settings, for a socket or an engine. */
  private void configure(Consumer<String[]> protocols, Consumer<String[]> cipherSuites) {
    protocols.accept(settings.enabledProtocols.toArray(String[]::new));
    if (!settings.enabledAlgorithms.isEmpty()) {
      cipherSuites.accept(settings.enabledAlgorithms.toArray(String[]::new));
    }
  }

  private void requireEnabled() {
    if (!enabled()) throw new IllegalStateException(SETTING + " is off: no TLS channel");
  }

  /**
   * Why a handshake failed, as {@link #client} and {@link #server} say it: "TLS handshake with
   * {@code peer} failed: " and the cause in words a log reader can act on.
   */
  public static String handshakeFailure(String peer, IOException e) {
    return "TLS handshake with " + peer + " failed: " + reason(e);
  }

  /** What is said of a handshake that did not finish within {@link #handshakeTimeout}. */
  public String handshakeOverdue(String peer) {
    return "TLS handshake with " + peer + " failed: " + overdue();
  }

  private String overdue() {
    return "did not finish within " + settings.handshakeTimeout.toMillis() + " ms (" + SETTING
        + ".handshake-timeout)";
  }

  /**
   * Null if the peer of {@code tlsSocket} may speak for the fabric at {@code ip:port}: always
   * without TLS, or when the peer presented no certificate (mutual authentication off); else why
   * not ({@link CertificateClaims}).
   */
  public String claimRefusal(Socket tlsSocket, InetAddress ip, int port) {
    return claimRefusal(session(tlsSocket), ip, port);
  }

  /** As {@link #claimRefusal(Socket, InetAddress, int)}, for a TLS session (null: no TLS). */
  public String claimRefusal(SSLSession session, InetAddress ip, int port) {
    X509Certificate peer = peerCertificate(session);
    return peer == null ? null : claims.refusal(peer, ip, port);
  }

  /** The certificate this side presented on {@code s} (DER); empty without TLS. */
  public static byte[] localCertificateBytes(Socket s) {
    return localCertificateBytes(session(s));
  }

  /** The certificate this side presented in {@code session} (DER); empty if null. */
  public static byte[] localCertificateBytes(SSLSession session) {
    if (session == null) return new byte[0];
    Certificate[] chain = session.getLocalCertificates();
    return encoded(chain == null || chain.length == 0 ? null : chain[0]);
  }

  /** The certificate the peer presented on {@code s} (DER); empty without TLS or without one. */
  public static byte[] peerCertificateBytes(Socket s) {
    return peerCertificateBytes(session(s));
  }

  /** The certificate the peer presented in {@code session} (DER); empty if null or none. */
  public static byte[] peerCertificateBytes(SSLSession session) {
    return encoded(peerCertificate(session));
  }

  private static SSLSession session(Socket s) {
    return s instanceof SSLSocket ? ((SSLSocket) s).getSession() : null;
  }

  private static X509Certificate peerCertificate(SSLSession session) {
    if (session == null) return null;
    try {
      Certificate[] chain = session.getPeerCertificates();
      return chain.length > 0 && chain[0] instanceof X509Certificate
          ? (X509Certificate) chain[0] : null;
    } catch (SSLPeerUnverifiedException e) {
      return null;
    }
  }

  private static byte[] encoded(Certificate c) {
    try {
      return c == null ? new byte[0] : c.getEncoded();
    } catch (java.security.cert.CertificateEncodingException e) {
      throw new IllegalStateException("a certificate of the session cannot be encoded", e);
    }
  }

  /** What the peer presented (for logs): its certificate's subject, or why there is none. */
  public static String peerIdentity(Socket tlsSocket) {
    if (!(tlsSocket instanceof SSLSocket)) return "no TLS";
    SSLSession session = ((SSLSocket) tlsSocket).getSession();
    try {
      Certificate[] chain = session.getPeerCertificates();
      return chain.length > 0 && chain[0] instanceof X509Certificate
          ? ((X509Certificate) chain[0]).getSubjectX500Principal().getName()
          : "a certificate of type " + chain[0].getType();
    } catch (SSLPeerUnverifiedException e) {
      return "no certificate";
    }
  }

  private SSLSocket layer(Socket raw, String peer) throws IOException {
    try {
      SSLSocket s = (SSLSocket) factory.createSocket(raw, raw.getInetAddress().getHostAddress(),
          raw.getPort(), true);
      configure(s::setEnabledProtocols, s::setEnabledCipherSuites);
      return s;
    } catch (IOException | RuntimeException e) {
      closeQuietly(raw);
      throw new IOException("TLS with " + peer + ": cannot layer TLS over the connection: " + e,
          e);
    }
  }

  private Socket handshake(Socket raw, SSLSocket s, String peer) throws IOException {
    Duration limit = settings.handshakeTimeout;
    AtomicBoolean overran = new AtomicBoolean();
    ScheduledFuture<?> guard = DEADLINES.schedule(() -> {
      overran.set(true);
      closeQuietly(raw);
    }, limit.toNanos(), TimeUnit.NANOSECONDS);
    try {
      int before = raw.getSoTimeout();
      raw.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, limit.toMillis())));
      s.startHandshake();
      raw.setSoTimeout(before);
      return s;
    } catch (IOException e) {
      closeQuietly(s);
      closeQuietly(raw);
      String why = overran.get() || e instanceof java.net.SocketTimeoutException
          ? overdue() : reason(e);
      SSLHandshakeException failure =
          new SSLHandshakeException("TLS handshake with " + peer + " failed: " + why);
      failure.initCause(e);
      throw failure;
    } finally {
      guard.cancel(false);
    }
  }

  /** A failed handshake's cause in words a log reader can act on. */
  private static String reason(IOException e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof UntrustedCertificate) return "the peer's certificate " + t.getMessage();
    }
    String m = String.valueOf(e.getMessage());
    if (m.contains("Unsupported or unrecognized SSL message")) {
      return "the peer does not speak TLS (is " + SETTING + ".enabled off there?)";
    }
    if (m.contains("Empty client certificate chain") || m.contains("certificate_required")) {
      return "the peer presented no certificate (" + m + ")";
    }
    if (m.contains("bad_certificate") || m.contains("certificate_unknown")
        || m.contains("unknown_ca")) {
      return "the peer refused this process's certificate (" + m + ")";
    }
    if (e.getCause() instanceof CertificateException) {
      return "the peer's certificate was refused (" + e.getCause().getMessage() + ")";
    }
    return m;
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }

  private static ScheduledThreadPoolExecutor deadlines() {
    ScheduledThreadPoolExecutor t = new ScheduledThreadPoolExecutor(1, r -> {
      Thread thread = new Thread(r, "soft-tls-deadlines");
      thread.setDaemon(true);
      return thread;
    });
    t.setRemoveOnCancelPolicy(true);
    return t;
  }

  @Override
  public String toString() {
    return enabled() ? "SoftTls(" + settings + ")" : "SoftTls(disabled)";
  }
}

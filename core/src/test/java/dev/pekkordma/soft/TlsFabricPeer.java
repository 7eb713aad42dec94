package dev.pekkordma.soft;

import dev.pekkordma.soft.tls.SoftTls;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A legitimate fabric process under mutual TLS, written from the wire format: it connects to a
 * fabric with a HELLO whose nonce is bound to the TLS connection it goes out on (both
 * certificates, as {@link ChannelBinding} says), and its listener answers the call back that
 * asks about that nonce. Its certificate must be one that may claim 127.0.0.1.
 */
final class TlsFabricPeer implements AutoCloseable {
  private static final SecureRandom RANDOM = new SecureRandom();
  private final SoftTls tls;
  private final ServerSocket listener;
  private final FabricAddress address;
  /** Each nonce it issued, and the binding of the connection it was issued for. */
  private final Map<ByteBuffer, byte[]> nonces = new ConcurrentHashMap<>();

  TlsFabricPeer(SoftTls tls) throws IOException {
    this.tls = tls;
    listener = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
    address = new FabricAddress(new byte[] {127, 0, 0, 1}, listener.getLocalPort());
    Thread t = new Thread(this::acceptLoop, "tls-fabric-peer-" + address);
    t.setDaemon(true);
    t.start();
  }

  /**
   * Connects to the fabric at {@code target} and proves who it is: the TLS socket after
   * WELCOME, or RawFabricPeer.Refused with the code, or the IOException that cut it off.
   */
  Socket connect(FabricAddress target) throws IOException {
    Socket plain = new Socket();
    try {
      plain.connect(target.socketAddress(), 5000);
      plain.setSoTimeout(20_000);
      plain.getOutputStream().write(FabricWire.opening(FabricWire.LINK, null));
      Socket s = tls.client(plain, "the fabric under test");
      FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
      hello.from = address;
      hello.to = target;
      RANDOM.nextBytes(hello.nonce);
      nonces.put(ByteBuffer.wrap(hello.nonce.clone()), ChannelBinding.of(address, target,
          SoftTls.peerCertificateBytes(s), SoftTls.localCertificateBytes(s)));
      s.getOutputStream().write(hello.encode());
      s.getOutputStream().flush();
      byte[] answer = new byte[FabricWire.HANDSHAKE_BYTES];
      new DataInputStream(s.getInputStream()).readFully(answer);
      FabricWire.Handshake h = FabricWire.Handshake.decode(answer, FabricWire.WELCOME,
          FabricWire.REFUSED);
      if (h.kind != FabricWire.WELCOME) throw new RawFabricPeer.Refused(h.code);
      return s;
    } catch (IOException | RuntimeException e) {
      plain.close();
      throw e;
    }
  }

  private void acceptLoop() {
    while (!listener.isClosed()) {
      try {
        Socket s = listener.accept();
        Thread t = new Thread(() -> answer(s), "tls-fabric-peer-proof");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  /** Answers a call back: PROVEN for a nonce it issued, on the connection it issued it for. */
  private void answer(Socket plain) {
    try (plain) {
      plain.setSoTimeout(10_000);
      DataInputStream raw = new DataInputStream(plain.getInputStream());
      byte[] opening = new byte[FabricWire.OPENING_BYTES];
      raw.readFully(opening);
      if (FabricWire.purpose(ByteBuffer.wrap(opening)) != FabricWire.PROOF) return;
      Socket s = tls.server(plain, "a fabric calling back");
      byte[] question = new byte[FabricWire.HANDSHAKE_BYTES];
      new DataInputStream(s.getInputStream()).readFully(question);
      FabricWire.Handshake ask = FabricWire.Handshake.decode(question, FabricWire.PROVE);
      byte[] binding = nonces.remove(ByteBuffer.wrap(ask.nonce));
      boolean proven = binding != null && java.util.Arrays.equals(binding, ask.binding);
      OutputStream out = s.getOutputStream();
      out.write(new FabricWire.Handshake(proven ? FabricWire.PROVEN : FabricWire.NOT_PROVEN)
          .encode());
      out.flush();
    } catch (IOException | RuntimeException e) {
      // the caller gave up: nothing to answer
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
  }
}

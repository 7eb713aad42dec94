package dev.pekkordma.soft;

import dev.pekkordma.soft.tls.SoftTls;
import dev.pekkordma.verbs.Gid;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * A fabric peer that tries to speak as another: a process P connects to it (its QP is connected
 * to one of the rogue's), and the rogue passes P's HELLO on to a victim V, as it came or naming V
 * as the listener, hoping V confirms it with P and lets the rogue speak as P. Plain, or with TLS
 * and a certificate V trusts.
 */
final class RelayingRogue implements AutoCloseable {
  private final ServerSocket listener;
  private final SoftTls tls;
  final FabricAddress address;

  /** @param tls this rogue's TLS (a trusted certificate), or a disabled one */
  RelayingRogue(SoftTls tls) throws IOException {
    this.tls = tls;
    listener = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
    address = new FabricAddress(new byte[] {127, 0, 0, 1}, listener.getLocalPort());
  }

  Gid gid(int serial) {
    return Gid.of(address.gid(serial));
  }

  /** A HELLO P sent the rogue, on the connection it came on (left unanswered). */
  record Caught(FabricWire.Handshake hello, Socket connection) implements AutoCloseable {
    @Override
    public void close() throws IOException {
      connection.close();
    }
  }

  /** Waits for P's next connection and reads its HELLO. */
  Caught awaitHello(int millis) throws IOException {
    listener.setSoTimeout(millis);
    Socket plain = listener.accept();
    plain.setSoTimeout(millis);
    new DataInputStream(plain.getInputStream()).readFully(new byte[FabricWire.OPENING_BYTES]);
    Socket s = tls.server(plain, "P");
    byte[] hello = new byte[FabricWire.HANDSHAKE_BYTES];
    new DataInputStream(s.getInputStream()).readFully(hello);
    return new Caught(FabricWire.Handshake.decode(hello, FabricWire.HELLO), s);
  }

  /**
   * Passes {@code hello} on to the fabric at {@code victim}, naming {@code to} as the listener
   * it was sent to; returns the victim's answer (WELCOME, or REFUSED with its code).
   */
  FabricWire.Handshake relay(FabricWire.Handshake hello, FabricAddress victim, FabricAddress to)
      throws IOException {
    try (Socket plain = new Socket()) {
      plain.connect(victim.socketAddress(), 5000);
      plain.setSoTimeout(20_000);
      OutputStream out = plain.getOutputStream();
      out.write(FabricWire.opening(FabricWire.LINK, null));
      out.flush();
      Socket s = tls.client(plain, "V");
      FabricWire.Handshake passed = FabricWire.Handshake.decode(hello.encode(), FabricWire.HELLO);
      passed.to = to;
      s.getOutputStream().write(passed.encode());
      s.getOutputStream().flush();
      byte[] answer = new byte[FabricWire.HANDSHAKE_BYTES];
      new DataInputStream(s.getInputStream()).readFully(answer);
      return FabricWire.Handshake.decode(answer, FabricWire.WELCOME, FabricWire.REFUSED);
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
  }
}

package dev.pekkordma.soft.cm;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;

/**
 * One CM connection's socket (TLS or plain) and its framed streams. Reads happen on the
 * connection's own thread, writes under its id's monitor; each frame we send is small and a
 * connection sends only a few, so a write never waits on a peer that does not read.
 */
final class CmSocket implements AutoCloseable {
  final Socket socket;
  /** The peer as logs name it: {@code host:port}. */
  final String peer;
  private final DataInputStream in;
  private final DataOutputStream out;

  private CmSocket(Socket socket) throws IOException {
    this.socket = socket;
    this.peer = describe(socket);
    in = new DataInputStream(new BufferedInputStream(socket.getInputStream(), 1024));
    out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 1024));
  }

  /** Framed streams over {@code s}; closes it when they cannot be had. */
  static CmSocket over(Socket s) throws IOException {
    try {
      return new CmSocket(s);
    } catch (IOException | RuntimeException e) {
      closeQuietly(s);
      throw e;
    }
  }

  /** Reads one frame: EOFException at a clean end, ProtocolException for anything malformed. */
  CmMessage read() throws IOException {
    return CmMessage.readFrom(in);
  }

  void send(CmMessage m) throws IOException {
    m.writeTo(out);
  }

  /** Sends {@code m} if it can; a peer that is gone shows when the connection is read. */
  void trySend(CmMessage m) {
    try {
      send(m);
    } catch (IOException e) {
      // reported by what reads the connection
    }
  }

  /** Ends our direction after a last frame, so that closing cannot reset it away. */
  void shutdownOutput() throws IOException {
    socket.shutdownOutput();
  }

  /** Resets the connection without a goodbye, as a process that dies would. */
  void reset() {
    try {
      socket.setSoLinger(true, 0);
    } catch (SocketException e) {
      // closed already
    }
    close();
  }

  @Override
  public void close() {
    closeQuietly(socket);
  }

  static String describe(Socket s) {
    return describe((InetSocketAddress) s.getRemoteSocketAddress());
  }

  static String describe(InetSocketAddress a) {
    if (a == null) return "an unconnected peer";
    return (a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString()) + ":"
        + a.getPort();
  }

  static void closeQuietly(AutoCloseable c) {
    if (c == null) return;
    try {
      c.close();
    } catch (Exception e) {
      // closing is all we wanted
    }
  }
}

package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.SocketAddresses;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;

/**
 * A {@link CmLink}'s socket (TLS or plain) and its framed streams: the link's reading thread
 * reads, its writing thread writes.
 */
final class CmSocket implements AutoCloseable {
  final Socket socket;
  /** The peer as logs name it: {@code host:port}. */
  final String peer;
  private final BufferedInputStream buffered;
  private final DataInputStream in;
  private final DataOutputStream out;

  private CmSocket(Socket socket) throws IOException {
    this.socket = socket;
    this.peer = describe(socket);
    buffered = new BufferedInputStream(socket.getInputStream(), 8192);
    in = new DataInputStream(buffered);
    out = new DataOutputStream(new BufferedOutputStream(socket.getOutputStream(), 8192));
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
  CmMessage.Framed read() throws IOException {
    return CmMessage.readFrom(in);
  }

  /**
   * Whether {@link #read} would return or fail without blocking: a whole frame has come, or a
   * length no frame may have.
   */
  boolean frameArrived() throws IOException {
    int available = buffered.available();
    if (available < 4) return false;
    buffered.mark(4);
    int length = in.readInt();
    buffered.reset();
    return length < CmMessage.HEADER || length > CmMessage.MAX_FRAME || available - 4 >= length;
  }

  /** Writes frames made by {@link CmMessage#encode}; {@code flush} sends them. */
  void write(byte[] frame, boolean flush) throws IOException {
    out.write(frame);
    if (flush) out.flush();
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
    return a == null ? "an unconnected peer" : SocketAddresses.format(a);
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

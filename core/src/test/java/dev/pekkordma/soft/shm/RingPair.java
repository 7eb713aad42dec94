package dev.pekkordma.soft.shm;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;

/**
 * Both ends of one ring file in one JVM, as two processes have them: the file made by one and
 * opened (checked) by the other, each with its own mapping, over a loopback socket pair for the
 * doorbells. The file is unlinked once both have mapped it, as the fabric does.
 */
final class RingPair implements AutoCloseable {
  static final byte[] BINDING = new byte[RingFile.BINDING_BYTES];
  final RingFile made;
  final RingFile opened;
  final RingLink connecting;
  final RingLink accepting;
  final Socket connectingSocket;
  final Socket acceptingSocket;

  RingPair(Path dir, int capacity, long spaceTimeoutNanos) throws IOException {
    made = RingFile.create(dir, capacity, BINDING);
    opened = RingFile.open(dir, made.name(), capacity, BINDING);
    made.unlink();
    try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      connectingSocket = new Socket(listener.getInetAddress(), listener.getLocalPort());
      acceptingSocket = listener.accept();
    }
    connectingSocket.setTcpNoDelay(true);
    acceptingSocket.setTcpNoDelay(true);
    connecting = new RingLink(made, true, connectingSocket.getInputStream(),
        connectingSocket.getOutputStream(), connectingSocket, "the accepting side",
        spaceTimeoutNanos, "a test's space timeout");
    accepting = new RingLink(opened, false, acceptingSocket.getInputStream(),
        acceptingSocket.getOutputStream(), acceptingSocket, "the connecting side",
        spaceTimeoutNanos, "a test's space timeout");
  }

  @Override
  public void close() {
    connecting.close();
    accepting.close();
  }
}

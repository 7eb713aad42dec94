package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/** An active link's connect, begun on the caller's thread without blocking it. */
class CmDialTest {
  private static final InetAddress LOOPBACK = InetAddress.getLoopbackAddress();

  @Test
  void toAListenerOnThisHostTheConnectHasFinishedWhenBeginReturns() throws IOException {
    try (ServerSocket server = new ServerSocket(0, 1, LOOPBACK)) {
      CmDial dial = CmDial.begin(LOOPBACK, (InetSocketAddress) server.getLocalSocketAddress());
      // what lets the first REQ go out on the connecting thread, without the link's
      assertTrue(dial.connected(), "connected at once over loopback");
      Socket s = dial.finish(0);
      try (Socket accepted = server.accept()) {
        assertTrue(s.isConnected());
        assertTrue(s.getTcpNoDelay());
        assertEquals(s.getLocalPort(), accepted.getPort());
        s.getOutputStream().write(7); // and it blocks again, as the link's streams expect
        assertEquals(7, accepted.getInputStream().read());
      } finally {
        dial.close();
      }
    }
  }

  @Test
  void aRefusedConnectFailsWhenFinishedAsABlockingConnectWould() throws IOException {
    int closedPort;
    try (ServerSocket gone = new ServerSocket(0, 1, LOOPBACK)) {
      closedPort = gone.getLocalPort();
    }
    CmDial dial = CmDial.begin(LOOPBACK, new InetSocketAddress(LOOPBACK, closedPort));
    ConnectException e = assertThrows(ConnectException.class, () -> dial.finish(5000));
    assertTrue(e.getMessage().contains("refused"), e.getMessage());
  }

  @Test
  void aLocalAddressThisHostDoesNotHaveFailsAtOnce() throws IOException {
    // TEST-NET-3: no interface of a test machine holds it
    InetAddress foreign = InetAddress.getByAddress(new byte[] {(byte) 203, 0, (byte) 113, 77});
    assertThrows(IOException.class, () -> CmDial.begin(foreign, new InetSocketAddress(LOOPBACK, 9)));
  }
}

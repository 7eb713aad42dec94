package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A listener reads a connection's REQ on its own thread only when {@link CmSocket#frameArrived}
 * says the read cannot block: a peer that sends part of a frame must not stall the listener.
 */
class CmSocketTest {
  private static final Duration SETTLE = Duration.ofMillis(50);
  private static final Duration WAIT = Duration.ofSeconds(5);
  private ServerSocket server;
  private Socket peer;
  private CmSocket ours;

  @BeforeEach
  void connect() throws IOException {
    server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
    peer = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
    Socket accepted = server.accept();
    accepted.setSoTimeout(5000);
    ours = CmSocket.over(accepted);
  }

  @AfterEach
  void close() throws IOException {
    ours.close();
    peer.close();
    server.close();
  }

  private void send(byte[] bytes) throws IOException {
    OutputStream out = peer.getOutputStream();
    out.write(bytes);
    out.flush();
  }

  /** Whether the frame has come: true as soon as it says so, false if not within a moment. */
  private boolean arrived(Duration within) throws Exception {
    long deadline = System.nanoTime() + within.toNanos();
    do {
      if (ours.frameArrived()) return true;
      Thread.sleep(1);
    } while (System.nanoTime() < deadline);
    return false;
  }

  @Test
  void aFrameHasArrivedOnlyWhenAllOfItHas() throws Exception {
    byte[] req = Frames.validReq();
    send(Arrays.copyOf(req, 3));
    assertFalse(arrived(SETTLE), "three bytes of the length");
    send(Arrays.copyOfRange(req, 3, req.length - 1));
    assertFalse(arrived(SETTLE), "all but the last byte");
    assertFalse(ours.frameArrived(), "asking again reads nothing away");
    send(Arrays.copyOfRange(req, req.length - 1, req.length));
    assertTrue(arrived(WAIT));
    CmMessage.Framed f = ours.read();
    assertEquals(CmMessage.Kind.REQ, f.message().kind());
    assertEquals(Frames.CONVERSATION, f.conversation());
  }

  @Test
  void aLengthNoFrameMayHaveCountsAsArrivedSoThatReadingRefusesIt() throws Exception {
    send(Frames.withLength(CmMessage.MAX_FRAME + 1, new byte[8]));
    assertTrue(arrived(WAIT), "refused now, not after MAX_FRAME bytes that may never come");
    assertThrows(ProtocolException.class, ours::read);
  }

  @Test
  void aNegativeLengthCountsAsArrived() throws Exception {
    send(Frames.withLength(-1, new byte[0]));
    assertTrue(arrived(WAIT));
    assertThrows(ProtocolException.class, ours::read);
  }
}

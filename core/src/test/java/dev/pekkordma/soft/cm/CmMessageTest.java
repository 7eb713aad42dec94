package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.Mtu;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ProtocolException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class CmMessageTest {
  private static final Gid GID = Gid.parse("fe80::1234:5678");

  private static final int CONVERSATION = 0x1234567;

  private static byte[] encode(CmMessage m) throws IOException {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    m.writeTo(new DataOutputStream(bytes), CONVERSATION);
    return bytes.toByteArray();
  }

  private static CmMessage decode(byte[] frame) throws IOException {
    CmMessage.Framed f = CmMessage.readFrom(new DataInputStream(new ByteArrayInputStream(frame)));
    assertEquals(CONVERSATION, f.conversation(), "the frame's conversation");
    return f.message();
  }

  private static byte[] bytes(int n) {
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) b[i] = (byte) (i * 7 + 1);
    return b;
  }

  @Test
  void reqAndRepKeepEveryField() throws IOException {
    ConnectionParameters p = new ConnectionParameters(bytes(56), 3, 5, 6, 2);
    CmMessage req = CmMessage.req(0xabcdef, 0x123456, GID, Mtu.MTU_2048, p, 50001);
    CmMessage back = decode(encode(req));
    assertEquals(CmMessage.Kind.REQ, back.kind());
    assertEquals(0xabcdef, back.qpn());
    assertEquals(0x123456, back.psn());
    assertEquals(GID, back.gid());
    assertEquals(Mtu.MTU_2048, back.mtu());
    assertEquals(3, back.responderResources());
    assertEquals(5, back.initiatorDepth());
    assertEquals(6, back.retryCount());
    assertEquals(2, back.rnrRetryCount());
    assertArrayEquals(bytes(56), back.privateData());
    assertEquals(50001, back.port());

    CmMessage rep = CmMessage.rep(0, 7, GID, Mtu.MTU_4096, new ConnectionParameters(bytes(196),
        1, 0, 7, 7), 65535);
    CmMessage repBack = decode(encode(rep));
    assertEquals(CmMessage.Kind.REP, repBack.kind());
    assertEquals(0, repBack.qpn());
    assertArrayEquals(bytes(196), repBack.privateData());
  }

  @Test
  void receiverSeesTheRequestersDepthsSwapped() {
    CmMessage req = CmMessage.req(1, 2, GID, Mtu.MTU_1024,
        new ConnectionParameters(bytes(3), 4, 9, 5, 6), 1);
    ConnectionParameters seen = req.asSeenByReceiver();
    assertEquals(9, seen.responderResources());
    assertEquals(4, seen.initiatorDepth());
    assertEquals(5, seen.retryCount());
    assertEquals(6, seen.rnrRetryCount());
    assertArrayEquals(bytes(3), seen.privateData());
  }

  @Test
  void rejAndBareKinds() throws IOException {
    CmMessage rej = decode(encode(CmMessage.rej(28, bytes(148))));
    assertEquals(CmMessage.Kind.REJ, rej.kind());
    assertEquals(28, rej.reason());
    assertArrayEquals(bytes(148), rej.privateData());
    for (CmMessage.Kind k : new CmMessage.Kind[] {CmMessage.Kind.RTU, CmMessage.Kind.DREQ,
        CmMessage.Kind.DREP}) {
      byte[] frame = encode(CmMessage.bare(k));
      assertEquals(4 + CmMessage.HEADER, frame.length, k + " is a bare frame");
      assertEquals(k, decode(frame).kind());
    }
  }

  @Test
  void privateDataBeyondLibrdmacmsLimitsIsRefusedBothWays() throws IOException {
    ConnectionParameters big = new ConnectionParameters(bytes(57), 1, 1, 7, 7);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> encode(CmMessage.req(1, 1, GID, Mtu.MTU_1024, big, 1)));
    assertTrue(e.getMessage().contains("at most 56"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> encode(CmMessage.rej(28, bytes(149))));

    // a REQ claiming 57 bytes of private data, written by hand
    byte[] frame = encode(CmMessage.req(1, 1, GID, Mtu.MTU_1024,
        new ConnectionParameters(bytes(56), 1, 1, 7, 7), 1));
    byte[] longer = Arrays.copyOf(frame, frame.length + 1);
    longer[3] += 1; // frame length
    longer[frame.length - 57] = 57; // private data length
    ProtocolException p = assertThrows(ProtocolException.class, () -> decode(longer));
    assertTrue(p.getMessage().contains("57 bytes of private data"), p.getMessage());
  }

  @Test
  void malformedFramesAreProtocolErrors() throws IOException {
    byte[] good = encode(CmMessage.req(1, 1, GID, Mtu.MTU_1024, ConnectionParameters.defaults(),
        1));

    byte[] badMagic = good.clone();
    badMagic[4] ^= 0x55;
    assertTrue(assertThrows(ProtocolException.class, () -> decode(badMagic)).getMessage()
        .contains("not a soft CM peer"));

    byte[] badKind = good.clone();
    badKind[8] = 42;
    assertTrue(assertThrows(ProtocolException.class, () -> decode(badKind)).getMessage()
        .contains("kind 42"));

    byte[] huge = {0x7f, 0, 0, 0};
    assertTrue(assertThrows(ProtocolException.class, () -> decode(huge)).getMessage()
        .contains("bytes (valid: 9 to 512)"));

    // the length says less than the REQ's fields need
    byte[] shortReq = Arrays.copyOf(good, 4 + 12);
    shortReq[3] = 12;
    assertTrue(assertThrows(ProtocolException.class, () -> decode(shortReq)).getMessage()
        .contains("truncated"));

    byte[] badMtu = good.clone();
    badMtu[4 + CmMessage.HEADER + 8 + 16] = 9;
    assertTrue(assertThrows(ProtocolException.class, () -> decode(badMtu)).getMessage()
        .contains("MTU"));

    byte[] trailing = Arrays.copyOf(good, good.length + 2);
    trailing[3] += 2;
    assertTrue(assertThrows(ProtocolException.class, () -> decode(trailing)).getMessage()
        .contains("2 bytes too many"));

    byte[] portZero = good.clone();
    int port = 4 + CmMessage.HEADER + 8 + 16 + 5;
    portZero[port] = 0;
    portZero[port + 1] = 0;
    assertTrue(assertThrows(ProtocolException.class, () -> decode(portZero)).getMessage()
        .contains("port 0"));

    // a connection that ends mid-frame is an EOF, not a protocol error
    assertThrows(EOFException.class, () -> decode(Arrays.copyOf(good, good.length - 1)));
  }
}

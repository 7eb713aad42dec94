package dev.pekkordma.streams.impl;

import static dev.pekkordma.streams.impl.CloseHandshake.Control.CANCEL;
import static dev.pekkordma.streams.impl.CloseHandshake.Control.CREDIT;
import static dev.pekkordma.streams.impl.CloseHandshake.Control.FIN;
import static dev.pekkordma.streams.impl.CloseHandshake.Control.FIN_ACK;
import static dev.pekkordma.streams.impl.CloseHandshake.Control.NONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CloseHandshakeTest {
  private static CloseHandshake.Control send(CloseHandshake h, boolean room, boolean dataDone,
      boolean creditsDue) {
    CloseHandshake.Control c = h.next(room, dataDone, true, creditsDue);
    if (c != NONE) h.sent(c);
    return c;
  }

  @Test
  void bothDirectionsCloseInOrderAndOnlyThenIsItDone() {
    CloseHandshake h = new CloseHandshake();
    assertEquals(NONE, send(h, true, false, false));
    assertEquals(FIN, send(h, true, true, false), "our data is done");
    assertEquals(NONE, send(h, true, true, false), "one FIN only");
    h.finAcked();
    assertFalse(h.done(0, true, false), "half-close: the peer's direction is still open");
    h.peerFin();
    assertEquals(NONE, send(h, true, true, false), "no FIN_ACK before our application took all");
    h.taken();
    assertEquals(FIN_ACK, send(h, true, true, false));
    assertFalse(h.done(1, true, false), "a send in flight");
    assertTrue(h.done(0, true, false));
  }

  @Test
  void nothingGoesWithoutRoomAndCreditsStopAfterOurFinAck() {
    CloseHandshake h = new CloseHandshake();
    assertEquals(NONE, send(h, false, true, true));
    assertEquals(CREDIT, send(h, true, false, true));
    h.peerFin();
    h.taken();
    assertEquals(FIN_ACK, send(h, true, false, true));
    assertEquals(NONE, send(h, true, false, true), "no credits once the peer's end is answered");
  }

  @Test
  void aCancelGoesFirstAndOnlyIfThePeersEndIsNotAlreadyHere() {
    CloseHandshake h = new CloseHandshake();
    h.stopReading(3, false, 17);
    assertEquals(CANCEL, send(h, true, true, true));
    assertEquals(17, h.takenAtCancel());
    assertEquals(FIN, send(h, true, true, false));
    assertEquals(NONE, send(h, true, true, true), "no credits after a CANCEL");

    CloseHandshake atTheEnd = new CloseHandshake();
    atTheEnd.peerFin();
    atTheEnd.stopReading(1, false, 5); // only the FIN is left: nothing was dropped
    assertEquals(CloseHandshake.Reading.READING, atTheEnd.reading());
    atTheEnd.stopReading(1, true, 5); // but half a ByteString was
    assertEquals(CloseHandshake.Reading.CANCEL_DUE, atTheEnd.reading());
  }

  @Test
  void whetherThePeersGoingEndsTheConnectionWellOrNot() {
    CloseHandshake open = new CloseHandshake();
    assertEquals("gone without closing the stream", open.whenPeerGone("gone", 0, false, 3));

    CloseHandshake answered = new CloseHandshake();
    answered.peerFin();
    answered.taken();
    answered.sent(FIN_ACK);
    assertNull(answered.whenPeerGone("gone", 0, false, 0), "nothing of ours was sent");
    answered.sent(FIN);
    assertTrue(answered.whenPeerGone("gone", 0, false, 1).contains("before acknowledging"));
    answered.finAcked();
    assertNull(answered.whenPeerGone("gone", 0, false, 1));

    CloseHandshake cancelled = new CloseHandshake();
    cancelled.stopReading(2, false, 0);
    cancelled.sent(CANCEL);
    assertNull(cancelled.whenPeerGone("gone", 2, false, 0));
    assertTrue(cancelled.whenPeerGone("gone", 2, true, 0).contains("after we stopped reading"));
  }
}

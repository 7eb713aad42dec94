package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.soft.SharedMemoryHandshake.RingAction;
import dev.pekkordma.soft.SharedMemoryHandshake.Answering;
import dev.pekkordma.soft.SharedMemoryHandshake.Offering;
import dev.pekkordma.soft.shm.RingFile;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The shared-memory exchange's two state machines, without sockets. */
class SharedMemoryHandshakeTest {
  private static final String NAME = RingFile.PREFIX + "0123456789abcdef0123456789abcdef";
  private static final int CAPACITY = 1 << 20;

  @Test
  void bothAutoOfferAFileAndSwitchOnYes() {
    Offering offering = new Offering(true);
    Answering answering = new Answering(true, offering.helloCode());
    assertEquals(FabricWire.SHARED_MEMORY, answering.welcomeCode());
    assertInstanceOf(SharedMemoryHandshake.AwaitOffer.class, answering.welcomed());
    assertInstanceOf(SharedMemoryHandshake.Create.class,
        offering.welcomed(answering.welcomeCode()));
    var offer = (SharedMemoryHandshake.SendOffer) offering.created(NAME, CAPACITY);
    var open = (SharedMemoryHandshake.Open) answering.offered(offer.message());
    assertEquals(NAME, open.name());
    assertEquals(CAPACITY, open.capacity());
    var yes = (SharedMemoryHandshake.Rings) answering.opened();
    var switched = (SharedMemoryHandshake.Rings) offering.answered(yes.message());
    assertNull(switched.message(), "the connecting side sends nothing more");
  }

  @Test
  void aSideThatIsOffSaysSoAndNothingIsExchanged() {
    // connecting off: its HELLO says nothing, the accepting side (auto) logs the peer's off
    Offering off = new Offering(false);
    assertEquals(0, off.helloCode());
    Answering auto = new Answering(true, off.helloCode());
    assertEquals(0, auto.welcomeCode(), "a WELCOME as before");
    stays(auto.welcomed(), false, "the peer's");
    stays(off.welcomed(auto.welcomeCode()), true, "off here");
    // accepting off: its WELCOME says nothing, the connecting side (auto) makes no file
    Offering autoOffering = new Offering(true);
    Answering offAnswering = new Answering(false, autoOffering.helloCode());
    assertEquals(0, offAnswering.welcomeCode());
    stays(offAnswering.welcomed(), true, "off here");
    stays(autoOffering.welcomed(offAnswering.welcomeCode()), false, "the peer's");
  }

  @Test
  void anOlderPeersCodesAreReadAsOff() {
    assertEquals(0, new Answering(true, (short) 0).welcomeCode());
    stays(new Offering(true).welcomed((short) 0), false, "the peer's");
    stays(new Offering(true).welcomed((short) 7), false, "the peer's");
  }

  @Test
  void noFileMadeIsSaidToThePeerAndBothStayOnTcp() {
    Offering offering = new Offering(true);
    Answering answering = new Answering(true, offering.helloCode());
    var none = stays(offering.notCreated("/dev/shm is full"), false, "/dev/shm is full");
    stays(answering.offered(none.message()), false, "could not make");
  }

  @Test
  void badNamesAreRefusedWithoutOpeningAnything() {
    for (String name : new String[] {"../../etc/shadow", "/dev/shm/x", NAME + "0",
        NAME.substring(0, NAME.length() - 1), NAME.replace('a', 'A'), "pekko-rdma-shm-\u00e9",
        NAME.substring(0, 20) + "/" + NAME.substring(21), ""}) {
      Answering answering = new Answering(true, FabricWire.SHARED_MEMORY);
      var no = stays(answering.offered(offer(name, CAPACITY)), false, "name");
      assertEquals(RingFile.RingRefusal.BAD_NAME.code(), answer(no.message()).code, name);
    }
  }

  @Test
  void capacitiesOutsideTheRangeOrNotAPowerOfTwoAreRefused() {
    for (int capacity : new int[] {0, -1, 1000, RingFile.MIN_CAPACITY / 2,
        RingFile.MAX_CAPACITY * 2, RingFile.MIN_CAPACITY + 1, Integer.MIN_VALUE}) {
      Answering answering = new Answering(true, FabricWire.SHARED_MEMORY);
      var no = stays(answering.offered(offer(NAME, capacity)), false, "capacity");
      assertEquals(RingFile.RingRefusal.BAD_CAPACITY.code(), answer(no.message()).code);
    }
  }

  @Test
  void aRefusedFileIsAnsweredWithItsReasonWhichTheConnectingSideLogs() {
    for (RingFile.RingRefusal reason : RingFile.RingRefusal.values()) {
      Answering answering = new Answering(true, FabricWire.SHARED_MEMORY);
      var no = stays(answering.refused(reason, reason.text), false, reason.text);
      stays(new Offering(true).answered(no.message()), false, reason.text);
    }
  }

  @Test
  void brokenMessagesDropTheConnection() {
    Answering answering = new Answering(true, FabricWire.SHARED_MEMORY);
    assertInstanceOf(SharedMemoryHandshake.DropConnection.class,
        answering.offered(new FabricWire.Handshake(FabricWire.HELLO).encode()));
    byte[] odd = offer(NAME, CAPACITY);
    odd[6] = 9; // a code no offer has
    assertInstanceOf(SharedMemoryHandshake.DropConnection.class, answering.offered(odd));
    assertInstanceOf(SharedMemoryHandshake.DropConnection.class,
        new Offering(true).answered(new FabricWire.Handshake(FabricWire.WELCOME).encode()));
    assertInstanceOf(SharedMemoryHandshake.DropConnection.class,
        new Offering(true).answered(new byte[FabricWire.HANDSHAKE_BYTES]));
  }

  /**
   * A peer that relays another process's offer to us gets nothing: the file's header holds the
   * binding of the connection it was made for, and ours with the relay is another.
   */
  @Test
  void aRelayedOfferIsRefusedForItsBinding(@TempDir Path dir) throws Exception {
    FabricAddress victim = address(1);
    FabricAddress relay = address(2);
    FabricAddress us = address(3);
    byte[] offered = ChannelBinding.of(victim, relay, new byte[0], new byte[0]);
    byte[] ours = ChannelBinding.of(relay, us, new byte[0], new byte[0]);
    RingFile f = RingFile.create(dir, RingFile.MIN_CAPACITY, offered);
    try {
      Answering answering = new Answering(true, FabricWire.SHARED_MEMORY);
      var open = (SharedMemoryHandshake.Open) answering.offered(offer(f.name(), f.capacity()));
      RingFile.RingFileRefused refused = org.junit.jupiter.api.Assertions.assertThrows(
          RingFile.RingFileRefused.class, () -> RingFile.open(dir, open.name(), open.capacity(), ours));
      assertEquals(RingFile.RingRefusal.OTHER_CONNECTION, refused.reason);
      var no = stays(answering.refused(refused.reason, refused.getMessage()), false,
          "another connection");
      assertEquals(RingFile.RingRefusal.OTHER_CONNECTION.code(), answer(no.message()).code);
      assertArrayEquals(offered, ChannelBinding.of(victim, relay, new byte[0], new byte[0]));
      RingFile.open(dir, f.name(), f.capacity(), offered); // the victim's own peer would map it
    } finally {
      f.unlink();
    }
  }

  private static FabricAddress address(int last) {
    return new FabricAddress(new byte[] {127, 0, 0, (byte) last}, 40000 + last);
  }

  private static byte[] offer(String name, int capacity) {
    byte[] b = new FabricWire.RingOffer((short) 0, capacity, "").encode();
    byte[] n = name.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    System.arraycopy(n, 0, b, FabricWire.RING_NAME_AT, Math.min(n.length,
        FabricWire.RING_NAME_BYTES));
    return b;
  }

  private static FabricWire.Handshake answer(byte[] message) {
    return FabricWire.Handshake.decode(message, FabricWire.RING_ANSWER);
  }

  private static SharedMemoryHandshake.Tcp stays(RingAction a, boolean quiet, String why) {
    var tcp = assertInstanceOf(SharedMemoryHandshake.Tcp.class, a);
    assertEquals(quiet, tcp.quiet(), tcp.why());
    assertTrue(tcp.why().contains(why), tcp.why());
    return tcp;
  }
}

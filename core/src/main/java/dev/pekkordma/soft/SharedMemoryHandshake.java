package dev.pekkordma.soft;

import dev.pekkordma.soft.shm.RingFile;

/**
 * Whether a proven fabric connection goes on through shared memory, as two state machines with no
 * sockets nor files: events in, actions out, which {@link FabricHandshakes} (the connecting side)
 * and {@link InboundConnection} (the accepting side) carry out.
 *
 * <p>Each side says in its HELLO or WELCOME whether it is {@code auto}; only when both are does the
 * connecting side make a ring file (its header holds the channel binding of this connection) and
 * offer its name, or offer none if it could not. The accepting side opens an offered file only if
 * its name is one a ring file has, and only if the file is ours and names this connection as this
 * side sees it bound ({@link RingFile#open}): a peer relaying another process's offer binds to
 * another connection and gets nothing. It answers yes or why not; the connecting side unlinks the
 * file as the answer comes, whatever it says. Every way short of yes leaves the link on TCP with
 * one log line on each side (debug on a side that is off).
 */
final class SharedMemoryHandshake {
  private static final String OFF = "pekko-rdma.soft.fabric.shared-memory is off here";
  private static final String PEER_OFF = "the peer's pekko-rdma.soft.fabric.shared-memory is off";

  private SharedMemoryHandshake() {}

  /** What to do next. */
  sealed interface RingAction
      permits Tcp, Create, SendOffer, AwaitOffer, Open, Rings, DropConnection {}

  /** Send {@code message} (if not null), then go on over TCP; log {@code why} (debug if quiet). */
  record Tcp(String why, boolean quiet, byte[] message) implements RingAction {}

  /** The connecting side: make and map a ring file, then {@code created} or {@code notCreated}. */
  record Create() implements RingAction {}

  /** The connecting side: send {@code message}, then read the answer. */
  record SendOffer(byte[] message) implements RingAction {}

  /** The accepting side: read the RING_OFFER. */
  record AwaitOffer() implements RingAction {}

  /** The accepting side: open and check the file, then {@code opened} or {@code refused}. */
  record Open(String name, int capacity) implements RingAction {}

  /** Send {@code message} (if not null), then carry the frames through the rings. */
  record Rings(byte[] message) implements RingAction {}

  /** The peer broke the protocol: the connection is dropped, naming why. */
  record DropConnection(String why) implements RingAction {}

  /** The connecting side's half. */
  static final class Offering {
    private final boolean auto;

    Offering(boolean auto) {
      this.auto = auto;
    }

    /** The code our HELLO carries. */
    short helloCode() {
      return auto ? FabricWire.SHARED_MEMORY : 0;
    }

    /** Event: WELCOME came with {@code code}. */
    RingAction welcomed(short code) {
      if (!auto) return new Tcp(OFF, true, null);
      if (code != FabricWire.SHARED_MEMORY) return new Tcp(PEER_OFF, false, null);
      return new Create();
    }

    /** Event: the file {@code name} was made, with rings of {@code capacity} bytes. */
    RingAction created(String name, int capacity) {
      return new SendOffer(new FabricWire.RingOffer((short) 0, capacity, name).encode());
    }

    /** Event: no file could be made, for {@code why}. */
    RingAction notCreated(String why) {
      return new Tcp("no ring file could be made: " + why, false,
          new FabricWire.RingOffer(FabricWire.NO_RING, 0, "").encode());
    }

    /** Event: the answer to the offer came. */
    RingAction answered(byte[] answer) {
      FabricWire.Handshake a;
      try {
        a = FabricWire.Handshake.decode(answer, FabricWire.RING_ANSWER);
      } catch (FabricWire.FabricViolation v) {
        return new DropConnection(v.getMessage());
      }
      if (a.code == 0) return new Rings(null);
      RingFile.RingRefusal reason = RingFile.RingRefusal.of(a.code);
      return new Tcp("the peer did not take the ring file: "
          + (reason == null ? "code " + a.code : reason.text), false, null);
    }
  }

  /** The accepting side's half. */
  static final class Answering {
    private final boolean auto;
    private final boolean peerAuto;

    /** @param helloCode the code of the peer's HELLO */
    Answering(boolean auto, short helloCode) {
      this.auto = auto;
      this.peerAuto = helloCode == FabricWire.SHARED_MEMORY;
    }

    /** The code our WELCOME carries: shared memory only if both sides would. */
    short welcomeCode() {
      return auto && peerAuto ? FabricWire.SHARED_MEMORY : 0;
    }

    /** Event: WELCOME went out. */
    RingAction welcomed() {
      if (!auto) return new Tcp(OFF, true, null);
      if (!peerAuto) return new Tcp(PEER_OFF, false, null);
      return new AwaitOffer();
    }

    /** Event: the RING_OFFER's bytes came. */
    RingAction offered(byte[] bytes) {
      FabricWire.RingOffer offer;
      try {
        offer = FabricWire.RingOffer.decode(bytes);
      } catch (FabricWire.FabricViolation v) {
        return new DropConnection(v.getMessage());
      }
      if (offer.code() == FabricWire.NO_RING) {
        return new Tcp("the peer could not make a ring file", false, null);
      }
      if (offer.code() != 0) return new DropConnection("a RING_OFFER with code " + offer.code());
      if (!RingFile.validName(offer.name())) {
        return refused(RingFile.RingRefusal.BAD_NAME, RingFile.RingRefusal.BAD_NAME.text + ": '"
            + printable(offer.name()) + "'");
      }
      if (!RingFile.validCapacity(offer.capacity())) {
        return refused(RingFile.RingRefusal.BAD_CAPACITY, RingFile.RingRefusal.BAD_CAPACITY.text + ": "
            + offer.capacity() + " bytes");
      }
      return new Open(offer.name(), offer.capacity());
    }

    /** Event: the offered file was opened and mapped. */
    RingAction opened() {
      FabricWire.Handshake yes = new FabricWire.Handshake(FabricWire.RING_ANSWER);
      return new Rings(yes.encode());
    }

    /** Event: the offered file was refused for {@code reason}, {@code why} in words. */
    RingAction refused(RingFile.RingRefusal reason, String why) {
      FabricWire.Handshake no = new FabricWire.Handshake(FabricWire.RING_ANSWER);
      no.code = reason.code();
      return new Tcp("the peer's ring file was refused: " + why, false, no.encode());
    }

    private static String printable(String s) {
      return s.replaceAll("[^\\x21-\\x7e]", "?");
    }
  }
}

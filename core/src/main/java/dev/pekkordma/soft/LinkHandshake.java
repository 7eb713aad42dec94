package dev.pekkordma.soft;

import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The accepting side of one LINK's handshake as a state machine, with no sockets: events in
 * (the HELLO's bytes, the claimed listener's answer), actions out (drop, refuse, ask for the
 * proof, welcome). The gate drives it without blocking, plain or under TLS, and does what it
 * says; the rules are written here once, testable without a socket.
 */
final class LinkHandshake {
  /** What to do next. */
  sealed interface Action permits Drop, Refuse, AskProof, Welcome {}

  /** The peer broke the protocol: log {@code why}, close, answer nothing. */
  record Drop(String why) implements Action {}

  /** Answer REFUSED with {@code code}, log {@code why}, close. */
  record Refuse(short code, String why) implements Action {}

  /** Ask the listener at {@code claimed} whether it issued {@code nonce} for {@code binding}. */
  record AskProof(FabricAddress claimed, byte[] nonce, byte[] binding) implements Action {}

  /**
   * Serve the connection as the process at {@code identity}, bound as {@code binding} (this
   * side's view of it); {@code helloCode} says whether it would go on through shared memory.
   */
  record Welcome(FabricAddress identity, byte[] binding, short helloCode) implements Action {}

  private final FabricAddress self;
  private FabricWire.Handshake hello;
  private byte[] binding;

  LinkHandshake(FabricAddress self) {
    this.self = self;
  }

  /**
   * Event: the HELLO's 72 bytes came.
   *
   * @param claimRefusal why the connection's certificate may not claim an address (null: it may)
   * @param room whether a process would get a place to be served in
   * @param serverCertificate this side's certificate on the connection (empty without TLS)
   * @param clientCertificate the peer's (empty without TLS or without one)
   */
  Action hello(byte[] bytes, Function<FabricAddress, String> claimRefusal,
      Predicate<FabricAddress> room, byte[] serverCertificate, byte[] clientCertificate) {
    if (hello != null) throw new IllegalStateException("a second HELLO");
    try {
      hello = FabricWire.Handshake.decode(bytes, FabricWire.HELLO);
    } catch (FabricWire.FabricViolation v) {
      return new Drop(v.getMessage());
    }
    String claim = claimRefusal.apply(hello.from);
    short refusal = judge(hello, self, claim, room.test(hello.from));
    if (refusal != 0) {
      return refuse(refusal, claim != null ? claim : FabricWire.refusal(refusal));
    }
    binding = ChannelBinding.of(hello.from, self, serverCertificate, clientCertificate);
    return new AskProof(hello.from, hello.nonce.clone(), binding.clone());
  }

  /** Event: the claimed listener answered {@code answer}, or null when asking it failed. */
  Action proofAnswered(byte[] answer) {
    if (hello == null) throw new IllegalStateException("a proof before the HELLO");
    boolean proven;
    try {
      proven = answer != null && FabricWire.Handshake.decode(answer, FabricWire.PROVEN,
          FabricWire.NOT_PROVEN).kind == FabricWire.PROVEN;
    } catch (FabricWire.FabricViolation v) {
      proven = false;
    }
    return proven ? new Welcome(hello.from, binding.clone(), hello.code)
        : refuse(FabricWire.NOT_CONFIRMED, FabricWire.refusal(FabricWire.NOT_CONFIRMED));
  }

  /** What the connection is doing while the proof is asked, for the line its deadline logs. */
  String proving() {
    return "being proven by the fabric it names (" + hello.from + ")";
  }

  private Refuse refuse(short code, String reason) {
    return new Refuse(code, refusal(hello.from, reason));
  }

  /** The line logged when a HELLO claiming {@code claimed} is refused for {@code reason}. */
  static String refusal(FabricAddress claimed, String reason) {
    return "it claims to be the fabric at " + claimed + ", refused: " + reason;
  }

  /** The REFUSED message carrying {@code code}. */
  static byte[] refused(short code) {
    FabricWire.Handshake answer = new FabricWire.Handshake(FabricWire.REFUSED);
    answer.code = code;
    return answer.encode();
  }

  /**
   * Why {@code hello} must be refused before any proof is asked (0: it may go on): it names
   * another listener than {@code self} (it was relayed), or claims {@code self}; the connection's
   * certificate may not claim its address ({@code claimRefusal}, null if it may); or no place
   * is left for a process not served yet.
   */
  static short judge(FabricWire.Handshake hello, FabricAddress self, String claimRefusal,
      boolean room) {
    if (!hello.to.equals(self)) return FabricWire.RELAYED;
    if (hello.from.equals(self)) return FabricWire.OWN_ADDRESS;
    if (claimRefusal != null) return FabricWire.CERTIFICATE;
    return room ? 0 : FabricWire.BUSY;
  }
}

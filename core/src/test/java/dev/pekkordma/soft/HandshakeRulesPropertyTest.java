package dev.pekkordma.soft;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The handshake's rules without sockets: a channel binding changes with every part of the
 * connection it describes, a HELLO is judged by what the accepting side alone can check, and a
 * LINK's handshake ({@link LinkHandshake}) welcomes only what the listener it names proves.
 */
class HandshakeRulesPropertyTest {
  record Channel(FabricAddress from, FabricAddress to, byte[] server, byte[] client) {}

  @Provide
  Arbitrary<FabricAddress> addresses() {
    return Combinators.combine(Arbitraries.bytes().array(byte[].class).ofSize(4),
        Arbitraries.integers().between(0, 65535)).as(FabricAddress::new);
  }

  @Provide
  Arbitrary<Channel> channels() {
    Arbitrary<byte[]> certificate = Arbitraries.bytes().array(byte[].class).ofMaxSize(64);
    return Combinators.combine(addresses(), addresses(), certificate, certificate)
        .as(Channel::new);
  }

  @Property(tries = 300)
  void aBindingChangesWithEachPartOfTheChannel(@ForAll("channels") Channel a,
      @ForAll("channels") Channel b) {
    byte[] whole = bind(a);
    check(ChannelBinding.same(whole, bind(a)), "the same channel binds the same");
    check(a.from().equals(b.from()) || !ChannelBinding.same(whole,
        bind(new Channel(b.from(), a.to(), a.server(), a.client()))), "from");
    check(a.to().equals(b.to()) || !ChannelBinding.same(whole,
        bind(new Channel(a.from(), b.to(), a.server(), a.client()))), "to");
    check(java.util.Arrays.equals(a.server(), b.server()) || !ChannelBinding.same(whole,
        bind(new Channel(a.from(), a.to(), b.server(), a.client()))), "the server's certificate");
    check(java.util.Arrays.equals(a.client(), b.client()) || !ChannelBinding.same(whole,
        bind(new Channel(a.from(), a.to(), a.server(), b.client()))), "the client's certificate");
    // the certificates are length-prefixed: moving bytes from one to the other changes it
    if (a.server().length > 0) {
      byte[] shorter = java.util.Arrays.copyOf(a.server(), a.server().length - 1);
      byte[] longer = new byte[a.client().length + 1];
      longer[0] = a.server()[a.server().length - 1];
      System.arraycopy(a.client(), 0, longer, 1, a.client().length);
      check(!ChannelBinding.same(whole, bind(new Channel(a.from(), a.to(), shorter, longer))),
          "a byte moved between the certificates");
    }
  }

  @Property(tries = 300)
  void aHelloIsJudgedRelayedFirstThenOwnAddressThenCertificateThenRoom(
      @ForAll("addresses") FabricAddress from, @ForAll("addresses") FabricAddress to,
      @ForAll("addresses") FabricAddress self, @ForAll boolean claimRefused,
      @ForAll boolean room, @ForAll boolean toSelf, @ForAll boolean fromSelf) {
    FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
    hello.from = fromSelf ? self : from;
    hello.to = toSelf ? self : to;
    short code = LinkHandshake.judge(hello, self, claimRefused ? "no" : null, room);
    short expected = !hello.to.equals(self) ? FabricWire.RELAYED
        : hello.from.equals(self) ? FabricWire.OWN_ADDRESS
        : claimRefused ? FabricWire.CERTIFICATE
        : room ? 0 : FabricWire.BUSY;
    check(code == expected, "judged " + code + ", expected " + expected);
  }

  /**
   * A LINK's handshake as its state machine: a HELLO refused by the rules is answered with that
   * refusal and no proof is asked; one they let through asks the listener it names, for the
   * channel's binding, and is welcomed only if that listener answers PROVEN.
   */
  @Property(tries = 300)
  void aLinkIsWelcomedOnlyWhenTheListenerItNamesProvesItsNonce(
      @ForAll("addresses") FabricAddress from, @ForAll("addresses") FabricAddress self,
      @ForAll boolean toSelf, @ForAll boolean room, @ForAll boolean claimRefused,
      @ForAll("answers") byte[] answer) {
    FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
    hello.from = from;
    hello.to = toSelf ? self : from;
    new java.util.Random(from.port()).nextBytes(hello.nonce);
    byte[] server = {1, 2};
    byte[] client = {3};
    LinkHandshake h = new LinkHandshake(self);
    LinkHandshake.Action first = h.hello(hello.encode(), a -> claimRefused ? "no" : null,
        a -> room, server, client);
    short rules = LinkHandshake.judge(hello, self, claimRefused ? "no" : null, room);
    if (rules != 0) {
      check(first instanceof LinkHandshake.Refuse r && r.code() == rules
          && r.why().contains("claims to be the fabric at " + from), "refused: " + first);
      return;
    }
    LinkHandshake.AskProof ask = (LinkHandshake.AskProof) first;
    check(ask.claimed().equals(from), "asks the listener it names");
    check(java.util.Arrays.equals(ask.nonce(), hello.nonce), "about its nonce");
    check(ChannelBinding.same(ask.binding(), ChannelBinding.of(from, self, server, client)),
        "for this channel's binding");
    LinkHandshake.Action last = h.proofAnswered(answer);
    boolean proven = answer != null && answer.length == FabricWire.HANDSHAKE_BYTES
        && answer[4] == FabricWire.VERSION && answer[5] == FabricWire.PROVEN
        && java.nio.ByteBuffer.wrap(answer).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt(0)
            == FabricWire.MAGIC;
    if (proven) {
      check(last instanceof LinkHandshake.Welcome w && w.identity().equals(from),
          "welcomed: " + last);
    } else {
      check(last instanceof LinkHandshake.Refuse r && r.code() == FabricWire.NOT_CONFIRMED,
          "not confirmed: " + last);
    }
  }

  /** Answers a called-back listener may give: PROVEN, NOT_PROVEN, another kind, junk, none. */
  @Provide
  Arbitrary<byte[]> answers() {
    return Arbitraries.oneOf(
        Arbitraries.of(FabricWire.PROVEN, FabricWire.NOT_PROVEN, FabricWire.WELCOME,
            FabricWire.HELLO).map(kind -> new FabricWire.Handshake(kind).encode()),
        Arbitraries.bytes().array(byte[].class).ofSize(FabricWire.HANDSHAKE_BYTES),
        Arbitraries.just(null));
  }

  @Property(tries = 100)
  void aHelloThatIsNotOneIsDroppedNamingWhatWasWrong(
      @ForAll("junk") byte[] bytes, @ForAll("addresses") FabricAddress self) {
    LinkHandshake.Action a = new LinkHandshake(self).hello(bytes, x -> null, x -> true,
        new byte[0], new byte[0]);
    check(a instanceof LinkHandshake.Drop d && !d.why().isEmpty(), "dropped: " + a);
  }

  /** 72 bytes that are not a HELLO: random, or a well-formed message of another kind. */
  @Provide
  Arbitrary<byte[]> junk() {
    return Arbitraries.oneOf(
        Arbitraries.bytes().array(byte[].class).ofSize(FabricWire.HANDSHAKE_BYTES)
            .filter(b -> b[5] != FabricWire.HELLO),
        Arbitraries.of(FabricWire.WELCOME, FabricWire.PROVE, FabricWire.REFUSED)
            .map(kind -> new FabricWire.Handshake(kind).encode()));
  }

  private static byte[] bind(Channel c) {
    return ChannelBinding.of(c.from(), c.to(), c.server(), c.client());
  }

  private static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }
}

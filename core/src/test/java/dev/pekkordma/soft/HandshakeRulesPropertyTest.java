package dev.pekkordma.soft;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The handshake's rules without sockets: a channel binding changes with every part of the
 * connection it describes, and a HELLO is judged by what the accepting side alone can check.
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

  private static byte[] bind(Channel c) {
    return ChannelBinding.of(c.from(), c.to(), c.server(), c.client());
  }

  private static void check(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }
}

package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.RdmaProvider;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.ProtocolException;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * A datagram id that is bound and does not listen, as a hostile peer may find it: whatever
 * mixture of SIDR requests, replies and noise reaches its port, each valid request is answered
 * once with status 1 (IB_SIDR_UNSUPPORTED) and its own request id, nothing else is answered,
 * and the id hears no event.
 */
class UnlistenedSidrPortPropertyTest {
  private static final Gid GID = Gid.parse("fe80::7f00:1:1234:1");
  private static RdmaProvider provider;
  private static CmEventChannel channel;
  private static CmId bound;
  private static int port;

  @BeforeContainer
  static void bindAnId() {
    provider = CmFixture.newProvider();
    channel = provider.createCmEventChannel();
    bound = channel.createId("bound, not listening", RdmaPortSpace.UDP);
    bound.bind(CmFixture.LOOPBACK_ANY_PORT);
    port = bound.localAddress().getPort();
  }

  @AfterContainer
  static void close() {
    bound.close();
    channel.close();
    provider.close();
  }

  /** A datagram: a request (its id), a reply, or noise (id null for the last two). */
  record Sent(byte[] bytes, Integer requestId) {}

  @Provide
  Arbitrary<List<Sent>> traffic() {
    Arbitrary<Sent> req = Arbitraries.integers().flatMap(id -> Arbitraries.bytes()
        .array(byte[].class).ofMaxSize(SidrMessage.MAX_REQ_PRIVATE_DATA)
        .map(d -> new Sent(SidrMessage.req(id, GID, d).encode(), id)));
    Arbitrary<Sent> rep = Arbitraries.integers().map(id -> new Sent(
        SidrMessage.rep(id, 0, 2, 0, GID, new byte[0]).encode(), null));
    Arbitrary<Sent> noise = Arbitraries.bytes().array(byte[].class).ofMinSize(1).ofMaxSize(300)
        .map(b -> new Sent(b, null));
    return Arbitraries.oneOf(req, rep, noise).list().ofMaxSize(8);
  }

  @Property(tries = 60)
  void eachRequestIsAnsweredUnsupportedAndNothingElse(@ForAll("traffic") List<Sent> traffic)
      throws Exception {
    List<Integer> asked = new ArrayList<>();
    try (DatagramSocket peer = new DatagramSocket(0, InetAddress.getLoopbackAddress())) {
      for (Sent s : traffic) {
        peer.send(new DatagramPacket(s.bytes(), s.bytes().length,
            InetAddress.getLoopbackAddress(), port));
        if (s.requestId() != null && isRequest(s.bytes())) asked.add(s.requestId());
      }
      for (int expected : asked) {
        SidrMessage m = receive(peer, 2000);
        assertEquals(SidrMessage.REP, m.kind(), m.toString());
        assertEquals(SidrMessage.UNSUPPORTED, m.status(), m.toString());
        assertEquals(expected, m.requestId(), "the reply answers the request in order");
      }
      assertNull(receive(peer, 100), "an answer to something that was not a request");
    }
    assertNull(channel.awaitEvent(Duration.ZERO), "an event for the id that does not listen");
  }

  /** Noise may happen to be a valid request; then it is one. */
  private static boolean isRequest(byte[] b) {
    try {
      return SidrMessage.parse(b, b.length).kind() == SidrMessage.REQ;
    } catch (ProtocolException e) {
      return false;
    }
  }

  private static SidrMessage receive(DatagramSocket s, int timeoutMillis) throws Exception {
    byte[] buffer = new byte[SidrMessage.MAX_BYTES];
    DatagramPacket p = new DatagramPacket(buffer, buffer.length);
    s.setSoTimeout(timeoutMillis);
    try {
      s.receive(p);
    } catch (SocketTimeoutException e) {
      return null;
    }
    return SidrMessage.parse(buffer, p.getLength());
  }
}

package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.Gid;
import java.net.ProtocolException;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * SIDR messages as a hostile peer may send them: valid ones round-trip; any bytes at all, and
 * valid messages with one byte changed, cut short or lengthened, either parse into a message
 * within the format's bounds or fail with a ProtocolException that says what was wrong, never
 * anything else, and never with private data beyond the kind's limit.
 */
class SidrMessagePropertyTest {
  private static final byte[] GID = Gid.parse("fe80::7f00:1:1234:1").toBytes();

  @Provide
  Arbitrary<SidrMessage> valid() {
    Arbitrary<byte[]> req = Arbitraries.bytes().array(byte[].class).ofMaxSize(
        SidrMessage.MAX_REQ_PRIVATE_DATA);
    Arbitrary<byte[]> rep = Arbitraries.bytes().array(byte[].class).ofMaxSize(
        SidrMessage.MAX_REP_PRIVATE_DATA);
    Arbitrary<Integer> ids = Arbitraries.integers();
    Arbitrary<SidrMessage> reqs = Combinators.combine(ids, req)
        .as((id, d) -> SidrMessage.req(id, Gid.of(GID), d));
    Arbitrary<SidrMessage> reps = Combinators.combine(ids, rep,
        Arbitraries.integers().between(2, 0xfffffe), Arbitraries.integers(),
        Arbitraries.integers().between(0, 5))
        .as((id, d, qpn, qkey, status) -> SidrMessage.rep(id, status, status == 0 ? qpn : 0,
            qkey, status == 0 ? Gid.of(GID) : null, d));
    return Arbitraries.oneOf(reqs, reps);
  }

  @Property(tries = 300)
  void validMessagesRoundTrip(@ForAll("valid") SidrMessage m) throws ProtocolException {
    byte[] b = m.encode();
    SidrMessage back = SidrMessage.parse(b, b.length);
    assertEquals(m.kind(), back.kind());
    assertEquals(m.requestId(), back.requestId());
    assertEquals(m.status(), back.status());
    assertEquals(m.qpn(), back.qpn());
    assertEquals(m.qkey(), back.qkey());
    assertArrayEquals(m.privateData(), back.privateData());
  }

  @Provide
  Arbitrary<byte[]> hostile() {
    Arbitrary<byte[]> noise = Arbitraries.bytes().array(byte[].class).ofMaxSize(400);
    Arbitrary<byte[]> mutated = Combinators.combine(valid(), Arbitraries.integers().between(0,
        250), Arbitraries.bytes(), Arbitraries.integers().between(-30, 30))
        .as((m, at, value, resize) -> {
          byte[] b = m.encode();
          b[at % b.length] = value;
          int n = Math.max(0, b.length + resize);
          byte[] out = new byte[n];
          System.arraycopy(b, 0, out, 0, Math.min(n, b.length));
          return out;
        });
    return Arbitraries.oneOf(noise, mutated, mutated);
  }

  @Property(tries = 2000)
  void hostileBytesGiveAMessageOrANamedProtocolError(@ForAll("hostile") byte[] b) {
    SidrMessage m;
    try {
      m = SidrMessage.parse(b, b.length);
    } catch (ProtocolException e) {
      assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), "a named error");
      return;
    } catch (RuntimeException e) {
      fail("parsing " + b.length + " hostile bytes threw " + e);
      return;
    }
    int max = m.kind() == SidrMessage.REQ ? SidrMessage.MAX_REQ_PRIVATE_DATA
        : SidrMessage.MAX_REP_PRIVATE_DATA;
    assertTrue(m.privateData().length <= max, "private data within the kind's limit");
    assertTrue(m.qpn() >= 0 && m.qpn() < 0xffffff, "a QPN of 24 bits, not the multicast one");
    assertArrayEquals(b, m.encode(), "what parsed encodes to the same bytes");
  }

  @org.junit.jupiter.api.Test
  void aRefusalNamingAQpBeyond24BitsIsRefused() {
    byte[] b = SidrMessage.rep(7, SidrMessage.REJECT, 0, 0, null, new byte[0]).encode();
    b[10] = 1; // the QPN's high byte: 0x01000000
    try {
      SidrMessage.parse(b, b.length);
      fail("a QPN of 25 bits parsed");
    } catch (ProtocolException e) {
      assertTrue(e.getMessage().contains("QP 0x1000000"), e.getMessage());
    }
  }

  @Property(tries = 200)
  void aLengthBeyondTheBufferIsRefused(@ForAll("valid") SidrMessage m) {
    byte[] b = m.encode();
    try {
      SidrMessage.parse(b, b.length + 1);
      fail("a length past the buffer parsed");
    } catch (ProtocolException e) {
      assertTrue(e.getMessage().contains("no SIDR message"), e.getMessage());
    }
  }
}

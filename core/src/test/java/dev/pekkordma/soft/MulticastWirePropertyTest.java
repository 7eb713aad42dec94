package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.WrOpcode;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * Multicast datagrams as anyone on the link may send them: valid ones parse back; any bytes,
 * and valid ones with a byte changed or cut short or lengthened, either parse into a datagram
 * whose every field is within the format's bounds (payload exactly what follows the header, at
 * most 4096 bytes; sane GIDs and QPN) or fail with a {@link MulticastWire.MulticastViolation}
 * naming what was wrong, never anything else.
 */
class MulticastWirePropertyTest {
  private static final byte[] MGID = Gid.parse("::ffff:239.77.1.1").toBytes();
  private static final byte[] SRC = Gid.parse("fe80::7f00:1:1234:1").toBytes();

  record Valid(long origin, int qpn, int qkey, boolean imm, int immediate, byte[] payload) {
    byte[] bytes() {
      byte[] b = new byte[MulticastWire.HEADER + payload.length];
      MulticastWire.writeHeader(b, origin, MGID, SRC, qpn, qkey,
          imm ? WrOpcode.SEND_WITH_IMM.code : WrOpcode.SEND.code, immediate, payload.length);
      System.arraycopy(payload, 0, b, MulticastWire.HEADER, payload.length);
      return b;
    }
  }

  @Provide
  Arbitrary<Valid> valid() {
    return Combinators.combine(Arbitraries.longs(), Arbitraries.integers().between(0, 0xfffffe),
        Arbitraries.integers(), Arbitraries.of(true, false), Arbitraries.integers(),
        Arbitraries.bytes().array(byte[].class).ofMaxSize(MulticastWire.MAX_PAYLOAD))
        .as(Valid::new);
  }

  @Property(tries = 300)
  void validDatagramsParse(@ForAll("valid") Valid v) throws MulticastWire.MulticastViolation {
    byte[] b = v.bytes();
    MulticastWire.ParsedDatagram d = new MulticastWire.ParsedDatagram();
    MulticastWire.parse(b, b.length, d);
    assertEquals(v.origin(), d.origin);
    assertEquals(v.qpn(), d.srcQpn);
    assertEquals(v.qkey(), d.qkey);
    assertEquals(v.immediate(), d.immediate);
    assertEquals(v.payload().length, d.length);
    assertArrayEquals(MGID, d.mgid);
    assertArrayEquals(SRC, d.srcGid);
  }

  @Provide
  Arbitrary<byte[]> hostile() {
    Arbitrary<byte[]> noise = Arbitraries.bytes().array(byte[].class).ofMaxSize(200);
    Arbitrary<byte[]> mutated = Combinators.combine(valid(), Arbitraries.integers().between(0,
        MulticastWire.HEADER + 8), Arbitraries.bytes(), Arbitraries.integers().between(-70, 70))
        .as((v, at, value, resize) -> {
          byte[] b = v.bytes();
          b[at % b.length] = value;
          int n = Math.max(0, b.length + resize);
          byte[] out = new byte[n];
          System.arraycopy(b, 0, out, 0, Math.min(n, b.length));
          return out;
        });
    return Arbitraries.oneOf(noise, mutated, mutated, mutated);
  }

  @Property(tries = 2000)
  void hostileBytesParseWithinBoundsOrFailNamed(@ForAll("hostile") byte[] b) {
    MulticastWire.ParsedDatagram d = new MulticastWire.ParsedDatagram();
    try {
      MulticastWire.parse(b, b.length, d);
    } catch (MulticastWire.MulticastViolation e) {
      assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), "a named violation");
      return;
    } catch (RuntimeException e) {
      fail("parsing " + b.length + " hostile bytes threw " + e);
      return;
    }
    assertEquals(b.length - MulticastWire.HEADER, d.length, "payload is exactly what follows");
    assertTrue(d.length <= MulticastWire.MAX_PAYLOAD, "payload within 4096 bytes");
    assertTrue(d.srcQpn >= 0 && d.srcQpn < 0xffffff, "a QP's number");
    assertTrue(MulticastWire.isMulticastGid(d.mgid, 0), "a multicast group GID");
    assertTrue(!MulticastWire.isMulticastGid(d.srcGid, 0), "a unicast source GID");
    assertTrue(d.opcode == WrOpcode.SEND.code || d.opcode == WrOpcode.SEND_WITH_IMM.code);
  }

  @Property(tries = 100)
  void aLengthPastTheBufferIsAViolation(@ForAll("valid") Valid v) {
    byte[] b = v.bytes();
    try {
      MulticastWire.parse(b, b.length + 1, new MulticastWire.ParsedDatagram());
      fail("a length past the buffer parsed");
    } catch (MulticastWire.MulticastViolation e) {
      assertTrue(e.getMessage().contains("no datagram"), e.getMessage());
    }
  }
}

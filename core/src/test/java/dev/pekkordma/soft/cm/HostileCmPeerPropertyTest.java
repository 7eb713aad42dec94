package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.AfterProperty;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * Generated conversations from a hostile peer: valid frames in any order, repeated, and frames
 * malformed every way the format allows (lengths out of range, wrong magic, unknown kinds,
 * fields out of range, too much private data, frames cut short inside, trailing bytes, garbage
 * in front), ending cleanly or in the middle of a frame. They go from a raw socket to a
 * listening id (whose application never answers, or accepts) and, from a fake server, to a
 * connecting id. A small model of the CM's states says what each conversation must give: the
 * events, and whether the connection is refused, which must then be logged once naming the
 * peer. After every try the id is gone, our threads are bounded, and after each property a
 * legitimate connection still completes on the same listener.
 */
class HostileCmPeerPropertyTest {
  private static final Duration WAIT = CmFixture.WAIT;
  private static final int MAX_CONNECTIONS = 16;
  private static final int EPROTO = -71;
  private static final int ECONNRESET = -104;
  private static RdmaProvider provider;
  private static CmEventChannel server;
  private static CmEventChannel client;
  private static CmId listener;
  private static LogCapture logs;
  private static int baselineThreads;

  @BeforeContainer
  static void start() {
    provider = CmFixture.newProvider("pekko-rdma.cm.connect-timeout = 3s\n"
        + "pekko-rdma.cm.max-connections = " + MAX_CONNECTIONS + "\n"
        + "pekko-rdma.cm.max-pending-handshakes = 4");
    server = provider.createCmEventChannel();
    client = provider.createCmEventChannel();
    listener = CmFixture.listener(server);
    logs = new LogCapture();
    baselineThreads = HostileCmPeerTest.threads();
  }

  @AfterContainer
  static void stop() {
    try {
      listener.close();
      server.close();
      client.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    } finally {
      logs.close();
      provider.close();
    }
  }

  /** After each property: the listener still serves a legitimate client, and nothing is left. */
  @AfterProperty
  void aLegitimateConnectionStillCompletes() {
    CmId c = CmFixture.resolved(client, listener.localAddress());
    c.connect(ConnectionParameters.withPrivateData("legit".getBytes(StandardCharsets.US_ASCII)));
    CmEvent request = next(server);
    assertEquals(CmEventType.CONNECT_REQUEST, request.type(), request.toString());
    request.id().accept(ConnectionParameters.defaults());
    assertEquals(CmEventType.ESTABLISHED, next(client).type());
    assertEquals(CmEventType.ESTABLISHED, next(server).type());
    c.disconnect();
    assertEquals(CmEventType.DISCONNECTED, next(client).type());
    assertEquals(CmEventType.DISCONNECTED, next(server).type());
    request.id().close();
    c.close();
    assertEquals(1, provider.liveResources().cmIds(), "only the listener is left");
  }

  // ---- the properties

  @Property(tries = 250)
  void aListenerWhoseApplicationNeverAnswers(@ForAll("toAListener") Conversation talk)
      throws IOException {
    int mark = logs.mark();
    try (Socket s = HostileCmPeerTest.raw(listener)) {
      Expected expected = Model.run(St.PRE_REQ, talk, true);
      talk.sendAndEnd(s);
      HostileCmPeerTest.awaitClosedByPeer(s);
      checkEventsAndLog(server, expected, s, null, mark);
    }
  }

  @Property(tries = 250)
  void aListenerWhoseApplicationAccepts(@ForAll("toAnAcceptedRequest") Conversation talk)
      throws IOException {
    int mark = logs.mark();
    try (Socket s = HostileCmPeerTest.raw(listener)) {
      HostileCmPeerTest.send(s, Frames.validReq());
      CmEvent request = next(server);
      assertEquals(CmEventType.CONNECT_REQUEST, request.type(), request.toString());
      request.id().accept(ConnectionParameters.defaults());
      assertEquals(Frames.REP, Frames.readKind(s.getInputStream()));
      Expected expected = Model.run(St.ACCEPTING, talk, true);
      talk.sendAndEnd(s);
      HostileCmPeerTest.awaitClosedByPeer(s);
      checkEventsAndLog(server, expected, s, request.id(), mark);
    }
  }

  @Property(tries = 250)
  void aConnectingIdFacingAHostileServer(@ForAll("toAConnectingId") Conversation talk)
      throws IOException {
    int mark = logs.mark();
    try (HostileCmPeerTest.FakeServer fake = new HostileCmPeerTest.FakeServer()) {
      CmId c = CmFixture.resolved(client, fake.address());
      c.connect(ConnectionParameters.defaults());
      try (Socket s = fake.acceptRequest()) {
        Expected expected = Model.run(St.CONNECTING, talk, false);
        talk.sendAndEnd(s);
        HostileCmPeerTest.awaitClosedByPeer(s);
        checkEventsAndLog(client, expected, null, c, mark);
        List<String> lines = logs.naming(fake.peer(), mark);
        assertEquals(expected.refused ? 1 : 0, lines.size(), "warnings naming the server "
            + fake.peer() + " for " + talk + ": " + lines);
      }
    }
  }

  /**
   * The events the model expects, in order, on the connection's id; the refusal warnings naming
   * the raw peer {@code s} (when given); then the id is destroyed and the threads counted.
   */
  private void checkEventsAndLog(CmEventChannel channel, Expected expected, Socket s, CmId id,
      int mark) {
    List<CmId> made = new ArrayList<>();
    if (id != null) made.add(id);
    try {
      for (Ev want : expected.events) {
        CmEvent got = next(channel);
        if (!made.contains(got.id())) made.add(got.id());
        assertEquals(want.type, got.type(), "events expected " + expected.events + ", got "
            + got);
        assertSame(made.get(0), got.id(), "an event of another id: " + got);
        if (want.status != null) assertEquals(want.status, got.status(), got.toString());
        if (want.data != null) assertArrayEquals(want.data, got.privateData(), got.toString());
      }
      CmEvent extra = channel.awaitEvent(Duration.ZERO);
      while (extra != null && extra.type() == CmEventType.TIMEWAIT_EXIT) {
        extra = channel.awaitEvent(Duration.ZERO);
      }
      if (extra != null && !made.contains(extra.id())) made.add(extra.id());
      assertNull(extra, "no more events than " + expected.events);
      if (s != null) {
        List<String> lines = logs.naming(HostileCmPeerTest.peerOf(s), mark);
        assertEquals(expected.refused ? 1 : 0, lines.size(),
            "warnings naming " + HostileCmPeerTest.peerOf(s) + ": " + lines);
      }
    } finally {
      // a failed try leaves nothing behind to fail the next one for an unrelated reason
      for (CmId made1 : made) made1.close();
    }
    assertEquals(1, provider.liveResources().cmIds(), "only the listener is left");
    int threads = HostileCmPeerTest.threads();
    assertTrue(threads <= baselineThreads + MAX_CONNECTIONS + 8,
        "threads went from " + baselineThreads + " to " + threads);
  }

  private static CmEvent next(CmEventChannel channel) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      CmEvent e = channel.awaitEvent(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
      assertNotNull(e, "no event within " + WAIT);
      if (e.type() != CmEventType.TIMEWAIT_EXIT) return e;
    }
  }

  // ---- what the peer sends

  /** One frame as sent; {@code kind} is the valid frame's kind, 0 for a malformed one. */
  record Frame(byte[] bytes, int kind, byte[] data, int reason, String label) {
    @Override
    public String toString() {
      return label;
    }
  }

  /** Frames, then the end: a clean close, or a frame cut short (then a close). */
  record Conversation(List<Frame> frames, byte[] cutShort) {
    void sendAndEnd(Socket s) {
      try {
        OutputStream out = s.getOutputStream();
        for (Frame f : frames) out.write(f.bytes);
        out.write(cutShort);
        out.flush();
        s.shutdownOutput();
      } catch (IOException e) {
        // refused before all of it went: the model knows where it stopped counting
      }
    }

    @Override
    public String toString() {
      return frames + (cutShort.length > 0 ? " + " + cutShort.length + " bytes of a frame" : "")
          + ", end";
    }
  }

  @Provide
  Arbitrary<Conversation> toAListener() {
    return conversation(Arbitraries.oneOf(Arbitraries.just(List.of()),
        valid(Frames.REQ).map(List::of)));
  }

  @Provide
  Arbitrary<Conversation> toAnAcceptedRequest() {
    Frame rtu = bare(Frames.RTU);
    Frame dreq = bare(Frames.DREQ);
    return conversation(Arbitraries.of(List.of(), List.of(rtu), List.of(rtu, dreq),
        List.of(rtu, dreq, dreq)));
  }

  @Provide
  Arbitrary<Conversation> toAConnectingId() {
    Frame dreq = bare(Frames.DREQ);
    return conversation(Arbitraries.oneOf(Arbitraries.just(List.of()),
        valid(Frames.REP).map(List::of), valid(Frames.REP).map(rep -> List.of(rep, dreq)),
        valid(Frames.REP).map(rep -> List.of(rep, dreq, dreq))));
  }

  /** A prefix that goes somewhere, then anything, then an end. */
  private static Arbitrary<Conversation> conversation(Arbitrary<List<Frame>> prefix) {
    Arbitrary<Frame> any = Arbitraries.frequencyOf(
        Tuple.of(3, anyValid()), Tuple.of(2, malformed()));
    Arbitrary<List<Frame>> rest = Arbitraries.oneOf(any.list().ofMaxSize(3),
        any.map(f -> List.of(f, f, f))); // replayed
    Arbitrary<byte[]> end = Arbitraries.oneOf(Arbitraries.just(new byte[0]), cutShort());
    return Combinators.combine(prefix, rest, end).as((p, r, e) -> {
      List<Frame> all = new ArrayList<>(p);
      all.addAll(r);
      return new Conversation(all, e);
    });
  }

  private static Arbitrary<Integer> ints(int min, int max) {
    return Arbitraries.integers().between(min, max);
  }

  private static Arbitrary<byte[]> data(int min, int max) {
    return Arbitraries.bytes().array(byte[].class).ofMinSize(min).ofMaxSize(max);
  }

  private static Frame bare(int kind) {
    return new Frame(Frames.bare(kind), kind, null, 0, name(kind));
  }

  private static String name(int kind) {
    return kind >= 1 && kind <= 6
        ? List.of("REQ", "REP", "RTU", "REJ", "DREQ", "DREP").get(kind - 1) : "kind " + kind;
  }

  private static Arbitrary<Frame> valid(int kind) {
    switch (kind) {
      case Frames.REQ:
      case Frames.REP:
        return Combinators.combine(ints(0, 0xffffff), ints(0, 0xffffff), ints(1, 5),
            ints(0, 7), ints(0, 7),
            data(0, kind == Frames.REQ ? Frames.MAX_REQ_DATA : Frames.MAX_REP_DATA))
            .as((qpn, psn, mtu, retry, rnr, d) -> new Frame(
                Frames.connect(kind, qpn, psn, mtu, retry, rnr, d), kind, d, 0,
                name(kind) + "(" + d.length + " bytes)"));
      case Frames.REJ:
        return Combinators.combine(ints(0, 0xffff), data(0, Frames.MAX_REJ_DATA))
            .as((reason, d) -> new Frame(Frames.rej(reason, d), kind, d, reason,
                "REJ(" + reason + ", " + d.length + " bytes)"));
      default:
        return Arbitraries.just(bare(kind));
    }
  }

  private static Arbitrary<Frame> anyValid() {
    return Arbitraries.oneOf(valid(Frames.REQ), valid(Frames.REP), valid(Frames.RTU),
        valid(Frames.REJ), valid(Frames.DREQ), valid(Frames.DREP));
  }

  private static Arbitrary<Frame> malformed() {
    Arbitrary<Frame> anyFrame = anyValid();
    Arbitrary<Frame> badLength = Combinators.combine(
        Arbitraries.oneOf(Arbitraries.integers().between(Integer.MIN_VALUE, 4),
            Arbitraries.integers().between(513, Integer.MAX_VALUE)), data(0, 16))
        .as((n, rest) -> new Frame(Frames.withLength(n, rest), 0, null, 0, "length " + n));
    Arbitrary<Frame> badMagic = Combinators.combine(anyFrame,
        Arbitraries.integers().filter(m -> m != Frames.MAGIC))
        .as((f, m) -> {
          byte[] b = f.bytes.clone();
          b[4] = (byte) (m >>> 24);
          b[5] = (byte) (m >>> 16);
          b[6] = (byte) (m >>> 8);
          b[7] = (byte) (int) m;
          return new Frame(b, 0, null, 0, f.label + " with magic " + Integer.toHexString(m));
        });
    Arbitrary<Frame> unknownKind = Combinators.combine(
        Arbitraries.oneOf(Arbitraries.just(0), ints(7, 255)), data(0, 20))
        .as((k, body) -> new Frame(Frames.frame(Frames.MAGIC, k, d -> d.write(body)), 0, null,
            0, "kind " + k));
    Arbitrary<Frame> fieldOutOfRange = Combinators.combine(Arbitraries.of(Frames.REQ, Frames.REP),
        ints(0, 4), Arbitraries.integers())
        .as((kind, which, v) -> {
          int qpn = 1, psn = 1, mtu = 5, retry = 7, rnr = 7;
          switch (which) {
            case 0: qpn = v >= 0 && v <= 0xffffff ? v | 0x1000000 : v; break;
            case 1: psn = v >= 0 && v <= 0xffffff ? v | 0x1000000 : v; break;
            case 2: mtu = v >= 1 && v <= 5 ? 0 : v & 0xff; break;
            case 3: retry = 8 + (v & 0x7f); break;
            default: rnr = 8 + (v & 0x7f); break;
          }
          if (which == 2 && mtu >= 1 && mtu <= 5) mtu = 6;
          return new Frame(Frames.connect(kind, qpn, psn, mtu, retry, rnr, new byte[0]), 0, null,
              0, name(kind) + " with field " + which + " out of range");
        });
    Arbitrary<Frame> tooMuchData = Arbitraries.of(Frames.REQ, Frames.REP, Frames.REJ)
        .flatMap(kind -> {
          int max = kind == Frames.REQ ? Frames.MAX_REQ_DATA
              : kind == Frames.REP ? Frames.MAX_REP_DATA : Frames.MAX_REJ_DATA;
          return data(max + 1, 255).map(d -> new Frame(kind == Frames.REJ ? Frames.rej(1, d)
              : Frames.connect(kind, 1, 1, 5, 7, 7, d), 0, null, 0,
              name(kind) + " with " + d.length + " bytes of private data"));
        });
    Arbitrary<Frame> cutInside = Combinators.combine(
        Arbitraries.oneOf(valid(Frames.REQ), valid(Frames.REP), valid(Frames.REJ)),
        ints(1, 1000))
        .as((f, n) -> {
          int content = f.bytes.length - 4;
          int cut = 1 + n % (content - 5 - 1 + 1); // keep magic and kind
          byte[] inner = Arrays.copyOfRange(f.bytes, 4, f.bytes.length - cut);
          return new Frame(Frames.withLength(inner.length, inner), 0, null, 0,
              f.label + " cut " + cut + " bytes short inside its length");
        });
    Arbitrary<Frame> trailing = Combinators.combine(anyFrame, data(1, 8))
        .as((f, extra) -> {
          byte[] inner = Frames.concat(Arrays.copyOfRange(f.bytes, 4, f.bytes.length), extra);
          return new Frame(Frames.withLength(inner.length, inner), 0, null, 0,
              f.label + " + " + extra.length + " bytes inside its length");
        });
    Arbitrary<Frame> garbageFirst = Combinators.combine(ints(1, 255), data(0, 7), anyFrame)
        .as((first, more, f) -> new Frame(Frames.concat(new byte[] {(byte) (int) first}, more,
            f.bytes), 0, null, 0, (1 + more.length) + " bytes of garbage, then " + f.label));
    return Arbitraries.oneOf(badLength, badMagic, unknownKind, fieldOutOfRange, tooMuchData,
        cutInside, trailing, garbageFirst);
  }

  /** The first bytes of a valid frame: the peer stops mid-frame. */
  private static Arbitrary<byte[]> cutShort() {
    return Combinators.combine(anyValid(), ints(1, 1000))
        .as((f, n) -> Arrays.copyOf(f.bytes, 1 + n % (f.bytes.length - 1)));
  }

  // ---- what the CM must make of it

  enum St { PRE_REQ, CONNECT_REQUEST, CONNECTING, ACCEPTING, ESTABLISHED, DISCONNECTED, OVER }

  /** An event expected: its type, and its status and private data where they are known. */
  record Ev(CmEventType type, Integer status, byte[] data) {
    @Override
    public String toString() {
      return type + (status != null ? "(" + status + ")" : "");
    }
  }

  record Expected(List<Ev> events, boolean refused) {}

  /**
   * The soft CM's states as the IB CM defines them, for a peer that only talks. The conversation
   * rides a link: once it is over, a {@code passive} side (a listener's link) still reads the
   * link, where a frame for the ended conversation is dropped and anything else (a malformed
   * frame, a REQ reusing its number) is refused; the active side closes its link and reads no
   * more.
   */
  static final class Model {
    private Model() {}

    static Expected run(St start, Conversation talk, boolean passive) {
      List<Ev> events = new ArrayList<>();
      boolean refused = false;
      boolean answeredLateDreq = false;
      boolean linkEnded = false;
      St st = start;
      for (Frame f : talk.frames) {
        if (linkEnded) break;
        int k = f.kind;
        if (st == St.OVER) {
          if (!passive) break;
          if (k == 0 || k == Frames.REQ) {
            refused = true;
            linkEnded = true;
          }
          continue;
        }
        switch (st) {
          case PRE_REQ:
            if (k == Frames.REQ) {
              events.add(new Ev(CmEventType.CONNECT_REQUEST, 0, f.data));
              st = St.CONNECT_REQUEST;
            } else {
              refused = true;
              linkEnded = true;
              st = St.OVER;
            }
            break;
          case CONNECT_REQUEST:
          case ACCEPTING:
          case CONNECTING:
            boolean next = st == St.ACCEPTING ? k == Frames.RTU
                : st == St.CONNECTING && k == Frames.REP;
            if (next) {
              events.add(new Ev(CmEventType.ESTABLISHED, null,
                  st == St.CONNECTING ? f.data : new byte[0]));
              st = St.ESTABLISHED;
            } else if (k == Frames.REJ) {
              events.add(new Ev(CmEventType.REJECTED, f.reason, f.data));
              st = St.OVER;
            } else {
              refused = true;
              linkEnded = true;
              events.add(new Ev(CmEventType.CONNECT_ERROR, EPROTO, null));
              st = St.OVER;
            }
            break;
          case ESTABLISHED:
            events.add(new Ev(CmEventType.DISCONNECTED, 0, null));
            if (k == Frames.DREQ) {
              st = St.DISCONNECTED;
            } else {
              refused = true;
              linkEnded = true;
              st = St.OVER;
            }
            break;
          case DISCONNECTED:
            if (k == Frames.DREQ && !answeredLateDreq) {
              answeredLateDreq = true;
            } else {
              refused = k != Frames.DREP;
              linkEnded = refused;
              st = St.OVER;
            }
            break;
          default:
            break;
        }
      }
      switch (st) { // then the peer's end of the connection
        case PRE_REQ:
          refused = true;
          break;
        case CONNECT_REQUEST:
        case ACCEPTING:
        case CONNECTING:
          events.add(new Ev(CmEventType.CONNECT_ERROR, ECONNRESET, null));
          break;
        case ESTABLISHED:
          events.add(new Ev(CmEventType.DISCONNECTED, 0, null));
          break;
        default:
          break;
      }
      return new Expected(events, refused);
    }
  }
}

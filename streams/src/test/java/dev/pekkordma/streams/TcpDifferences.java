package dev.pekkordma.streams;

import dev.pekkordma.streams.EndProbe.How;
import dev.pekkordma.streams.LifecycleScript.Action;
import dev.pekkordma.streams.LifecycleScript.Seen;
import dev.pekkordma.streams.LifecycleScript.Side;
import dev.pekkordma.streams.LifecycleScript.SideSeen;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import org.apache.pekko.util.ByteString;

/**
 * The differences docs/streams.md lists ("Where RDMA differs from Tcp"), one {@link Row} each,
 * and the comparison of one script's run on Tcp with its run on RDMA: per side, the bytes its
 * application read (concatenated: Tcp keeps no message boundaries) and how its writing and
 * reading sides ended, and the client's connection. What differs must be one of the rows.
 */
final class TcpDifferences {
  private TcpDifferences() {}

  /** The table's rows (message boundaries aside: the bytes are compared concatenated). */
  enum Row {
    /**
     * A write the peer's application can never take (its reading had ended, and it read less
     * than was written) fails RDMA's writing side, naming why, where Tcp's vanished or reset
     * the connection.
     */
    WRITE_NOBODY_TAKES,
    /**
     * ... and that side's reading runs on to the peer's end, where Tcp's reset failed it or
     * the application's own end of writing (which RDMA's connection no longer hears) closed it:
     * each read a prefix of what the other did; and the peer's writing, which Tcp's close or
     * reset failed, goes on, all of it read.
     */
    READING_RUNS_ON,
    /**
     * ... and what the application then does with the failed upstream is its own: one that
     * carries the failure to its reading side (an echo) aborts the connection, which the other
     * side sees; one that fails the upstream RDMA cancelled already aborts nothing there.
     */
    APPLICATION_AFTER_THE_FAILURE,
    /**
     * A peer's abort fails RDMA's ends still open at once; Tcp's hear of it when they next read
     * or write, and may end as their application ends them meanwhile.
     */
    ABORT_HEARD_AT_ONCE,
    /**
     * Tcp's close without half-close of a connection holding data its application never asked
     * for leaves that application's reading side open; RDMA's completes it.
     */
    CLOSE_WITH_DATA_UNREAD,
    /**
     * After any abort (an upstream or a reading side failed, the idle timeout) what was on its
     * way may arrive or not, on either transport: each side read a prefix of what the other
     * transport's did. (Timing, not a difference of the transports'.)
     */
    IN_FLIGHT_AT_AN_ABORT
  }

  /** What differs that no row explains (empty: the runs agree), and the rows that explained. */
  record Result(List<String> unexplained, Set<Row> rows) {}

  static Result compare(LifecycleScript script, Seen tcp, Seen rdma) {
    List<String> d = new ArrayList<>();
    Set<Row> rows = EnumSet.noneOf(Row.class);
    if (!tcp.connection().equals(rdma.connection())) {
      d.add("the client's connection: Tcp " + tcp.connection() + ", RDMA " + rdma.connection());
    }
    boolean anyAbort = script.idleTimeout() || rdma.client().carriedLoudFailure()
        || rdma.server().carriedLoudFailure() || script.steps().stream().anyMatch(s ->
            s.action() == Action.FAIL || s.action() == Action.FAIL_READING);
    for (Side side : Side.values()) {
      Side other = side == Side.CLIENT ? Side.SERVER : Side.CLIENT;
      SideSeen t = tcp.side(side);
      SideSeen r = rdma.side(side);
      SideSeen peer = rdma.side(other);
      String who = side.name().toLowerCase();
      boolean nobodyTakes = nobodyTakes(r, peer);
      boolean afterPeersFailure = peer.carriedLoudFailure() || (nobodyTakes(peer, r)
          && script.steps().stream().anyMatch(s -> s.side() == other && s.action() == Action.FAIL));
      boolean peerAborts = aborts(script, other);

      if (failed(t.writing()) != failed(r.writing())) {
        if (nobodyTakes) {
          rows.add(Row.WRITE_NOBODY_TAKES);
        } else if (afterPeersFailure) {
          rows.add(Row.APPLICATION_AFTER_THE_FAILURE);
        } else if (heardAtOnce(peerAborts, t.writing(), r.writing())) {
          rows.add(Row.ABORT_HEARD_AT_ONCE);
        } else if (readOnByThePeer(r, peer, t)) {
          rows.add(Row.READING_RUNS_ON);
        } else {
          d.add(who + "'s writing side: Tcp " + t.writing() + ", RDMA " + r.writing()
              + (r.writingCause() == null ? "" : " (" + r.writingCause() + ")"));
        }
      }

      boolean readsOn = nobodyTakes && (prefix(t.read(), r.read()) || prefix(r.read(), t.read()));
      if (failed(t.reading()) != failed(r.reading())) {
        if (readsOn) {
          rows.add(Row.READING_RUNS_ON);
        } else if (afterPeersFailure || r.carriedLoudFailure()) {
          rows.add(Row.APPLICATION_AFTER_THE_FAILURE);
        } else if (heardAtOnce(peerAborts, t.reading(), r.reading())) {
          rows.add(Row.ABORT_HEARD_AT_ONCE);
        } else if (closedUnread(script, side, t, r, tcp.side(other))) {
          rows.add(Row.CLOSE_WITH_DATA_UNREAD);
        } else {
          d.add(who + "'s reading side: Tcp " + t.reading() + ", RDMA " + r.reading());
        }
      }

      if (!t.read().equals(r.read())) {
        if (readsOn) {
          rows.add(Row.READING_RUNS_ON);
        } else if (anyAbort && (prefix(t.read(), r.read()) || prefix(r.read(), t.read()))) {
          rows.add(Row.IN_FLIGHT_AT_AN_ABORT);
        } else {
          d.add(who + " read " + t.read().size() + " bytes on Tcp, " + r.read().size()
              + " on RDMA");
        }
      }
    }
    return new Result(d, rows);
  }

  /**
   * Whether {@code side}'s writing failed on RDMA for a write nobody takes, and rightly: it wrote
   * more than its {@code peer}'s application read, and the peer's reading had ended.
   */
  private static boolean nobodyTakes(SideSeen side, SideSeen peer) {
    return side.written().size() > peer.read().size() && peer.reading() != How.OPEN
        && side.writing() == How.CANCELLED_WITH_FAILURE && loud(side.writingCause());
  }

  /**
   * Whether {@code side}'s writing went on on RDMA, where Tcp's failed, because its {@code peer}
   * reads on: the peer's own write was one nobody takes, so the peer's connection no longer
   * closed when its application ended its writing (Tcp's close or reset failed this side's
   * writes); and the peer read everything this side wrote.
   */
  private static boolean readOnByThePeer(SideSeen side, SideSeen peer, SideSeen tcp) {
    return nobodyTakes(peer, side) && failed(tcp.writing()) == How.FAILED
        && failed(side.writing()) != How.FAILED && peer.read().equals(side.written());
  }

  /** A write-nobody-takes failure's cause, as the streams say it. */
  static boolean loud(String cause) {
    return cause != null && (cause.contains("the peer stopped reading")
        || cause.contains("the peer closed the connection"));
  }

  /** An end RDMA failed when the peer aborted, where Tcp's had not heard of it (yet). */
  private static boolean heardAtOnce(boolean peerAborts, How tcp, How rdma) {
    return peerAborts && failed(tcp) != How.FAILED && failed(rdma) == How.FAILED;
  }

  /**
   * Whether {@code side} (without half-close) closed with data its application never asked
   * for: its writing completed on both, RDMA's reading completed and Tcp's did not, and Tcp's
   * peer wrote more than Tcp's side read.
   */
  private static boolean closedUnread(LifecycleScript script, Side side, SideSeen t, SideSeen r,
      SideSeen tcpPeer) {
    boolean halfClose = side == Side.CLIENT ? script.clientHalfClose() : script.serverHalfClose();
    return !halfClose && t.writing() == How.COMPLETED && r.writing() == How.COMPLETED
        && r.reading() == How.COMPLETED && t.reading() != How.COMPLETED
        && tcpPeer.written().size() > t.read().size();
  }

  /** Whether the script aborts {@code side}: fails its upstream or its reading, or idles. */
  private static boolean aborts(LifecycleScript script, Side side) {
    return script.idleTimeout() || script.steps().stream().anyMatch(s -> s.side() == side
        && (s.action() == Action.FAIL || s.action() == Action.FAIL_READING));
  }

  /** Whether {@code a} is where {@code b} begins. */
  private static boolean prefix(ByteString a, ByteString b) {
    return a.size() <= b.size() && b.take(a.size()).equals(a);
  }

  /**
   * An end as the comparison sees it: failed, whether its stream failed there or was cancelled
   * with a failure. (A connection that fails fails its inlet and outlet at once, and an echo
   * carries each to the other: which reaches a probe first is Pekko's ordering, not the
   * transport's.)
   */
  private static How failed(How how) {
    return how == How.CANCELLED_WITH_FAILURE ? How.FAILED : how;
  }
}

package dev.pekkordma.actors.datagram;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.UdParameters;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The peers an endpoint is resolving: per address, a UDP id that resolves the address and the
 * route, then makes the SIDR request, whose answer (ESTABLISHED) names the peer's QP and Q_Key
 * and the address vector to it. The sends waiting for a peer wait here.
 */
final class Resolutions {
  /** A resolved peer, or why not. */
  record Outcome(InetSocketAddress to, UdParameters ud, String failure,
      List<SendPath.Pending> waiting) {}

  private static final class Resolution {
    final InetSocketAddress to;
    final CmId id;
    final List<SendPath.Pending> waiting = new ArrayList<>();

    Resolution(InetSocketAddress to, CmId id) {
      this.to = to;
      this.id = id;
    }
  }

  private final UdpIds ids;
  private final Consumer<CmEvent> events;
  private final Consumer<RuntimeException> stopped;
  private final Duration timeout;
  private final InetSocketAddress source;
  private final byte[] hello;
  private final Map<InetSocketAddress, Resolution> byAddress = new HashMap<>();
  private final Map<CmId, Resolution> byId = new IdentityHashMap<>();
  private int waiting;

  Resolutions(UdpIds ids, Consumer<CmEvent> events, Consumer<RuntimeException> stopped,
      Duration timeout, InetSocketAddress source, byte[] hello) {
    this.ids = ids;
    this.events = events;
    this.stopped = stopped;
    this.timeout = timeout;
    this.source = source;
    this.hello = hello;
  }

  int waiting() {
    return waiting;
  }

  boolean owns(CmId id) {
    return byId.containsKey(id);
  }

  /**
   * Queues {@code p} for {@code to}, starting its resolution if none runs: the id of a new one,
   * for its timeout; else null. A resolution that cannot start fails at once.
   */
  CmId await(InetSocketAddress to, SendPath.Pending p) {
    Resolution r = byAddress.get(to);
    CmId started = null;
    if (r == null) {
      CmId id;
      try {
        id = ids.create("datagram peer " + to, events, stopped);
      } catch (RuntimeException e) {
        SendPath.answer(p, failure(to, "no CM id: " + e.getMessage()));
        return null;
      }
      r = new Resolution(to, id);
      try {
        id.resolveAddress(source, to, timeout);
      } catch (RuntimeException e) {
        ids.destroy(id, false);
        SendPath.answer(p, failure(to, e.getMessage()));
        return null;
      }
      byAddress.put(to, r);
      byId.put(id, r);
      started = id;
    }
    r.waiting.add(p);
    waiting++;
    return started;
  }

  /** An event of a resolving id: the next step, or the outcome (its id destroyed). */
  Outcome onEvent(CmEvent e) {
    Resolution r = byId.get(e.id());
    if (r == null) return null;
    try {
      switch (e.type()) {
        case ADDR_RESOLVED:
          r.id.resolveRoute(timeout);
          return null;
        case ROUTE_RESOLVED:
          r.id.connect(ConnectionParameters.withPrivateData(hello));
          return null;
        case ESTABLISHED:
          if (e.ud() == null || e.ud().addressVector() == null) {
            return end(r, null, "the SIDR answer carried no address vector");
          }
          return end(r, e.ud(), null);
        default:
          return end(r, null, why(e));
      }
    } catch (RuntimeException x) {
      return end(r, null, x.getMessage());
    }
  }

  /** The resolution the id started has not ended within the timeout. */
  Outcome timedOut(CmId id, String setting) {
    Resolution r = byId.get(id);
    if (r == null) return null;
    return end(r, null, "no answer within " + timeout.toMillis() + " ms (" + setting + ")");
  }

  private Outcome end(Resolution r, UdParameters ud, String failure) {
    byAddress.remove(r.to);
    byId.remove(r.id);
    waiting -= r.waiting.size();
    ids.destroy(r.id, false);
    return new Outcome(r.to, ud, failure == null ? null : failure(r.to, failure), r.waiting);
  }

  /** Ends every resolution: their sends are answered with {@code reason}. */
  void closeAll(String reason) {
    for (Resolution r : new ArrayList<>(byId.values())) {
      for (SendPath.Pending p : end(r, null, reason).waiting()) SendPath.answer(p, reason);
    }
  }

  static String failure(InetSocketAddress to, String why) {
    return "cannot resolve datagram peer " + format(to) + ": " + why;
  }

  /** host:port, for messages; an unresolved address by its name. */
  static String format(InetSocketAddress a) {
    String host = a.getAddress() != null ? a.getAddress().getHostAddress() : a.getHostString();
    return host + ":" + a.getPort();
  }

  private static String why(CmEvent e) {
    return switch (e.type()) {
      case ADDR_ERROR -> "its address did not resolve (ADDR_ERROR, status " + e.status() + ")";
      case ROUTE_ERROR -> "no route to it (ROUTE_ERROR, status " + e.status() + ")";
      case REJECTED -> e.status() == CmEvent.REJECT_NO_LISTENER
          ? "no datagram endpoint listens there (REJECTED: no listener)"
          : "it refused the SIDR request (REJECTED, status " + e.status() + ")";
      case UNREACHABLE -> e.status() == CmEvent.SIDR_UNSUPPORTED
          ? "no datagram endpoint listens there (UNREACHABLE: SIDR status unsupported)"
          : e.status() == CmEvent.SIDR_REJECT
          ? "it rejected the SIDR request (UNREACHABLE: SIDR status reject)"
          : "no answer to the SIDR request (UNREACHABLE, status " + e.status() + ")";
      case DEVICE_REMOVAL -> "the device was removed (DEVICE_REMOVAL)";
      default -> "the SIDR exchange failed (" + e.type() + ", status " + e.status() + ")";
    };
  }
}

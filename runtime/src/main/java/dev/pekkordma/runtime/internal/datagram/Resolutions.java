package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.verbs.DeviceContext;
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
 * and the address vector to it. What waits for a peer ({@code W}: an actor's sends; nothing for
 * a stage, which holds its one datagram itself) waits here, so the caller bounds it with
 * {@link #waiting}. Not thread-safe: the owner's thread (an actor, a stage's callbacks) calls it,
 * handing it the events and timeouts of the ids it started.
 */
@InternalApi
public final class Resolutions<W> {
  /**
   * A resolved peer ({@code ud}; the device, port and local address the id resolved it from),
   * or why not ({@code failure}); {@code id} is destroyed by now (it names the resolution's
   * timer); {@code waiting} is what waited for it.
   */
  public record Resolved<W>(CmId id, InetSocketAddress to, UdParameters ud, DeviceContext device,
      int port, InetSocketAddress local, String failure, List<W> waiting) {}

  private static final class Resolution<W> {
    final InetSocketAddress to;
    final CmId id;
    final List<W> waiting = new ArrayList<>();

    Resolution(InetSocketAddress to, CmId id) {
      this.to = to;
      this.id = id;
    }
  }

  private final CmDispatcher cm;
  private final Consumer<CmEvent> events;
  private final Consumer<RuntimeException> stopped;
  private final Duration timeout;
  private InetSocketAddress source;
  private byte[] hello = new byte[0];
  private final Map<InetSocketAddress, Resolution<W>> byAddress = new HashMap<>();
  private final Map<CmId, Resolution<W>> byId = new IdentityHashMap<>();
  private int waiting;

  /** Resolutions whose ids' events go to {@code events}, each ending within {@code timeout}. */
  public Resolutions(CmDispatcher cm, Consumer<CmEvent> events,
      Consumer<RuntimeException> stopped, Duration timeout) {
    this.cm = cm;
    this.events = events;
    this.stopped = stopped;
    this.timeout = timeout;
  }

  /** Where requests come from and what they say of us, once known. */
  public void from(InetSocketAddress source, byte[] hello) {
    this.source = source;
    this.hello = hello;
  }

  /** What waits for a peer, over all resolutions. */
  public int waiting() {
    return waiting;
  }

  public boolean owns(CmId id) {
    return byId.containsKey(id);
  }

  /**
   * Queues {@code waiter} (nothing when null) for {@code to}, starting its resolution if none
   * runs: the id of a new one, for its timeout; else null. A resolution that cannot start
   * throws, queuing nothing.
   */
  public CmId await(InetSocketAddress to, W waiter) {
    Resolution<W> r = byAddress.get(to);
    CmId started = null;
    if (r == null) {
      CmId id;
      try {
        id = cm.createId("datagram peer " + to, RdmaPortSpace.UDP, events, stopped);
      } catch (RuntimeException e) {
        throw new IllegalStateException("no CM id: " + e.getMessage(), e);
      }
      try {
        id.resolveAddress(source, to, timeout);
      } catch (RuntimeException e) {
        cm.destroy(id, false);
        throw e;
      }
      r = new Resolution<>(to, id);
      byAddress.put(to, r);
      byId.put(id, r);
      started = id;
    }
    if (waiter != null) {
      r.waiting.add(waiter);
      waiting++;
    }
    return started;
  }

  /** An event of a resolving id: the next step, or the outcome (its id destroyed). */
  public Resolved<W> onEvent(CmEvent e) {
    Resolution<W> r = byId.get(e.id());
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

  /** The resolution the id started has not ended within the timeout, set by {@code setting}. */
  public Resolved<W> timedOut(CmId id, String setting) {
    Resolution<W> r = byId.get(id);
    if (r == null) return null;
    return end(r, null, "no answer within " + timeout.toMillis() + " ms (" + setting + ")");
  }

  private Resolved<W> end(Resolution<W> r, UdParameters ud, String failure) {
    byAddress.remove(r.to);
    byId.remove(r.id);
    waiting -= r.waiting.size();
    Resolved<W> o = new Resolved<>(r.id, r.to, ud, r.id.verbs(), r.id.portNum(),
        r.id.localAddress(), failure, r.waiting);
    cm.destroy(r.id, false);
    return o;
  }

  /** Ends every resolution, destroying its id: what waited, for the caller to answer. */
  public List<W> closeAll() {
    List<W> all = new ArrayList<>();
    for (Resolution<W> r : new ArrayList<>(byId.values())) all.addAll(end(r, null, null).waiting);
    return all;
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

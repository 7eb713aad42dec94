package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.UdParameters;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The peers a stage is resolving: per address, a UDP id that resolves the address and the
 * route, then makes the SIDR request, whose answer (ESTABLISHED) names the peer's QP and Q_Key
 * and the address vector to it. The id goes with the outcome.
 */
final class Resolutions {
  /**
   * A resolved peer ({@code ud}; the device, port and local address the id resolved it from),
   * or why not; {@code id} is destroyed by now (it names the resolution's timer).
   */
  record Outcome(CmId id, InetSocketAddress to, UdParameters ud,
      dev.pekkordma.verbs.DeviceContext device, int port, InetSocketAddress local,
      String failure) {}

  private final UdpIds ids;
  private final Consumer<CmEvent> events;
  private final Consumer<RuntimeException> stopped;
  private final Duration timeout;
  private InetSocketAddress source;
  private byte[] hello;
  private final Map<InetSocketAddress, CmId> byAddress = new HashMap<>();
  private final Map<CmId, InetSocketAddress> byId = new IdentityHashMap<>();

  Resolutions(UdpIds ids, Consumer<CmEvent> events, Consumer<RuntimeException> stopped,
      Duration timeout) {
    this.ids = ids;
    this.events = events;
    this.stopped = stopped;
    this.timeout = timeout;
  }

  /** Where requests come from and what they say of us, once known. */
  void from(InetSocketAddress source, byte[] hello) {
    this.source = source;
    this.hello = hello;
  }

  boolean owns(CmId id) {
    return byId.containsKey(id);
  }

  boolean resolving(InetSocketAddress to) {
    return byAddress.containsKey(to);
  }

  /** Starts resolving {@code to}: its id, for the timeout; a failure to start throws. */
  CmId start(InetSocketAddress to) {
    CmId id = ids.create("datagram peer " + to, events, stopped);
    try {
      id.resolveAddress(source, to, timeout);
    } catch (RuntimeException e) {
      ids.destroy(id, false);
      throw e;
    }
    byAddress.put(to, id);
    byId.put(id, to);
    return id;
  }

  /** An event of a resolving id: the next step, or the outcome (its id destroyed). */
  Outcome onEvent(CmEvent e) {
    InetSocketAddress to = byId.get(e.id());
    if (to == null) return null;
    try {
      switch (e.type()) {
        case ADDR_RESOLVED:
          e.id().resolveRoute(timeout);
          return null;
        case ROUTE_RESOLVED:
          e.id().connect(ConnectionParameters.withPrivateData(hello == null ? new byte[0]
              : hello));
          return null;
        case ESTABLISHED:
          if (e.ud() == null || e.ud().addressVector() == null) {
            return end(e.id(), null, "the SIDR answer carried no address vector");
          }
          return end(e.id(), e.ud(), null);
        default:
          return end(e.id(), null, why(e));
      }
    } catch (RuntimeException x) {
      return end(e.id(), null, x.getMessage());
    }
  }

  /** The resolution the id started has not ended within the timeout. */
  Outcome timedOut(CmId id) {
    if (!byId.containsKey(id)) return null;
    return end(id, null, "no answer within " + timeout.toMillis() + " ms ("
        + DatagramSettings.PATH + ".resolve-timeout)");
  }

  private Outcome end(CmId id, UdParameters ud, String failure) {
    InetSocketAddress to = byId.remove(id);
    byAddress.remove(to);
    Outcome o = new Outcome(id, to, ud, id.verbs(), id.portNum(), id.localAddress(), failure);
    ids.destroy(id, false);
    return o;
  }

  void closeAll() {
    for (CmId id : new ArrayList<>(byId.keySet())) ids.destroy(id, false);
    byId.clear();
    byAddress.clear();
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

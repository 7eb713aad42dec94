package dev.pekkordma.actors.datagram;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import java.net.InetSocketAddress;
import java.util.LinkedHashSet;
import java.util.Set;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.util.ByteString;

/**
 * A datagram endpoint: an RDMA_PS_UDP CM id bound to an address and listening, with a PD, a
 * CQ, a shared receive queue of registered receives, and the UD QP its datagrams come from.
 * Each SIDR request (a peer resolving this address) is accepted with a UD QP of its own on the
 * request's id, as librdmacm's SIDR answer names the QP of that id; all those QPs take their
 * receives from the one shared queue and complete on the one CQ, so the memory an endpoint
 * registers does not grow with its peers. Sends to an address resolve it first (the SIDR
 * exchange) and then go from the endpoint's QP with an address handle; both are kept, for at
 * most {@code max-peers} peers.
 *
 * <p>Started with {@code CmActor.BindDatagrams}; its handler hears {@link Bound} (or {@link
 * BindFailed}), and {@link Unbound} at its end. Stopping it (Unbind, or its handler stopped)
 * frees everything: address handles, QPs, SRQ, CQ, registration, PD, ids. A fatal error (its
 * CQ or QP failed, its device was removed) frees everything too, then it binds the same
 * address again after {@code restart-backoff}, keeping its subscribers; its handler hears
 * Bound again.
 */
public final class DatagramEndpoint {
  private DatagramEndpoint() {}

  public sealed interface Command {}

  /**
   * Send {@code data} to the endpoint at {@code to}, resolving it first if need be; {@code
   * replyTo} (may be null) hears whether it went. Over the path MTU it is refused at once.
   */
  public record Send(InetSocketAddress to, ByteString data, ActorRef<SendResult> replyTo)
      implements Command {}

  /** Send {@code data} to {@code to}, the sender of a {@link ReceivedDatagram}: no resolving. */
  public record Reply(Peer to, ByteString data, ActorRef<SendResult> replyTo)
      implements Command {}

  /** Every datagram that arrives goes to each subscriber, until it unsubscribes or stops. */
  public record Subscribe(ActorRef<ReceivedDatagram> subscriber) implements Command {}

  public record Unsubscribe(ActorRef<ReceivedDatagram> subscriber) implements Command {}

  /** Stop: everything is freed. */
  public enum Unbind implements Command { INSTANCE }

  /** What it knows now, for tests and monitoring. */
  public record GetStatus(ActorRef<Status> replyTo) implements Command {}

  /**
   * {@code peers}: addresses resolved; {@code answered}: SIDR requests accepted (a QP each);
   * {@code malformed}: datagrams dropped for lengths their buffer could not hold.
   */
  public record Status(InetSocketAddress address, int qpn, int maxDatagram, int peers,
      int answered, int addressHandles, int pendingSends, long malformed) {}

  record CmEventArrived(CmEvent event) implements Command {}

  record CmStopped(String reason) implements Command {}

  record Completions(Object incarnation, UdBatch batch) implements Command {}

  record CqFailed(Object incarnation, String reason) implements Command {}

  record ResolveTimedOut(dev.pekkordma.cm.CmId id) implements Command {}

  record SubscriberGone(ActorRef<ReceivedDatagram> subscriber) implements Command {}

  enum HandlerGone implements Command { INSTANCE }

  /** The endpoint's own QP, for fault injection in tests. */
  record Inspect(ActorRef<dev.pekkordma.verbs.QueuePair> replyTo) implements Command {}

  /** What the endpoint's handler hears. */
  public sealed interface Event {}

  /**
   * Bound at {@code address} (the port picked if 0 was asked), sending from QP {@code qpn};
   * {@code maxDatagram}: the path MTU, the most one datagram carries.
   */
  public record Bound(ActorRef<Command> endpoint, InetSocketAddress address, int qpn,
      int maxDatagram) implements Event {}

  public record BindFailed(InetSocketAddress address, String reason) implements Event {}

  /** It stopped: Unbind, its handler stopped, the CM's events stopped, or it failed for good. */
  public record Unbound(InetSocketAddress address, String reason) implements Event {}

  /** A fatal error: everything was freed, and it binds again after the backoff. */
  public record Restarting(InetSocketAddress address, String reason) implements Event {}

  /** Thrown to have the supervisor free everything and bind again. */
  static final class FatalException extends RuntimeException {
    FatalException(String message) {
      super(message);
    }
  }

  /** What outlives a restart: the subscribers, and the address (with the port it got). */
  static final class EndpointLineage {
    final ActorRef<Event> handler;
    final Set<ActorRef<ReceivedDatagram>> subscribers = new LinkedHashSet<>();
    InetSocketAddress address;
    boolean bound;

    EndpointLineage(ActorRef<Event> handler, InetSocketAddress address) {
      this.handler = handler;
      this.address = address;
    }
  }

  /** The endpoint's behavior, for the CM actor to spawn. */
  public static Behavior<Command> create(RdmaRuntime runtime, DatagramSettings settings,
      int backlog, InetSocketAddress address, ActorRef<Event> handler) {
    EndpointLineage lineage = new EndpointLineage(handler, address);
    return Behaviors.supervise(Behaviors.<Command>setup(ctx -> EndpointLogic.start(ctx, runtime,
            settings, backlog, lineage)))
        .onFailure(FatalException.class, SupervisorStrategy.restartWithBackoff(
            settings.restartBackoff().min(), settings.restartBackoff().max(),
            settings.restartBackoff().randomFactor()));
  }
}

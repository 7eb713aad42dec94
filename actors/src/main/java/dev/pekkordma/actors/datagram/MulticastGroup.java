package dev.pekkordma.actors.datagram;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import dev.pekkordma.verbs.Gid;
import java.net.InetSocketAddress;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.SupervisorStrategy;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.util.ByteString;

/**
 * A member of a multicast group: an RDMA_PS_UDP id bound to a local address, its UD QP (made by
 * the id, which attaches it to the group) with a PD, a CQ and registered receives, joined to the
 * group ({@code rdma_join_multicast}). The group's datagrams go to its subscriber; {@link Send}
 * sends to the group with the address handle MULTICAST_JOIN's address vector makes.
 *
 * <p>Started with {@code CmActor.JoinMulticast}; its handler hears {@link Joined}, or {@link
 * JoinFailed} (MULTICAST_ERROR, or no answer within {@code resolve-timeout}), and {@link Left}
 * at its end. Stopping it (Leave, or its handler stopped) leaves the group and frees
 * everything; a fatal error frees everything and joins again after {@code restart-backoff}.
 */
public final class MulticastGroup {
  private MulticastGroup() {}

  public sealed interface Command {}

  /** Send {@code data} to the group; sends wait until the group is joined. */
  public record Send(ByteString data, ActorRef<SendResult> replyTo) implements Command {}

  /** Leave the group and stop. */
  public enum Leave implements Command { INSTANCE }

  record CmEventArrived(CmEvent event) implements Command {}

  record CmStopped(String reason) implements Command {}

  record Completions(Object incarnation, UdBatch batch) implements Command {}

  record CqFailed(Object incarnation, String reason) implements Command {}

  record JoinTimedOut(Object incarnation) implements Command {}

  enum HandlerGone implements Command { INSTANCE }

  public sealed interface Event {}

  /** Joined: {@code gid} is the group's, {@code maxDatagram} the path MTU. */
  public record Joined(ActorRef<Command> member, InetSocketAddress group, Gid gid,
      int maxDatagram) implements Event {}

  public record JoinFailed(InetSocketAddress group, String reason) implements Event {}

  public record Left(InetSocketAddress group, String reason) implements Event {}

  /** A fatal error: everything was freed, and it joins again after the backoff. */
  public record Restarting(InetSocketAddress group, String reason) implements Event {}

  /**
   * What outlives a restart of the member: the group, its handler and subscriber, and whether it
   * joined.
   */
  static final class MembershipLineage {
    final InetSocketAddress group;
    final InetSocketAddress local;
    final ActorRef<Event> handler;
    final ActorRef<ReceivedDatagram> subscriber;
    boolean joined;

    MembershipLineage(InetSocketAddress group, InetSocketAddress local, ActorRef<Event> handler,
        ActorRef<ReceivedDatagram> subscriber) {
      this.group = group;
      this.local = local;
      this.handler = handler;
      this.subscriber = subscriber;
    }
  }

  /** The member's behavior, for the CM actor to spawn. */
  public static Behavior<Command> create(RdmaRuntime runtime, DatagramSettings settings,
      InetSocketAddress group, InetSocketAddress local, ActorRef<Event> handler,
      ActorRef<ReceivedDatagram> subscriber) {
    MembershipLineage lineage = new MembershipLineage(group, local, handler, subscriber);
    return Behaviors.supervise(Behaviors.<Command>setup(ctx -> GroupLogic.start(ctx, runtime, settings,
            lineage)))
        .onFailure(DatagramEndpoint.FatalException.class,
            SupervisorStrategy.restartWithBackoff(settings.restartBackoff().min(),
                settings.restartBackoff().max(), settings.restartBackoff().randomFactor()));
  }
}

package dev.pekkordma.actors;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import java.net.InetSocketAddress;
import org.apache.pekko.actor.DeadLetterSuppression;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * Listens on one bound address: each CONNECT_REQUEST becomes a {@link ConnectionActor}, which
 * asks the handler to accept or reject. Stopping it (Unbind, or its handler stopped) stops
 * listening: requests nobody has seen are rejected; the connections it made live on.
 */
public final class ListenerActor {
  private ListenerActor() {}

  public sealed interface Command {}

  /** Stop listening. */
  public enum Unbind implements Command { INSTANCE }

  record CmEventArrived(CmEvent event) implements Command {}

  private enum HandlerGone implements Command { INSTANCE }

  /** What the listener's handler hears. */
  public sealed interface Event {}

  public record Bound(ActorRef<Command> listener, InetSocketAddress address) implements Event {}

  public record BindFailed(InetSocketAddress address, String reason) implements Event {}

  /** Answer with {@link ConnectionActor.Accept} or {@link ConnectionActor.Reject}. */
  public record ConnectionRequested(ActorRef<ConnectionActor.Command> connection,
      byte[] privateData, InetSocketAddress remote) implements Event {}

  /**
   * The listener stopped listening (its device was removed, or Unbind); a note a handler that
   * stopped first (the system's shutdown) has no use for, so it is no dead letter.
   */
  public record Unbound(InetSocketAddress address, String reason)
      implements Event, DeadLetterSuppression {}

  static Behavior<Command> create(CmRouter router, InetSocketAddress address, QpSpec qp,
      ActorRef<Event> handler, ActorRef<CmActor.Command> cm, int backlog) {
    return Behaviors.setup(
        ctx -> {
          CmId id;
          try {
            id = router.createId("listener " + address);
          } catch (RuntimeException e) {
            handler.tell(new BindFailed(address, e.getMessage()));
            return Behaviors.stopped();
          }
          try {
            router.own(id, ctx.messageAdapter(CmEvent.class, CmEventArrived::new));
            id.bind(address);
            id.listen(backlog);
          } catch (RuntimeException e) {
            router.destroy(id, ctx.getLog());
            handler.tell(new BindFailed(address, e.getMessage()));
            return Behaviors.stopped();
          }
          InetSocketAddress bound = id.localAddress();
          handler.tell(new Bound(ctx.getSelf(), bound));
          ctx.watchWith(handler, HandlerGone.INSTANCE); // nobody to ask: stop listening
          String[] why = {"unbound"};
          return Behaviors.receive(Command.class)
              .onMessageEquals(Unbind.INSTANCE, Behaviors::stopped)
              .onMessageEquals(HandlerGone.INSTANCE, Behaviors::stopped)
              .onMessage(
                  CmEventArrived.class,
                  e -> {
                    CmEvent ev = e.event();
                    if (ev.type() == CmEventType.CONNECT_REQUEST) {
                      cm.tell(
                          new CmActor.SpawnConnection(
                              ConnectionActor.ConnectionSpec.passive(
                                  router, ev.id(), qp, ev.privateData(), handler)));
                      return Behaviors.same();
                    }
                    if (ev.type() == CmEventType.DEVICE_REMOVAL) {
                      why[0] = "DEVICE_REMOVAL";
                      return Behaviors.stopped();
                    }
                    ctx.getLog().debug("listener on {}: {}", bound, ev);
                    return Behaviors.same();
                  })
              .onSignal(
                  PostStop.class,
                  s -> {
                    router.destroy(id, ctx.getLog());
                    handler.tell(new Unbound(bound, why[0]));
                    return Behaviors.same();
                  })
              .build();
        });
  }
}

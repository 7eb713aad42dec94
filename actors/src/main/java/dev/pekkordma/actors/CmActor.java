package dev.pekkordma.actors;

import dev.pekkordma.actors.datagram.DatagramEndpoint;
import dev.pekkordma.actors.datagram.MulticastGroup;
import dev.pekkordma.actors.datagram.ReceivedDatagram;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.DeviceContext;
import java.net.InetSocketAddress;
import java.util.IdentityHashMap;
import java.util.Map;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.PostStop;
import org.apache.pekko.actor.typed.javadsl.ActorContext;
import org.apache.pekko.actor.typed.javadsl.Behaviors;

/**
 * RDMA CM as messages, on the runtime's CM dispatcher. Owns as children: a listener per bound
 * address, a connector per client connection, a datagram endpoint or multicast member per
 * BindDatagrams or JoinMulticast (each owns its ids and resources itself), and a device actor
 * per device context the CM hands out (the CM picks the context of each id; its connections
 * live in a PD there). When it
 * stops, its children stop first; then it destroys any id they left.
 */
public final class CmActor {
  private CmActor() {}

  public sealed interface Command {}

  /**
   * Listen on {@code address} (port 0 picks one); {@code handler} hears {@link
   * ListenerActor.Bound} (or BindFailed) and then a ConnectionRequested per request. Connections
   * get QPs of {@code qp}.
   */
  public record Listen(InetSocketAddress address, QpSpec qp,
      ActorRef<ListenerActor.Event> handler) implements Command {}

  /**
   * Connect to {@code remote} with {@code privateData} (at most 56 bytes); {@code handler} hears
   * {@link ConnectionActor.Connected} or why not, and every later event of the connection.
   */
  public record Connect(InetSocketAddress remote, byte[] privateData, QpSpec qp,
      ActorRef<ConnectionActor.Event> handler) implements Command {}

  /**
   * Bind a datagram endpoint to {@code address} (an address of an RDMA device; port 0 picks
   * one): {@code handler} hears {@link DatagramEndpoint.Bound} or BindFailed. See {@link
   * DatagramEndpoint}.
   */
  public record BindDatagrams(InetSocketAddress address,
      ActorRef<DatagramEndpoint.Event> handler) implements Command {}

  /**
   * Join the multicast group at {@code group} from {@code local} (an address of an RDMA
   * device): {@code handler} hears {@link MulticastGroup.Joined} or JoinFailed, {@code
   * subscriber} every datagram of the group. See {@link MulticastGroup}.
   */
  public record JoinMulticast(InetSocketAddress group, InetSocketAddress local,
      ActorRef<MulticastGroup.Event> handler, ActorRef<ReceivedDatagram> subscriber)
      implements Command {}

  /** Put a connection actor on the id's device. */
  record SpawnConnection(ConnectionActor.ConnectionSpec spec) implements Command {}

  private record DeviceStopped(DeviceContext context) implements Command {}

  /** A device actor that failed: forget it, then tell it so (it stops then). */
  record Retire(ActorRef<DeviceActor.Command> device) implements Command {}

  static Behavior<Command> create(RdmaRuntime runtime, RdmaActorsSettings settings) {
    return Behaviors.setup(ctx -> new State(ctx,
        new CmRouter(runtime.cm(), ctx.getExecutionContext()), runtime, settings).behavior());
  }

  private static final class State {
    private final ActorContext<Command> ctx;
    private final CmRouter router;
    private final RdmaActorsSettings settings;
    private final RdmaRuntime runtime;
    private final Map<DeviceContext, ActorRef<DeviceActor.Command>> devices =
        new IdentityHashMap<>();
    private int listeners;
    private int connectors;
    private int deviceCount;
    private int datagrams;

    State(ActorContext<Command> ctx, CmRouter router, RdmaRuntime runtime,
        RdmaActorsSettings settings) {
      this.ctx = ctx;
      this.router = router;
      this.runtime = runtime;
      this.settings = settings;
    }

    Behavior<Command> behavior() {
      return Behaviors.receive(Command.class)
          .onMessage(Listen.class, l -> {
            ctx.spawn(ListenerActor.create(router, l.address(), l.qp(), l.handler(),
                ctx.getSelf(), settings.backlog), "listener-" + (++listeners));
            return Behaviors.same();
          })
          .onMessage(Connect.class, c -> {
            ctx.spawn(Connector.create(router, c.remote(), c.privateData(), c.qp(), c.handler(),
                ctx.getSelf(), settings), "connector-" + (++connectors));
            return Behaviors.same();
          })
          .onMessage(BindDatagrams.class, b -> {
            ctx.spawn(DatagramEndpoint.create(runtime, settings.datagram, settings.backlog,
                b.address(), b.handler()), "datagrams-" + (++datagrams));
            return Behaviors.same();
          })
          .onMessage(JoinMulticast.class, j -> {
            ctx.spawn(MulticastGroup.create(runtime, settings.datagram, j.group(), j.local(),
                j.handler(), j.subscriber()), "multicast-" + (++datagrams));
            return Behaviors.same();
          })
          .onMessage(SpawnConnection.class, s -> spawn(s.spec()))
          .onMessage(DeviceStopped.class, d -> {
            devices.remove(d.context());
            return Behaviors.same();
          })
          .onMessage(Retire.class, r -> {
            // every spawn sent to it before this is in its mailbox ahead of the answer
            devices.values().removeIf(r.device()::equals);
            r.device().tell(new DeviceActor.Retired());
            return Behaviors.same();
          })
          .onSignal(PostStop.class, s -> {
            router.destroyAll(ctx.getLog());
            return Behaviors.same();
          })
          .build();
    }

    private Behavior<Command> spawn(ConnectionActor.ConnectionSpec spec) {
      DeviceContext context = spec.id().verbs();
      if (context == null) {
        spec.abandon("the id has no device", ctx.getLog());
        return Behaviors.same();
      }
      ActorRef<DeviceActor.Command> device = devices.get(context);
      if (device == null) {
        device = ctx.spawn(DeviceActor.create(adopt(context), runtime, settings, ctx.getSelf()),
            "device-" + (++deviceCount) + "-" + context.device().name());
        ctx.watchWith(device, new DeviceStopped(context));
        devices.put(context, device);
      }
      device.tell(new DeviceActor.SpawnConnection(spec));
      return Behaviors.same();
    }

    /** The CM's context: used, never closed here (the CM closes it after its last user). */
    private static ContextSource adopt(DeviceContext context) {
      return new ContextSource() {
        @Override
        public String name() {
          return context.device().name() + " (CM)";
        }

        @Override
        public OpenedContext open() {
          return new OpenedContext(context, () -> {});
        }
      };
    }
  }
}

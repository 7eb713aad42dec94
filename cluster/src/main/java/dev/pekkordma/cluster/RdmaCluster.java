package dev.pekkordma.cluster;

import dev.pekkordma.actors.RdmaExtension;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.Extension;
import org.apache.pekko.actor.typed.ExtensionId;
import org.apache.pekko.actor.typed.Props;
import org.apache.pekko.cluster.typed.Cluster;

/**
 * RDMA between the members of a Pekko cluster. {@code RdmaCluster.get(system)} binds this
 * member's RDMA CM listener, advertises it through the Receptionist, and from then on follows
 * the cluster: members that come Up are connected (or on first use, with {@code
 * pekko-rdma.cluster.connect = lazy}), unreachable ones are paused, removed ones are closed and
 * their buffers returned. Messages travel on typed {@link Channel}s.
 */
public final class RdmaCluster implements Extension {
  private final ActorSystem<?> system;
  private final ClusterSettings settings;
  private final Channels channels = new Channels();
  private final Directory directory = new Directory();
  private final CompletableFuture<Endpoint> endpoint = new CompletableFuture<>();
  private final ActorRef<Coordinator.Command> coordinator;
  private final int maxMessageSize;
  private final Map<CompletableFuture<Done>, Address> unfinished = new ConcurrentHashMap<>();
  private volatile boolean terminated;

  private RdmaCluster(ActorSystem<?> system) {
    this.system = system;
    Cluster.get(system); // fails, saying so, unless pekko.actor.provider = cluster
    settings = ClusterSettings.from(system.settings().config());
    RdmaExtension rdma = RdmaExtension.get(system);
    rdma.cm(); // fails, saying so, where the provider has no connection manager
    maxMessageSize = rdma.settings().bufferSize - Frames.HEADER;
    coordinator = system.systemActorOf(Coordinator.create(settings, channels, directory,
        endpoint),
        "pekko-rdma-cluster", Props.empty());
    system.getWhenTerminated().whenComplete((d, t) -> {
      terminated = true;
      unfinished.forEach((p, to) -> p.completeExceptionally(
          new SendFailedException(to, "the actor system terminated before it was sent")));
    });
  }

  /**
   * A message told to the coordinator after the system stopped is lost with its promise: so
   * every promise is kept until it completes, and failed when the system terminates.
   */
  void tell(Coordinator.Send send) {
    CompletableFuture<Done> p = send.promise();
    if (terminated) {
      p.completeExceptionally(
          new SendFailedException(send.to(), "the actor system has terminated"));
      return;
    }
    unfinished.put(p, send.to());
    p.whenComplete((d, t) -> unfinished.remove(p));
    coordinator.tell(send);
    if (terminated && unfinished.remove(p) != null) {
      p.completeExceptionally(
          new SendFailedException(send.to(), "the actor system has terminated"));
    }
  }

  public static RdmaCluster get(ActorSystem<?> system) {
    return RdmaClusterId.INSTANCE.apply(system);
  }

  public ClusterSettings settings() {
    return settings;
  }

  /** This member's endpoint, once its listener is bound (fails if it cannot bind). */
  public CompletionStage<Endpoint> selfEndpoint() {
    return endpoint;
  }

  /**
   * The channel {@code name}, carrying messages encoded by {@code codec}. Every member that
   * receives on it opens it with the same name and an equivalent codec.
   */
  public <T> Channel<T> channel(String name, Codec<T> codec) {
    return new Channel<>(this, name, channels.open(name, codec), codec);
  }

  /** The largest encoded message a channel carries (a frame is one registered buffer). */
  public int maxMessageSize() {
    return maxMessageSize;
  }

  /** {@code subscriber} hears every {@link PeerEvent} from now on, until it stops. */
  public void subscribe(ActorRef<PeerEvent> subscriber) {
    coordinator.tell(new Coordinator.SubscribeEvents(subscriber));
  }

  public void unsubscribe(ActorRef<PeerEvent> subscriber) {
    coordinator.tell(new Coordinator.UnsubscribeEvents(subscriber));
  }

  ActorRef<Coordinator.Command> coordinator() {
    return coordinator;
  }

  Channels channels() {
    return channels;
  }

  Directory directory() {
    return directory;
  }

  ActorSystem<?> system() {
    return system;
  }

  public static final class RdmaClusterId extends ExtensionId<RdmaCluster> {
    static final RdmaClusterId INSTANCE = new RdmaClusterId();

    private RdmaClusterId() {}

    @Override
    public RdmaCluster createExtension(ActorSystem<?> system) {
      return new RdmaCluster(system);
    }
  }
}

package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import dev.pekkordma.streams.Datagram;
import dev.pekkordma.streams.impl.StreamsRuntime;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.GraphStageWithMaterializedValue;
import scala.Tuple2;

/**
 * Datagrams as a flow: elements in go to their peers, datagrams that arrive come out with their
 * senders. Materializes the local address once it is bound (or, for a group, joined). Everything
 * runs on the stage's thread: CM events and completion-queue wake-ups come in as async
 * callbacks. See {@link DatagramLogic}.
 */
@InternalApi
public final class DatagramStage extends GraphStageWithMaterializedValue<
    FlowShape<Datagram, Datagram>, CompletionStage<InetSocketAddress>> {

  /** What the stage's id does: listens (SIDR answered), only sends, or joins a group. */
  public enum Mode { BIND, SEND, MULTICAST }

  final Inlet<Datagram> in = Inlet.create("RdmaDatagrams.in");
  final Outlet<Datagram> out = Outlet.create("RdmaDatagrams.out");
  private final FlowShape<Datagram, Datagram> shape = FlowShape.of(in, out);
  final StreamsRuntime rt;
  final DatagramSettings settings;
  final Mode mode;
  /** The address bound; null for a send-only stage that binds where it first resolves. */
  final InetSocketAddress local;
  final InetSocketAddress group;
  final int backlog;

  public DatagramStage(StreamsRuntime rt, DatagramSettings settings, Mode mode,
      InetSocketAddress local, InetSocketAddress group) {
    this.rt = rt;
    this.settings = settings;
    this.mode = mode;
    this.local = local;
    this.group = group;
    this.backlog = rt.settings.backlog();
  }

  @Override
  public FlowShape<Datagram, Datagram> shape() {
    return shape;
  }

  @Override
  public Tuple2<GraphStageLogic, CompletionStage<InetSocketAddress>>
      createLogicAndMaterializedValue(Attributes attributes) {
    CompletableFuture<InetSocketAddress> bound = new CompletableFuture<>();
    return new Tuple2<>(new DatagramLogic(this, bound), bound);
  }
}

package dev.pekkordma.streams;

import dev.pekkordma.runtime.internal.datagram.DatagramSettings;
import dev.pekkordma.streams.impl.StreamsRuntime;
import dev.pekkordma.streams.impl.datagram.DatagramStage;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.util.ByteString;

/**
 * Unreliable datagrams over RDMA (UD QPs through RDMA_PS_UDP CM ids), shaped like Alpakka's
 * {@code Udp}: {@link #bindFlow} sends its elements and emits what arrives, {@link #sendSink}
 * only sends, {@link #multicastFlow} joins a group. Get it with {@code
 * RdmaStreams.get(system).datagrams()}; settings under {@code pekko-rdma.streams.datagram}.
 *
 * <p>A datagram to an address resolves it first (the CM's SIDR exchange, once per peer; the
 * answer is kept for {@code max-peers} peers); a datagram to a received one's peer goes at once.
 * Sends are backpressured: an element is taken only when a registered send slot is free and its
 * peer is resolved, so nothing is dropped on this side. Receives are as many as {@code
 * receive-buffers}: one waits for downstream with its buffer, and a datagram that arrives when
 * every buffer is taken is dropped by the device, as UD does (the verbs do not report such
 * drops, so they are not counted here). The stream fails, naming the peer, when a peer does not
 * resolve, and when a datagram is over the path MTU (naming both sizes).
 */
public final class RdmaDatagrams {
  private final StreamsRuntime rt;
  private final DatagramSettings settings;

  RdmaDatagrams(StreamsRuntime rt) {
    this.rt = rt;
    this.settings = DatagramSettings.from(rt.system.settings().config(), DatagramSettings.STREAMS);
  }

  /**
   * Binds {@code local} (an address of an RDMA device; port 0 picks one) and listens there for
   * peers that resolve it: elements in are sent, datagrams that arrive come out with their
   * peers. Materializes the bound address. As {@code Udp.bindFlow}.
   */
  public Flow<Datagram, Datagram, CompletionStage<InetSocketAddress>> bindFlow(
      InetSocketAddress local) {
    return Flow.fromGraph(new DatagramStage(rt, settings, DatagramStage.Mode.BIND, local, null));
  }

  /**
   * Sends each element; works on the device of the first peer it resolves, and listens nowhere
   * (datagrams peers send back to its QP are discarded). Completes once upstream has and every
   * datagram went. As {@code Udp.sendSink}.
   */
  public Sink<Datagram, CompletionStage<Done>> sendSink() {
    return sendFrom(null);
  }

  /** As {@link #sendSink()}, sending from {@code local}'s device. */
  public Sink<Datagram, CompletionStage<Done>> sendSink(InetSocketAddress local) {
    return sendFrom(local);
  }

  private Sink<Datagram, CompletionStage<Done>> sendFrom(InetSocketAddress local) {
    return Flow.fromGraph(new DatagramStage(rt, settings, DatagramStage.Mode.SEND, local, null))
        .toMat(Sink.ignore(), Keep.right());
  }

  /**
   * Joins the multicast group {@code group} (IPv4, 224.0.0.0/4) from {@code local} (an address
   * of an RDMA device): each ByteString in goes to the group, the group's datagrams come out
   * (the stage's own, if the device loops them back, among them). Materializes the local
   * address once joined; leaves the group when the stream ends.
   */
  public Flow<ByteString, Datagram, CompletionStage<InetSocketAddress>> multicastFlow(
      InetSocketAddress group, InetSocketAddress local) {
    DatagramPeer to = DatagramPeer.at(group);
    return Flow.of(ByteString.class).map(b -> new Datagram(b, to)).viaMat(Flow.fromGraph(
        new DatagramStage(rt, settings, DatagramStage.Mode.MULTICAST, local, group)),
        Keep.right());
  }
}

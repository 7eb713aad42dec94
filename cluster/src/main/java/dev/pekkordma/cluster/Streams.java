package dev.pekkordma.cluster;

import dev.pekkordma.streams.RdmaStreams;
import java.nio.ByteBuffer;
import java.util.function.Function;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.Address;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;

/**
 * A channel's streams to a member, over the streams module: one RDMA stream connection per
 * materialization, to the member's streams listener. Its first message says who sends and on
 * which channel; the rest are the channel's messages, and what the member's handler sends back.
 * The streams layer's own credits carry backpressure from the member's handler to the sender; a
 * gate before it holds elements while the member is unreachable and fails the stream once the
 * member is refused, downed or removed.
 */
final class Streams {
  private static final int MAGIC = 0x50524453; // "PRDS"
  private static final int HEADER = 4 + 1 + 8 + 4;

  private Streams() {}

  /** The header: magic, version, the sender's uid, the channel. */
  static ByteString header(long uid, int channel) {
    return ByteString.fromArrayUnsafe(ByteBuffer.allocate(HEADER).putInt(MAGIC)
        .put((byte) Endpoint.VERSION).putLong(uid).putInt(channel).array());
  }

  /** Sends the channel's messages to {@code member} and emits what its handler answers. */
  static <T> Flow<T, T, NotUsed> outgoing(RdmaCluster cluster, int channel, Codec<T> codec,
      Address member) {
    return Flow.fromMaterializer((mat, attributes) -> {
      Endpoint e = cluster.directory().endpoint(member);
      String why = e == null ? "it is not a member that can be connected to"
          : e.streamPort() == 0 ? "it has no streams listener (pekko-rdma.cluster.streams = off)"
          : null;
      if (why != null) {
        return Flow.<T, T>fromSinkAndSource(Sink.cancelled(),
            Source.failed(new SendFailedException(member, why)));
      }
      long self = org.apache.pekko.cluster.typed.Cluster.get(cluster.system()).selfMember()
          .uniqueAddress().longUid();
      Directory directory = cluster.directory();
      return Flow.<T>create()
          .mapAsync(1, m -> directory.gate(member).thenApply(open -> m))
          .map(codec::encode)
          .prepend(Source.single(header(self, channel)))
          .via(RdmaStreams.get(cluster.system()).outgoingConnection(e.host(), e.streamPort()))
          .map(codec::decode);
    }).mapMaterializedValue(m -> NotUsed.getInstance());
  }

  /**
   * What an incoming stream connection runs through: the header picks the channel and names the
   * sender, which must be a member this one may talk to; then the channel's handler (or its
   * subscribers) takes the messages.
   */
  static Flow<ByteString, ByteString, NotUsed> incoming(IncomingConnection c, Channels channels,
      Directory directory, Logger log) {
    return Flow.<ByteString>create().prefixAndTail(1).flatMapConcat(p -> {
      if (p.first().isEmpty()) return Source.<ByteString>empty();
      ByteBuffer h = p.first().get(0).asByteBuffer();
      String why = null;
      Address from = null;
      Channels.OpenChannel entry = null;
      if (h.remaining() != HEADER || h.getInt() != MAGIC || h.get() != Endpoint.VERSION) {
        why = "it is not a pekko-rdma cluster stream of version " + Endpoint.VERSION;
      } else {
        from = directory.member(h.getLong());
        entry = channels.entry(h.getInt());
        if (from == null) why = "it is from no member this one may talk to";
        else if (entry == null) why = "its channel is not open here";
      }
      if (why != null) {
        log.warn("an RDMA stream from {} is refused: {}", c.remoteAddress(), why);
        return Source.<ByteString>failed(new IllegalStateException("stream refused: " + why));
      }
      return p.second().via(handler(entry, from)).mapMaterializedValue(m -> NotUsed.getInstance());
    });
  }

  @SuppressWarnings({"unchecked", "rawtypes"})
  private static Flow<ByteString, ByteString, ?> handler(Channels.OpenChannel entry, Address from) {
    Codec codec = entry.codec;
    Function<Address, ? extends Flow<?, ?, ?>> make = entry.streamHandler;
    Flow inner = make != null ? make.apply(from)
        : Flow.create().map(m -> {
            Channels.deliver(entry, from, m);
            return m;
          }).filter(m -> false); // to the subscribers; nothing back
    return Flow.<ByteString>create().map(codec::decode).via(inner).map(m -> codec.encode(m));
  }
}

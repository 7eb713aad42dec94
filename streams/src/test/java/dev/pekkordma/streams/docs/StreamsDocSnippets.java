package dev.pekkordma.streams.docs;

import dev.pekkordma.streams.Datagram;
import dev.pekkordma.streams.RdmaDatagrams;
import dev.pekkordma.streams.RdmaStreams;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.zip.CRC32C;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;

/**
 * The code of docs/streams.md and docs/datagrams.md, compiled with the tests so that the pages
 * cannot drift from the API (DocSnippetsTest checks each block is one of these regions).
 */
final class StreamsDocSnippets {
  private StreamsDocSnippets() {}

  static void tcpDropIn(ActorSystem<?> system) {
    // tag::streams-drop-in[]
    final Source<IncomingConnection, CompletionStage<ServerBinding>> connections =
        RdmaStreams.get(system).bind("127.0.0.1", 8888);   // was: Tcp.get(system).bind(...)
    connections.runForeach(connection -> connection.handleWith(Flow.of(ByteString.class), system),
        system);

    final Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> connection =
        RdmaStreams.get(system).outgoingConnection("127.0.0.1", 8888);
    // end::streams-drop-in[]
  }

  static void zeroCopy(RdmaStreams rdma, CRC32C crc, ActorSystem<?> system) {
    // tag::streams-zero-copy[]
    rdma.bulkBufferSource("127.0.0.1", 9100).runForeach(b -> {
      crc.update(b.buffer());   // read in place
      b.release();              // the slot, and the sender's credit for it, go back
    }, system);
    // end::streams-zero-copy[]
  }

  static void datagrams(ActorSystem<?> system, InetSocketAddress local,
      InetSocketAddress server) {
    // tag::datagrams-echo[]
    RdmaDatagrams udp = RdmaStreams.get(system).datagrams();
    Flow.of(Datagram.class).joinMat(udp.bindFlow(local), Keep.right()).run(system);  // echo server
    Source.single(Datagram.create(ByteString.fromString("hi"), server))
        .via(udp.bindFlow(local)).runWith(Sink.head(), system);                       // its answer
    // end::datagrams-echo[]
  }
}

package dev.pekkordma.cluster.docs;

import dev.pekkordma.cluster.Channel;
import dev.pekkordma.cluster.Codec;
import dev.pekkordma.cluster.PeerEvent;
import dev.pekkordma.cluster.RdmaCluster;
import dev.pekkordma.cluster.Received;
import java.util.List;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Source;

/**
 * The code of docs/cluster.md, compiled with the tests so that the page cannot drift from the API
 * (DocSnippetsTest in core checks each block is one of these regions).
 */
final class ClusterDocSnippets {
  private ClusterDocSnippets() {}

  static void channels(ActorSystem<?> system, ActorRef<Received<String>> inbox, Address member,
      List<String> lines, ActorRef<PeerEvent> events) {
    // tag::cluster-channel[]
    RdmaCluster rdma = RdmaCluster.get(system);
    Channel<String> greetings = rdma.channel("greetings", Codec.utf8());
    greetings.subscribe(inbox);                               // ActorRef<Received<String>>
    greetings.send(member, "hello");                          // CompletionStage<Done>
    Source.from(lines).runWith(greetings.sink(member), system); // backpressured, in order
    Source.from(lines).runWith(greetings.streamSink(member), system); // a stream connection of its own
    greetings.handleStreams(from -> Flow.of(String.class).map(String::toUpperCase)); // answers
    rdma.subscribe(events);                                   // Connected, Paused, Removed, Refused...
    // end::cluster-channel[]
  }
}

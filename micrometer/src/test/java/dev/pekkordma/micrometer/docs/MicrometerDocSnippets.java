package dev.pekkordma.micrometer.docs;

import dev.pekkordma.micrometer.RdmaStreamsMetrics;
import dev.pekkordma.streams.RdmaStreams;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * The code of docs/operations.md, compiled with the tests so that the page cannot drift from the
 * API (DocSnippetsTest in core checks each block is one of these regions).
 */
final class MicrometerDocSnippets {
  private MicrometerDocSnippets() {}

  static void bind(ActorSystem<?> system, MeterRegistry registry) {
    // tag::micrometer-bind[]
    new RdmaStreamsMetrics(RdmaStreams.get(system)).bindTo(registry);
    // pekko.rdma.streams.bytes{direction=sent|received}, .messages, .connections{event=...},
    // .connections.live, .credit.stalls, pekko.rdma.resources.live{type=qp|cq|mr|pd|cm_id},
    // pekko.rdma.port.packets{device,port,direction}, .rnr.naks{direction}, .retries,
    // .retries.exceeded{kind=transport|rnr}
    // end::micrometer-bind[]
  }
}

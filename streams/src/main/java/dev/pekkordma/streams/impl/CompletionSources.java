package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.runtime.RuntimeSettings;
import dev.pekkordma.runtime.internal.AgentRunner;
import dev.pekkordma.streams.WorkCompletion;
import dev.pekkordma.verbs.CompletionQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.pekko.Done;
import org.apache.pekko.stream.javadsl.Source;

/** Completion sources: a bounded queue, and a {@link CompletionFeed} feeding it. */
@InternalApi
public final class CompletionSources {
  private static final AtomicLong made = new AtomicLong();

  private CompletionSources() {}

  public static Source<WorkCompletion, CompletionStage<Done>> create(StreamsRuntime rt,
      CompletionQueue cq, int bufferSize) {
    if (cq == null) throw new IllegalArgumentException("the CQ is null");
    if (bufferSize < 1) {
      throw new IllegalArgumentException("bufferSize must be positive, was " + bufferSize);
    }
    return Source.<WorkCompletion>queue(bufferSize).watchTermination((queue, terminated) -> {
      AtomicBoolean cancelled = new AtomicBoolean();
      CompletableFuture<Done> stopped = new CompletableFuture<>();
      terminated.whenComplete((d, e) -> cancelled.set(true));
      RuntimeSettings s = rt.runtime.settings();
      AgentRunner.start(rt.system, "pekko-rdma-streams-completions-" + made.incrementAndGet(),
          s.newIdleStrategy(),
          new CompletionFeed(cq, queue, bufferSize, s.batchSize, cancelled, stopped));
      return stopped;
    });
  }
}

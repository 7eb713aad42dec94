package dev.pekkordma.testing;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.verbs.RdmaException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/** A real CM event channel whose reading fails, from {@link #failReading} on, as a broken one. */
public final class FailingCmChannel implements CmEventChannel {
  private final CmEventChannel channel;
  private volatile String failure;
  private final CompletableFuture<Void> closed = new CompletableFuture<>();

  public FailingCmChannel(CmEventChannel channel) {
    this.channel = channel;
  }

  /** Every read from now on throws, naming {@code reason}. */
  public void failReading(String reason) {
    failure = reason;
  }

  @Override
  public CmId createId(Object context, RdmaPortSpace space) {
    return channel.createId(context, space);
  }

  @Override
  public CmEvent awaitEvent(Duration timeout) {
    String reason = failure;
    if (reason != null) throw new RdmaException("rdma_get_cm_event", RdmaException.EIO, reason);
    return channel.awaitEvent(timeout);
  }

  /** Completes once the channel has been closed through this one. */
  public CompletableFuture<Void> closed() {
    return closed;
  }

  @Override
  public void close() {
    try {
      channel.close();
    } finally {
      closed.complete(null);
    }
  }
}

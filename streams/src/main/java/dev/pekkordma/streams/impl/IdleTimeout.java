package dev.pekkordma.streams.impl;

import dev.pekkordma.streams.RdmaIdleTimeoutException;
import dev.pekkordma.streams.RdmaStreamSettings;
import java.net.InetSocketAddress;
import java.time.Duration;
import org.apache.pekko.NotUsed;
import org.apache.pekko.japi.function.Function;
import org.apache.pekko.stream.StreamIdleTimeoutException;
import org.apache.pekko.stream.javadsl.BidiFlow;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Keep;

/**
 * A connection's idle timeout, as Pekko's {@code Tcp} puts it around its connections: a
 * BidiFlow that fails both directions when no element passed either way for the timeout,
 * counted from materialization. Its failure names the peer and the setting: downstream's here,
 * the connection's own (which may come as a cancellation) by {@link #named}.
 */
final class IdleTimeout {
  private IdleTimeout() {}

  /** The idle timeout's failure as the connection reports it, naming {@code peer}. */
  static Throwable named(Throwable cause, RdmaStreamSettings settings, InetSocketAddress peer) {
    if (!(cause instanceof StreamIdleTimeoutException) || settings.idleTimeout().isEmpty()) {
      return cause;
    }
    return new RdmaIdleTimeoutException(peer, settings.idleTimeout().get(),
        settings.path() + ".idle-timeout");
  }

  static <M> Flow<Object, Object, M> around(Flow<Object, Object, M> connection,
      Duration timeout, InetSocketAddress peer, String setting) {
    Function<StreamIdleTimeoutException, Throwable> named =
        e -> new RdmaIdleTimeoutException(peer, timeout, setting);
    BidiFlow<Object, Object, Object, Object, NotUsed> user = BidiFlow.fromFlows(
        Flow.create(), Flow.create().mapError(StreamIdleTimeoutException.class, named));
    return user.atop(BidiFlow.<Object, Object>bidirectionalIdleTimeout(timeout))
        .join(connection, Keep.<NotUsed, M>right());
  }
}

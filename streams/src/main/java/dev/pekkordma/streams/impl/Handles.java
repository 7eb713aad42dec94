package dev.pekkordma.streams.impl;

import dev.pekkordma.streams.IncomingConnection;
import dev.pekkordma.streams.OutgoingConnection;
import dev.pekkordma.streams.ServerBinding;
import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/**
 * Makes the handles the stages give out, whose constructors only their own package can call:
 * {@code RdmaStreams} registers the maker when its class is initialized, before any stage runs.
 */
public abstract class Handles {
  private static volatile Handles maker;

  /** Called once, by {@code RdmaStreams}'s class initialization. */
  public static void register(Handles handles) {
    if (maker != null) throw new IllegalStateException("the handle maker is registered already");
    maker = handles;
  }

  static Handles get() {
    Handles h = maker;
    if (h == null) throw new IllegalStateException("RdmaStreams has not been initialized");
    return h;
  }

  public abstract IncomingConnection incoming(InetSocketAddress local, InetSocketAddress remote,
      Flow<ByteString, ByteString, NotUsed> flow);

  public abstract OutgoingConnection outgoing(InetSocketAddress remote, InetSocketAddress local);

  public abstract ServerBinding binding(InetSocketAddress local,
      Supplier<CompletionStage<Done>> unbind, CompletionStage<Done> whenUnbound);
}

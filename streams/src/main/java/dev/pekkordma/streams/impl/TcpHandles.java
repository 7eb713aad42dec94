package dev.pekkordma.streams.impl;

import java.net.InetSocketAddress;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;
import scala.concurrent.Future;
import scala.jdk.javaapi.FutureConverters;
import scala.runtime.BoxedUnit;

/**
 * The handles the stages give out are Pekko's own {@code Tcp} types, so that Java code naming
 * {@code Tcp.IncomingConnection}, {@code Tcp.ServerBinding} or {@code Tcp.OutgoingConnection}
 * runs unchanged on RDMA. Pekko makes its Java handles from its Scala ones, and so does this:
 * the Scala case classes carry the addresses, the flow and the unbind, the Java classes wrap
 * them. Their constructors are Pekko's internal API ({@code private[pekko]} in Scala, public to
 * Java); {@code TcpTypesTest} fails when a Pekko version changes them.
 */
final class TcpHandles {
  private TcpHandles() {}

  /** A connection a binding took: materializing {@code flow} accepts it. */
  static Tcp.IncomingConnection incoming(InetSocketAddress local, InetSocketAddress remote,
      Flow<ByteString, ByteString, NotUsed> flow) {
    return new Tcp.IncomingConnection(
        new org.apache.pekko.stream.scaladsl.Tcp.IncomingConnection(local, remote, flow.asScala()));
  }

  /** A client's connection, once it is up. */
  static Tcp.OutgoingConnection outgoing(InetSocketAddress remote,
      InetSocketAddress local) {
    return new Tcp.OutgoingConnection(
        new org.apache.pekko.stream.scaladsl.Tcp.OutgoingConnection(remote, local));
  }

  /**
   * A listener bound at {@code local}: {@code unbind} stops it, {@code whenUnbound} completes
   * once it has stopped.
   */
  static Tcp.ServerBinding binding(InetSocketAddress local,
      Supplier<CompletionStage<Done>> unbind, CompletionStage<Done> whenUnbound) {
    scala.Function0<Future<BoxedUnit>> unbindAction =
        () -> FutureConverters.asScala(unbind.get().thenApply(d -> BoxedUnit.UNIT));
    return new Tcp.ServerBinding(new org.apache.pekko.stream.scaladsl.Tcp.ServerBinding(local,
        unbindAction, FutureConverters.asScala(whenUnbound)));
  }
}

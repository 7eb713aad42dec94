package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.stream.Collectors;
import org.apache.pekko.Version;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.Materializer;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The streams hand out Pekko's own {@code Tcp.IncomingConnection}, {@code Tcp.ServerBinding}
 * and {@code Tcp.OutgoingConnection}, made from Pekko's Scala handles through constructors that
 * are Pekko's internal API. This fails when a Pekko version changes those types (a method added,
 * removed or changed, a constructor gone), saying which: then what the streams hand out must be
 * checked against the new version before the BOM takes it. And each method works on the
 * handles the streams give out.
 */
class TcpTypesTest {
  static ActorSystem<Void> system;

  @BeforeAll
  static void start() {
    system = StreamsTestKit.system("TcpTypesTest", "");
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  /** A type's public methods and constructors, erased: what the streams rely on. */
  private static Set<String> publicApi(Class<?> type) {
    Set<String> api = new TreeSet<>();
    for (Method m : type.getDeclaredMethods()) {
      if (Modifier.isPublic(m.getModifiers()) && !m.isSynthetic()) {
        api.add(m.getReturnType().getName() + " " + m.getName() + params(m.getParameterTypes()));
      }
    }
    for (Constructor<?> c : type.getDeclaredConstructors()) {
      if (Modifier.isPublic(c.getModifiers())) api.add("new" + params(c.getParameterTypes()));
    }
    return api;
  }

  private static String params(Class<?>[] types) {
    return Arrays.stream(types).map(Class::getName).collect(Collectors.joining(", ", "(", ")"));
  }

  private static void assertApi(Class<?> type, String... expected) {
    assertEquals(new TreeSet<>(List.of(expected)), publicApi(type), type.getName()
        + " changed in Pekko " + Version.current() + ": check what TcpHandles makes of it");
  }

  @Test
  void pekkosTcpHandlesAreTheOnesTheStreamsAreBuiltFor() {
    String scalaIncoming = "org.apache.pekko.stream.scaladsl.Tcp$IncomingConnection";
    assertApi(Tcp.IncomingConnection.class,
        "java.net.InetSocketAddress localAddress()",
        "java.net.InetSocketAddress remoteAddress()",
        "java.lang.Object handleWith(org.apache.pekko.stream.javadsl.Flow,"
            + " org.apache.pekko.actor.ClassicActorSystemProvider)",
        "java.lang.Object handleWith(org.apache.pekko.stream.javadsl.Flow,"
            + " org.apache.pekko.stream.Materializer)",
        "org.apache.pekko.stream.javadsl.Flow flow()",
        "new(" + scalaIncoming + ")");
    assertApi(Tcp.ServerBinding.class,
        "java.net.InetSocketAddress localAddress()",
        "java.util.concurrent.CompletionStage unbind()",
        "java.util.concurrent.CompletionStage whenUnbound()",
        "new(org.apache.pekko.stream.scaladsl.Tcp$ServerBinding)");
    assertApi(Tcp.OutgoingConnection.class,
        "java.net.InetSocketAddress remoteAddress()",
        "java.net.InetSocketAddress localAddress()",
        "new(org.apache.pekko.stream.scaladsl.Tcp$OutgoingConnection)");
    // the Scala handles they wrap, as TcpHandles makes them
    assertTrue(publicApi(org.apache.pekko.stream.scaladsl.Tcp.IncomingConnection.class).contains(
        "new(java.net.InetSocketAddress, java.net.InetSocketAddress,"
            + " org.apache.pekko.stream.scaladsl.Flow)"), "Pekko " + Version.current());
    assertTrue(publicApi(org.apache.pekko.stream.scaladsl.Tcp.OutgoingConnection.class).contains(
        "new(java.net.InetSocketAddress, java.net.InetSocketAddress)"),
        "Pekko " + Version.current());
    assertTrue(publicApi(org.apache.pekko.stream.scaladsl.Tcp.ServerBinding.class).contains(
        "new(java.net.InetSocketAddress, scala.Function0, scala.concurrent.Future)"),
        "Pekko " + Version.current());
  }

  /** Every method of the three, on what the streams hand out. */
  @Test
  void everyMethodWorksOnTheStreamsHandles() throws Exception {
    RdmaStreams rdma = RdmaStreams.get(system);
    CompletableFuture<Tcp.IncomingConnection> first = new CompletableFuture<>();
    CompletableFuture<String> handled = new CompletableFuture<>();
    CompletionStage<Tcp.ServerBinding> bound = rdma.bind(HOST, 0).to(Sink.foreach(c -> {
      if (!first.complete(c)) {
        handled.complete(c.handleWith(Flow.of(ByteString.class), Materializer.matFromSystem(system))
            .toString());
        return;
      }
      Source.<ByteString>empty().via(c.flow()).runWith(Sink.ignore(), system);
    })).run(system);
    Tcp.ServerBinding binding = await(bound);
    int port = binding.localAddress().getPort();
    assertTrue(port > 0, binding.localAddress().toString());

    Tcp.OutgoingConnection out = await(Source.<ByteString>empty()
        .viaMat(rdma.outgoingConnection(HOST, port), org.apache.pekko.stream.javadsl.Keep.right())
        .to(Sink.ignore()).run(system));
    assertEquals(new InetSocketAddress(HOST, port), out.remoteAddress());
    Tcp.IncomingConnection in = await(first);
    assertEquals(out.localAddress(), in.remoteAddress());
    assertEquals(port, in.localAddress().getPort());

    // the second connection through handleWith(flow, materializer); the first's flow() ran
    List<ByteString> back = await(Source.single(ByteString.fromString("x"))
        .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.seq(), system));
    assertEquals(List.of(ByteString.fromString("x")), back);
    assertEquals("NotUsed", await(handled));

    assertTrue(!binding.whenUnbound().toCompletableFuture().isDone());
    await(binding.unbind());
    await(binding.whenUnbound());
  }
}

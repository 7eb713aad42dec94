package dev.pekkordma.streams.tcpdocs;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.LinkedBlockingQueue;
import org.apache.pekko.NotUsed;
import org.apache.pekko.actor.ActorSystem;
import org.apache.pekko.stream.javadsl.*;
import org.apache.pekko.stream.javadsl.Tcp.*;
import org.apache.pekko.util.ByteString;

/**
 * Pekko's Java samples for {@code Tcp} as its documentation shows them (Pekko 1.7.0,
 * docs/src/test/java/jdocs/stream/io/StreamTcpDocTest.java: the echo server, the chat server
 * with its welcome banner, the REPL client), in methods a test calls; around them only what the
 * docs' own test does (the commands the chat server saw, the lines the REPL reads). {@code
 * RdmaDocSample} is this file with each {@code get(system)} of {@code Tcp} made one of {@code
 * RdmaStreams} (and its import), and nothing else: {@code TcpDocSampleTest} checks it.
 */
public final class TcpDocSample implements DocSample {
  private final ActorSystem system;
  private final BlockingQueue<String> commands = new LinkedBlockingQueue<>();
  private final ConcurrentLinkedQueue<String> input = new ConcurrentLinkedQueue<>();

  public TcpDocSample(ActorSystem system) {
    this.system = system;
    input.add("Hello world");
    input.add("What a lovely day");
  }

  private String readLine(String prompt) {
    String s = input.poll();
    return (s == null ? "q" : s);
  }

  @Override
  public BlockingQueue<String> commands() {
    return commands;
  }

  @Override
  public CompletionStage<ServerBinding> echoServer(String host, int port) {
    // #echo-server-simple-bind
    // IncomingConnection and ServerBinding imported from Tcp
    final Source<IncomingConnection, CompletionStage<ServerBinding>> connections =
        Tcp.get(system).bind(host, port);
    // #echo-server-simple-bind

    // #echo-server-simple-handle, run with Sink.foreach (as the chat server is) for its binding
    return connections.to(Sink.foreach(
        connection -> {
          System.out.println("New connection from: " + connection.remoteAddress());

          final Flow<ByteString, ByteString, NotUsed> echo =
              Flow.of(ByteString.class)
                  .via(
                      Framing.delimiter(
                          ByteString.fromString("\n"), 256, FramingTruncation.DISALLOW))
                  .map(ByteString::utf8String)
                  .map(s -> s + "!!!\n")
                  .map(ByteString::fromString);

          connection.handleWith(echo, system);
        })).run(system);
  }

  @Override
  public CompletionStage<List<String>> echoClient(String host, int port, List<String> lines) {
    return Source.from(lines)
        .map(line -> ByteString.fromString(line + "\n"))
        .via(Tcp.get(system).outgoingConnection(host, port))
        .via(Framing.delimiter(ByteString.fromString("\n"), 256, FramingTruncation.DISALLOW))
        .map(ByteString::utf8String)
        .runWith(Sink.seq(), system);
  }

  @Override
  public CompletionStage<ServerBinding> chatServer(String host, int port) {
    final Source<IncomingConnection, CompletionStage<ServerBinding>> connections =
        Tcp.get(system).bind(host, port);
    final CompletionStage<ServerBinding> bindingCS =
        // #welcome-banner-chat-server
        connections
            .to(
                Sink.foreach(
                    (IncomingConnection connection) -> {
                      // server logic, parses incoming commands
                      final Flow<String, String, NotUsed> commandParser =
                          Flow.<String>create()
                              .takeWhile(elem -> !elem.equals("BYE"))
                              .map(elem -> elem + "!");

                      final String welcomeMsg =
                          "Welcome to: "
                              + connection.localAddress()
                              + " you are: "
                              + connection.remoteAddress()
                              + "!";

                      final Source<String, NotUsed> welcome = Source.single(welcomeMsg);
                      final Flow<ByteString, ByteString, NotUsed> serverLogic =
                          Flow.of(ByteString.class)
                              .via(
                                  Framing.delimiter(
                                      ByteString.fromString("\n"), 256, FramingTruncation.DISALLOW))
                              .map(ByteString::utf8String)
                              // #welcome-banner-chat-server
                              .map(
                                  command -> {
                                    commands.add(command);
                                    return command;
                                  })
                              // #welcome-banner-chat-server
                              .via(commandParser)
                              .merge(welcome)
                              .map(s -> s + "\n")
                              .map(ByteString::fromString);

                      connection.handleWith(serverLogic, system);
                    }))
            .run(system);
    // #welcome-banner-chat-server
    return bindingCS;
  }

  @Override
  public CompletionStage<OutgoingConnection> replClient(String host, int port) {
    final Flow<ByteString, ByteString, CompletionStage<OutgoingConnection>> connection =
        Tcp.get(system).outgoingConnection(host, port);
    // #repl-client
    final Flow<String, ByteString, NotUsed> replParser =
        Flow.<String>create()
            .takeWhile(elem -> !elem.equals("q"))
            .concat(Source.single("BYE")) // will run after the original flow completes
            .map(elem -> ByteString.fromString(elem + "\n"));

    final Flow<ByteString, ByteString, NotUsed> repl =
        Flow.of(ByteString.class)
            .via(Framing.delimiter(ByteString.fromString("\n"), 256, FramingTruncation.DISALLOW))
            .map(ByteString::utf8String)
            .map(
                text -> {
                  System.out.println("Server: " + text);
                  return "next";
                })
            .map(elem -> readLine("> "))
            .via(replParser);

    CompletionStage<OutgoingConnection> connectionCS = connection.join(repl).run(system);
    // #repl-client
    return connectionCS;
  }
}

package dev.pekkordma.streams.tcpdocs;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.stream.javadsl.Tcp.OutgoingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;

/** Pekko's Tcp samples as a test runs them, on Tcp or with the one line changed. */
public interface DocSample {
  /** The echo server: each line back with "!!!". */
  CompletionStage<ServerBinding> echoServer(String host, int port);

  /** Sends {@code lines} to the echo server; what came back, once it closed. */
  CompletionStage<List<String>> echoClient(String host, int port, List<String> lines);

  /** The chat server: a welcome banner, then each command back with "!", until BYE. */
  CompletionStage<ServerBinding> chatServer(String host, int port);

  /** The REPL client: answers each line of the server's with the next line it reads. */
  CompletionStage<OutgoingConnection> replClient(String host, int port);

  /** The commands the chat server received, in order. */
  BlockingQueue<String> commands();
}

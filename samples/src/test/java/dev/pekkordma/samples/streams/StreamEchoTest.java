package dev.pekkordma.samples.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/** The streams sample's two sides: every message back as sent, both sides' metrics printed. */
class StreamEchoTest {
  @Test
  void theClientGetsEveryMessageBackAndBothSidesReportTheirMetrics() throws Exception {
    ByteArrayOutputStream serverOut = new ByteArrayOutputStream();
    PrintStream so = new PrintStream(serverOut, true, StandardCharsets.UTF_8);
    CompletableFuture<Integer> server = CompletableFuture.supplyAsync(() -> StreamEcho.run(
        new String[] {"server", "--bind", "127.0.0.1:0", "--clients", "1", "--provider", "soft"},
        so, so));
    Pattern listening = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");
    Matcher m = listening.matcher("");
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (!m.find() && System.nanoTime() < deadline) {
      Thread.sleep(20);
      m = listening.matcher(serverOut.toString(StandardCharsets.UTF_8));
    }
    String port = m.group(1);
    ByteArrayOutputStream clientOut = new ByteArrayOutputStream();
    PrintStream co = new PrintStream(clientOut, true, StandardCharsets.UTF_8);
    int exit = StreamEcho.run(new String[] {"client", "--connect", "127.0.0.1:" + port, "-n",
        "5000", "--size", "100", "--provider", "soft"}, co, co);
    String client = clientOut.toString(StandardCharsets.UTF_8);
    assertEquals(0, exit, client);
    assertTrue(client.contains("echoed 5000 of 5000 messages of 100 bytes"), client);
    assertTrue(client.contains("0 not as sent"), client);
    assertTrue(client.contains("sent 5000 messages (500000 bytes), received 5000"), client);
    assertEquals(0, server.get(30, TimeUnit.SECONDS), serverOut.toString(StandardCharsets.UTF_8));
    assertTrue(serverOut.toString(StandardCharsets.UTF_8).contains("closed 1, failed 0"));
  }

  @Test
  void neitherSideIsBadInput() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
    assertEquals(2, StreamEcho.run(new String[0], o, o));
    assertEquals(2, StreamEcho.run(new String[] {"client", "-n", "0"}, o, o));
  }
}

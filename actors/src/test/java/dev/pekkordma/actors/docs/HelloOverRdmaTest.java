package dev.pekkordma.actors.docs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.actors.TestRdma;
import java.net.InetSocketAddress;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** docs/actors.md's example runs as the page says: the server receives what the client sent. */
class HelloOverRdmaTest {
  static final ActorTestKit kit = ActorTestKit.create("HelloOverRdmaTest",
      TestRdma.config(TestRdma.CM_DEVICE, "pekko-rdma.soft.devices = [\"soft0\"]"));

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void theServerReceivesWhatTheClientSent() {
    TestProbe<InetSocketAddress> bound = kit.createTestProbe();
    TestProbe<String> inbox = kit.createTestProbe();
    kit.spawn(HelloOverRdma.server(new InetSocketAddress(TestRdma.CM_HOST, 0), bound.getRef(),
        inbox.getRef()));
    InetSocketAddress address = bound.receiveMessage(TestRdma.WAIT);
    TestProbe<Object> watcher = kit.createTestProbe();
    var client = kit.spawn(HelloOverRdma.client(address, "hello over RDMA"));
    assertEquals("hello over RDMA", inbox.receiveMessage(TestRdma.WAIT));
    watcher.expectTerminated(client, TestRdma.WAIT);
  }
}

package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.HOST;
import static dev.pekkordma.streams.StreamsTestKit.NATIVE;
import static dev.pekkordma.streams.StreamsTestKit.WAIT;
import static dev.pekkordma.streams.StreamsTestKit.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.testing.RxeLink;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Source;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A real device removal under a running connection, on the native provider: {@code rdma link
 * delete} of the CM device (rxe0) while a client streams to a server on it. Both ends fail naming
 * the peer, the binding ends, and the kernel's removal finishing proves the streams layer closed
 * every context of the device it held (its QPs, CQs, registrations, PD and channel). Once the
 * device is back, a new connection works. The actors' DeviceRemovalTest does the same for the
 * actor tree.
 */
class DeviceRemovalTest {
  private static final String DEVICE = System.getProperty("pekko-rdma.test.cm-device", "rxe0");
  private static final String NETDEV = System.getProperty("pekko-rdma.test.cm-netdev", "dummy0");
  private static final ByteString CHUNK = ByteString.fromArray(new byte[16 * 1024]);

  @Test
  void aRemovedDeviceFailsItsConnectionsFreesWhatTheyHeldAndConnectionsWorkWhenItIsBack()
      throws Exception {
    Assumptions.assumeTrue(NATIVE, "removes a real device: native only");
    Assumptions.assumeTrue(Boolean.getBoolean("pekko-rdma.test.remove-device"), "removes "
        + DEVICE + " for a while; -Dpekko-rdma.test.remove-device=true runs it"
        + " (native/softroce/run-native-tests.sh does, near the end)");
    ActorSystem<Void> system = StreamsTestKit.system("StreamsDeviceRemoval", "");
    try {
      RdmaStreams rdma = StreamsTestKit.streams(system);
      AtomicInteger received = new AtomicInteger();
      ServerBinding binding = await(rdma.bindAndHandle(Flow.fromSinkAndSource(
          Sink.foreach(b -> received.incrementAndGet()), Source.never()), HOST, 0));
      int port = binding.localAddress().getPort();
      CompletionStage<Done> client = Source.repeat(CHUNK).throttle(500, Duration.ofSeconds(1))
          .via(rdma.outgoingConnection(HOST, port)).runWith(Sink.ignore(), system);
      long deadline = System.nanoTime() + WAIT.toNanos();
      while (received.get() < 50 && System.nanoTime() < deadline) Thread.sleep(10);
      assertTrue(received.get() >= 50, "the transfer is under way");

      Process delete = RxeLink.delete(DEVICE);
      ExecutionException e = assertThrows(ExecutionException.class, () -> await(client));
      RdmaStreamException lost = assertInstanceOf(RdmaStreamException.class, e.getCause());
      assertEquals(port, lost.peer().getPort(), lost.getMessage());
      assertTrue(lost.reason().contains("DEVICE_REMOVAL") || lost.reason().contains("disconnected")
          || lost.reason().contains("error state"), lost.reason());
      await(binding.whenUnbound()); // the listener goes with its device
      assertTrue(delete.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS),
          "rdma link delete " + DEVICE + " still waits for a context of it to close");
      assertEquals(0, delete.exitValue(), RxeLink.output(delete));
      ResourceCounts left = rdma.liveResources();
      assertEquals(new ResourceCounts(left.contexts(), 0, 0, 0, 0, 0, 0, 0, 0), left,
          "nothing of the removed device's connections is left");

      RxeLink.add(DEVICE, NETDEV, WAIT);
      // back: rdma_cm finds the new rxe0 once its address's GID is there
      List<ByteString> echoed = null;
      deadline = System.nanoTime() + WAIT.toNanos();
      while (echoed == null) {
        try {
          ServerBinding again = await(rdma.bindAndHandle(Flow.of(ByteString.class), HOST, 0));
          echoed = await(Source.single(ByteString.fromString("back"))
              .via(rdma.outgoingConnection(HOST, again.localAddress().getPort()))
              .runWith(Sink.seq(), system));
          await(again.unbind());
        } catch (ExecutionException notYet) {
          if (System.nanoTime() > deadline) throw notYet;
          Thread.sleep(200);
        }
      }
      assertEquals(List.of(ByteString.fromString("back")), echoed);
    } finally {
      system.terminate();
      RxeLink.restore(DEVICE, NETDEV, WAIT);
    }
  }
}

package dev.pekkordma.runtime.internal.datagram;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The datagram endpoint core's own rules, without a facade: completions sorted by their work
 * request ids, a receive slot read only when its length fits (and posted again either way),
 * refusals naming their limit, and everything freed.
 */
class UdEndpointTest {
  private final ActorSystem<Void> system =
      ActorSystem.create(Behaviors.empty(), "UdEndpointTest", ConfigFactory.load());
  private final RdmaRuntime runtime = RdmaRuntime.get(system);
  private final RdmaProvider provider = runtime.provider();
  private final ResourceCounts before = provider.liveResources();
  private final DeviceContext context = provider.open(provider.devices().get(0).name());
  private final DatagramSettings settings = DatagramSettings.from(ConfigFactory.parseString(
      "test.datagram = ${pekko-rdma.datagram-defaults}\n"
          + "test.datagram.max-pending-sends = 3").withFallback(ConfigFactory.load()).resolve(),
      "test.datagram");
  private final UdEndpoint core = new UdEndpoint(runtime.cm(), settings, key -> {});
  private final UdResources res = core.open(runtime, context, 1, false, "the test endpoint",
      settings.maxPeers(), (hub, n) -> hub.createCq(n, () -> {}),
      (pd, attributes) -> UdResources.verbsQp(pd, attributes, 1), qp -> qp::close);
  private final List<String> sorted = new ArrayList<>();
  private final UdEndpoint.Completions record = new UdEndpoint.Completions() {
    @Override
    public void sent(int slot, int status) {
      sorted.add("sent " + slot + " " + status);
    }

    @Override
    public void received(int slot, int byteLength, int flags, int sourceQp) {
      sorted.add("received " + slot + " " + byteLength);
    }
  };

  @AfterEach
  void freeEverything() throws Exception {
    core.close();
    // the hub closes the CQ, then its completion channel, on its own thread: until it has, the
    // context is busy (EBUSY); a channel left open fails the test at the deadline
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (true) {
      try {
        context.close();
        break;
      } catch (RdmaException e) {
        if (e.errno() != RdmaException.EBUSY || System.nanoTime() > deadline) throw e;
        Thread.sleep(10);
      }
    }
    system.terminate();
    system.getWhenTerminated().toCompletableFuture().get(10, TimeUnit.SECONDS);
    ResourceCounts after = provider.liveResources();
    // the CM's own contexts and ids are the dispatcher's; the endpoint's verbs objects are gone
    assertEquals(List.of(before.pds(), before.mrs(), before.cqs(), before.qps(), before.srqs(),
        before.ahs()), List.of(after.pds(), after.mrs(), after.cqs(), after.qps(), after.srqs(),
        after.ahs()), "the endpoint freed what it opened: " + after);
  }

  @Test
  void completionsGoWhereTheirIdsSayAndAnErrorNamesWhy() {
    assertNull(core.sort(UdResources.SEND_TAG + 2, 0, 0, 0, 0, record));
    assertNull(core.sort(1, 0, 100, 0, 7, record));
    assertNull(core.sort(res.receives, 0, 100, 0, 7, record), "no slot of ours: ignored");
    assertNull(core.sort(-1, 0, 100, 0, 7, record), "no slot of ours: ignored");
    String send = core.sort(UdResources.SEND_TAG, 5, 0, 0, 0, record);
    String receive = core.sort(0, 5, 0, 0, 0, record);
    assertEquals(List.of("sent 2 0", "received 1 100", "sent 0 5"), sorted);
    assertTrue(send.startsWith("a send completed with"), send);
    assertTrue(receive.startsWith("a receive completed with"), receive);
  }

  @Test
  void aSlotIsReadOnlyWhenItsLengthFitsAndIsPostedAgainEitherWay() {
    assertNull(core.take(0, res.receiveSize + 1, 0), "longer than the slot");
    assertNull(core.take(1, DatagramFormat.GRH_BYTES - 1, 0), "shorter than the GRH");
    assertEquals(2, core.malformed());
    assertEquals(2, res.receivesQueued(), "both slots wait to be posted again");
    assertEquals(10, core.take(2, DatagramFormat.GRH_BYTES + 10, 0).size());
    assertEquals(0, core.senderHi(), "no GRH flag: no sender GID");
    assertEquals(3, res.receivesQueued());
  }

  @Test
  void refusalsNameTheirLimit() {
    String over = core.refusal(res.mtu + 1, 0, "to x");
    assertTrue(over.contains(String.valueOf(res.mtu)) && over.endsWith("(to x)"), over);
    assertNull(core.refusal(res.mtu, 2, "to x"));
    String full = core.refusal(1, 3, "to x");
    assertTrue(full.contains("test.datagram.max-pending-sends"), full);
    var unbound = runtime.cm().createId("unbound", e -> {}, x -> {});
    try {
      var wildcard = assertThrows(IllegalArgumentException.class,
          () -> UdEndpoint.deviceOf(unbound));
      assertTrue(wildcard.getMessage().contains("no RDMA device"), wildcard.getMessage());
    } finally {
      runtime.cm().destroy(unbound, false);
    }
  }
}

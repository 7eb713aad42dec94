package dev.pekkordma.streams;

import static dev.pekkordma.streams.HostileFixture.SLOTS;
import static dev.pekkordma.streams.HostileFixture.SLOT_SIZE;
import static dev.pekkordma.streams.HostileFixture.assertFailsNaming;
import static dev.pekkordma.streams.HostileWire.END;
import static dev.pekkordma.streams.HostileWire.data;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.pekkordma.cm.CmEventType;
import java.net.InetSocketAddress;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The bulk receivers under attack: the single-connection sources, whose first client is the
 * only one (a copying one, and the zero-copy one that lends its ring to the application).
 */
class HostileBulkTest {
  static HostileFixture fx;
  static RdmaStreamSettings bulk;

  @BeforeAll
  static void start() throws Exception {
    HostileFixture.assumeSoft();
    fx = new HostileFixture("HostileBulkTest", "");
    bulk = fx.rdma.bulkSettings().withBufferSize(SLOT_SIZE).withReceiveBuffers(SLOTS);
  }

  @AfterEach
  void afterAttack() throws Exception {
    fx.afterAttack();
  }

  @AfterAll
  static void stop() throws Exception {
    if (fx != null) fx.close();
  }

  private static InetSocketAddress at(CompletionStage<ServerBinding> binding) throws Exception {
    return new InetSocketAddress(StreamsTestKit.HOST,
        StreamsTestKit.await(binding).localAddress().getPort());
  }

  @Test
  void aBulkSourceRefusesAClientWithATruncatedRing() throws Exception {
    Pair<CompletionStage<ServerBinding>, CompletionStage<List<ByteString>>> rx = fx.rdma
        .bulkSource(StreamsTestKit.HOST, 0, bulk).toMat(Sink.seq(), Keep.both()).run(fx.system);
    HostilePeer peer = fx.connect(at(rx.first()), p -> Arrays.copyOf(p.honestPrivateData(), 12));
    assertNotNull(peer.refusal());
    assertEquals(CmEventType.REJECTED, peer.refusal().type());
    assertFailsNaming(rx.second(), peer.localAddress(), "accepting", "got 12");
  }

  /** The zero-copy source lends slots as they are: a write longer than one is refused first. */
  @Test
  void aBufferSourceRefusesAWriteLongerThanASlot() throws Exception {
    Pair<CompletionStage<ServerBinding>, CompletionStage<List<ReceivedBuffer>>> rx = fx.rdma
        .bulkBufferSource(StreamsTestKit.HOST, 0, bulk).toMat(Sink.seq(), Keep.both())
        .run(fx.system);
    HostilePeer peer = fx.connect(at(rx.first()), HostilePeer::honestPrivateData);
    peer.writeSlot(0, new byte[SLOT_SIZE + 1], data(END, 0));
    assertFailsNaming(rx.second(), peer.localAddress(), "protocol error",
        (SLOT_SIZE + 1) + " bytes");
  }

  /** Buffers the application holds are not credited: a write beyond them is refused. */
  @Test
  void aBufferSourceRefusesWritesIntoSlotsItStillLends() throws Exception {
    Pair<CompletionStage<ServerBinding>, CompletionStage<List<ReceivedBuffer>>> rx = fx.rdma
        .bulkBufferSource(StreamsTestKit.HOST, 0, bulk).toMat(Sink.seq(), Keep.both())
        .run(fx.system);
    HostilePeer peer = fx.connect(at(rx.first()), HostilePeer::honestPrivateData);
    for (int i = 0; i <= SLOTS; i++) peer.writeSlot(i % SLOTS, new byte[8], data(END, 0));
    assertFailsNaming(rx.second(), peer.localAddress(), "protocol error",
        "more writes than the credits");
  }
}

package dev.pekkordma.streams;

import static dev.pekkordma.streams.StreamsTestKit.await;
import static dev.pekkordma.streams.StreamsTestKit.awaitResources;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WrOpcode;
import java.util.List;
import java.util.concurrent.CompletionStage;
import org.apache.pekko.Done;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.japi.Pair;
import org.apache.pekko.stream.javadsl.Keep;
import org.apache.pekko.stream.javadsl.Sink;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A CQ's completions as a source, fed by a poller thread through a bounded queue. */
class CompletionSourceTest {
  static ActorSystem<Void> system;
  static RdmaStreams rdma;

  @BeforeAll
  static void start() throws InterruptedException {
    system = StreamsTestKit.system("CompletionSourceTest", "");
    rdma = StreamsTestKit.streams(system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  @Test
  void completionsOfAQpArriveInOrderThroughASmallBuffer() throws Exception {
    ResourceCounts start = rdma.liveResources();
    RdmaProvider provider = RdmaRuntime.get(system).provider();
    int access = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
    int n = 300;
    try (DeviceContext ctx = provider.open(StreamsTestKit.VERBS_DEVICE);
        ProtectionDomain pd = ctx.allocPd();
        OffHeapBuffer memory = OffHeapBuffer.allocate(64 * 1024);
        MemoryRegion mr = pd.registerMemory(memory, access);
        CompletionChannel channel = ctx.createCompletionChannel();
        CompletionQueue sendCq = ctx.createCq(512, channel);
        CompletionQueue recvCq = ctx.createCq(64, null);
        SendRequests wrs = new SendRequests(64, 1)) {
      QueuePair a = pd.createQp(QpInitAttributes.of(QpType.RC, sendCq, recvCq).maxSendWr(128));
      QueuePair b = pd.createQp(QpInitAttributes.of(QpType.RC, recvCq, recvCq));
      AddressVector av = AddressVector.global(ctx.queryGid(1, StreamsTestKit.GID_INDEX),
          StreamsTestKit.GID_INDEX, 1);
      for (QueuePair[] p : new QueuePair[][] {{a, b}, {b, a}}) {
        p[0].modify(QpAttributes.toInit(1, access));
        p[0].modify(QpAttributes.toRtr(av, p[1].qpNum(), 0, Mtu.MTU_4096));
        p[0].modify(QpAttributes.toRts(0));
      }
      // a buffer of 16 for 300 completions: the poller takes only what fits
      Pair<CompletionStage<Done>, CompletionStage<List<WorkCompletion>>> run =
          rdma.completions(sendCq, 16).take(n).toMat(Sink.seq(), Keep.both()).run(system);
      for (int posted = 0; posted < n; ) {
        wrs.clear();
        for (int i = 0; i < 60 && posted < n; i++, posted++) {
          wrs.add(posted, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, 0, 512)
              .rdma(mr.address() + 1024, mr.rkey());
        }
        a.postSend(wrs);
        Thread.sleep(20); // the send queue holds 128
      }
      List<WorkCompletion> got = await(run.second());
      assertEquals(n, got.size());
      for (int i = 0; i < n; i++) {
        WorkCompletion wc = got.get(i);
        assertEquals(i, wc.wrId());
        assertEquals(WcStatus.SUCCESS, wc.status());
        assertEquals(WcOpcode.RDMA_WRITE, wc.opcode());
        assertEquals(a.qpNum(), wc.qpNum());
      }
      await(run.first()); // the poller has stopped: the CQ may go
      a.close();
      b.close();
    }
    awaitResources(rdma, start);
  }
}

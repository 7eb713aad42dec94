package dev.pekkordma.cluster;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Frames that really travel: an RC connection made through the software provider's CM between
 * a sender and a receiver, with the receiver's receives in registered memory of the size a
 * member's receives have. The sender posts whatever bytes it is given as SENDs; {@link #take}
 * hands back what each receive completion reported (its status, its length, and a view of the
 * receive buffer the bytes were placed in), for the cluster's receive path to judge.
 */
final class SoftWire implements AutoCloseable {
  static final Duration T = Duration.ofSeconds(5);
  static final int SLOTS = 32;
  static final int SEND_SLOT = 8192;

  /** One receive completion: {@code receive} views the whole receive buffer. */
  record Arrival(WcStatus status, int length, ByteBuffer receive) {}

  private final RdmaProvider provider;
  private final CmEventChannel channel;
  private final CmId listener;
  private final int receiveSize;
  private final Side sender;
  private final Side receiver;
  private final ResourceCounts before;

  /** One end: its id, PD, CQ (sends and receives on one) and registered memory. */
  private static final class Side {
    final CmId id;
    ProtectionDomain pd;
    CompletionQueue cq;
    OffHeapBuffer memory;
    MemoryRegion mr;

    Side(CmId id) {
      this.id = id;
    }

    void open(int bytes) {
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(4 * SLOTS, null);
      memory = OffHeapBuffer.allocate(bytes);
      mr = pd.registerMemory(memory, Access.LOCAL_WRITE);
      id.createQp(pd, QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(SLOTS).maxRecvWr(SLOTS));
    }

    void close() {
      if (id.qp() != null) id.destroyQp();
      if (mr != null) mr.close();
      if (memory != null) memory.close();
      if (cq != null) cq.close();
      if (pd != null) pd.close();
      id.close();
    }
  }

  private final SendRequests sends = new SendRequests(SLOTS, 1);
  private final RecvRequests recvs = new RecvRequests(SLOTS, 1);
  private final WorkCompletions wcs = new WorkCompletions(4 * SLOTS);

  /** A provider of its own, for one connection after another. */
  static RdmaProvider provider() {
    return RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
  }

  /** Connects a sender to a receiver whose {@code depth} receives take {@code receiveSize}. */
  SoftWire(RdmaProvider provider, int receiveSize, int depth) {
    this.provider = provider;
    this.receiveSize = receiveSize;
    before = provider.liveResources();
    channel = provider.createCmEventChannel();
    listener = channel.createId("receiver-listener");
    listener.bind(new InetSocketAddress("127.0.0.1", 0));
    listener.listen(1);
    sender = new Side(channel.createId("sender"));
    sender.id.resolveAddress(null, listener.localAddress(), T);
    await(CmEventType.ADDR_RESOLVED);
    sender.id.resolveRoute(T);
    await(CmEventType.ROUTE_RESOLVED);
    sender.open(SLOTS * SEND_SLOT);
    sender.id.connect(ConnectionParameters.defaults());
    receiver = new Side(await(CmEventType.CONNECT_REQUEST).id());
    receiver.open(depth * receiveSize);
    recvs.clear();
    for (int i = 0; i < depth; i++) {
      recvs.add(i).sge(receiver.mr, (long) i * receiveSize, receiveSize);
    }
    receiver.id.qp().postRecv(recvs);
    receiver.id.accept(ConnectionParameters.defaults());
    await(CmEventType.ESTABLISHED);
    await(CmEventType.ESTABLISHED);
  }

  private CmEvent await(CmEventType type) {
    long deadline = System.nanoTime() + T.toNanos();
    List<CmEvent> others = new ArrayList<>();
    while (System.nanoTime() < deadline) {
      CmEvent e = channel.awaitEvent(Duration.ofMillis(50));
      if (e == null) continue;
      if (e.type() == type) return e;
      others.add(e);
    }
    throw new AssertionError("no " + type + " within " + T + "; saw " + others);
  }

  /** Posts each frame as a SEND (a zero-length one has no gather element). */
  void send(List<byte[]> frames) {
    sends.clear();
    for (int i = 0; i < frames.size(); i++) {
      byte[] f = frames.get(i);
      sends.add(1000 + i, WrOpcode.SEND, SendRequests.SIGNALED);
      if (f.length > 0) {
        sender.memory.put((long) i * SEND_SLOT, f, 0, f.length);
        sends.sge(sender.mr, (long) i * SEND_SLOT, f.length);
      }
    }
    sender.id.qp().postSend(sends);
  }

  /**
   * The next {@code n} receive completions, in order; fewer if none comes for a while (a send
   * the receiver refused puts both QPs in error: what follows is flushed).
   */
  List<Arrival> take(int n) {
    List<Arrival> out = new ArrayList<>();
    long deadline = System.nanoTime() + T.toNanos();
    while (out.size() < n && System.nanoTime() < deadline) {
      int k = receiver.cq.poll(wcs);
      for (int i = 0; i < k; i++) {
        int slot = (int) wcs.wrId(i);
        out.add(new Arrival(wcs.status(i), wcs.byteLength(i),
            receiver.memory.view(slot * receiveSize, receiveSize)));
      }
      if (k == 0) Thread.onSpinWait();
    }
    while (sender.cq.poll(wcs) > 0) {
      // the sends' own completions: not what is judged here
    }
    return out;
  }

  /** Frees everything; the provider's live resources are as before. */
  @Override
  public void close() {
    sender.id.disconnect();
    receiver.close();
    sender.close();
    listener.close();
    for (CmEvent e; (e = channel.awaitEvent(Duration.ofMillis(5))) != null; ) {
      // DISCONNECTED and TIMEWAIT_EXIT: nothing to do
    }
    channel.close();
    sends.close();
    recvs.close();
    wcs.close();
    ResourceCounts after = provider.liveResources();
    if (!after.equals(before)) {
      throw new AssertionError("the wire leaked: " + before + " before, " + after + " after");
    }
  }

}

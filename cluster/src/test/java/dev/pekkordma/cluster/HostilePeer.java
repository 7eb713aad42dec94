package dev.pekkordma.cluster;

import static dev.pekkordma.cluster.TestCluster.WAIT;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cluster.TestCluster.Node;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
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
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.typed.Behavior;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import org.apache.pekko.actor.typed.receptionist.Receptionist;
import org.apache.pekko.cluster.MemberStatus;
import org.apache.pekko.cluster.UniqueAddress;
import org.apache.pekko.cluster.typed.Cluster;
import org.apache.pekko.cluster.typed.Join;

/**
 * A cluster member that does not run RdmaCluster. It joins, registers under the endpoint key and
 * describes an endpoint as a member does, then gets its RDMA connection with the target the way
 * a member would: it connects to the target's CM listener with the hello when its address is the
 * lower, and otherwise takes the target's connection on a CM listener of its own. From then on it
 * posts whatever SENDs a test chooses, straight on the verbs and CM API of a software provider of
 * its own: nothing of the cluster module's code runs on its side.
 *
 * <p>A poller thread takes what the target sends (kept in {@link #received}), reposts the
 * receives and counts the target's grants, so that a test can also behave: {@link #legitData}
 * builds a frame within the credits the target gave.
 */
final class HostilePeer implements AutoCloseable {
  static final int SLOTS = 64;
  static final int RECV_SLOT = 4096;
  /** Sends may be larger than any receive: that is one of the attacks. */
  static final int SEND_SLOT = 16384;

  final ActorTestKit kit;
  final UniqueAddress self;
  final Address address;
  final boolean connects;
  private final Node target;
  private final RdmaProvider provider;
  private final CmEventChannel events;
  private final CmId listener;
  private final List<CmEvent> seen = new ArrayList<>();
  private final SendRequests sendWrs = new SendRequests(SLOTS, 1);
  private final RecvRequests recvWrs = new RecvRequests(SLOTS, 1);
  private final WorkCompletions recvWcs = new WorkCompletions(SLOTS);
  private final WorkCompletions sendWcs = new WorkCompletions(SLOTS);
  private final Object sendLock = new Object();
  private final ArrayDeque<Integer> freeSends = new ArrayDeque<>();

  private CmId id;
  private boolean established;
  private volatile boolean disconnected;
  private ProtectionDomain pd;
  private CompletionQueue sendCq;
  private CompletionQueue recvCq;
  private OffHeapBuffer memory;
  private MemoryRegion mr;
  private Thread poller;
  private volatile boolean polling;

  /** Frames the target sent, in order. */
  final List<byte[]> received = Collections.synchronizedList(new ArrayList<>());
  /** Error statuses of this side's completions (sends and receives). */
  final List<WcStatus> errors = Collections.synchronizedList(new ArrayList<>());
  // guarded by this
  private int credits = 1; // the first frame's implicit credit, then the target's grants
  private int owed;
  private boolean autoCredit;

  private HostilePeer(Node target, Function<HostilePeer, Endpoint> advertise) {
    this.target = target;
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
    events = provider.createCmEventChannel();
    listener = events.createId("hostile-listener");
    listener.bind(new InetSocketAddress("127.0.0.1", 0));
    listener.listen(8);
    kit = ActorTestKit.create(TestCluster.NAME, TestCluster.config(""));
    self = Cluster.get(kit.system()).selfMember().uniqueAddress();
    address = self.address();
    connects = Coordinator.compare(self, targetSelf()) < 0;
    Endpoint endpoint = advertise.apply(this);
    Behavior<Protocol.Request> fake = Behaviors.receive(Protocol.Request.class)
        .onMessage(Protocol.Describe.class, d -> {
          d.replyTo().tell(endpoint);
          return Behaviors.same();
        })
        .onMessage(Protocol.ConnectToMe.class, c -> Behaviors.same())
        .build();
    kit.system().receptionist().tell(Receptionist.register(Protocol.KEY,
        kit.spawn(fake, "fake-endpoint")));
    Cluster.get(kit.system()).manager().tell(Join.create(target.address()));
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (java.util.stream.StreamSupport.stream(
        Cluster.get(target.system()).state().getMembers().spliterator(), false)
        .noneMatch(m -> m.uniqueAddress().equals(self) && m.status() == MemberStatus.up())) {
      if (System.nanoTime() > deadline) throw new AssertionError(self + " did not come up");
      TestCluster.sleep(20);
    }
  }

  /** A hostile member that advertises its CM listener as a member of the target's kind would. */
  static HostilePeer join(Node target) {
    return join(target, p -> p.endpoint(HostilePeer.RECV_SLOT));
  }

  static HostilePeer join(Node target, Function<HostilePeer, Endpoint> advertise) {
    return new HostilePeer(target, advertise);
  }

  /** The endpoint a soft member at this peer's listener would advertise. */
  Endpoint endpoint(int maxMessage) {
    Endpoint t = TestCluster.result(target.rdma.selfEndpoint());
    return new Endpoint(address, self.longUid(), "127.0.0.1", listener.localAddress().getPort(),
        0, t.provider(), t.transport(), t.linkLayer(), 16384, maxMessage, Endpoint.VERSION);
  }

  private UniqueAddress targetSelf() {
    return Cluster.get(target.system()).selfMember().uniqueAddress();
  }

  // ---------------------------------------------------------------- the connection

  /** Gets the connection with the target, sends this side's hello, and waits for the target's. */
  void connect() {
    if (connects) {
      Endpoint t = TestCluster.result(target.rdma.selfEndpoint());
      InetSocketAddress cm = new InetSocketAddress(t.host(), t.port());
      for (int attempt = 1; !established; attempt++) {
        id = events.createId("hostile");
        id.resolveAddress(null, cm, Duration.ofSeconds(2));
        await(e -> e.id() == id && e.type() == CmEventType.ADDR_RESOLVED, "address of " + cm);
        id.resolveRoute(Duration.ofSeconds(2));
        await(e -> e.id() == id && e.type() == CmEventType.ROUTE_RESOLVED, "route to " + cm);
        setUp(id);
        id.connect(ConnectionParameters.withPrivateData(ConnectPrivateData.of(self.longUid())));
        CmEvent e = await(x -> x.id() == id && x.type() != CmEventType.CONNECT_REQUEST,
            "the target's answer");
        if (e.type() == CmEventType.ESTABLISHED) {
          established = true;
        } else if (attempt >= 5) {
          throw new AssertionError("the target did not take the connection: " + e);
        } else {
          tearDown();
          TestCluster.sleep(200);
        }
      }
    } else {
      long targetUid = targetSelf().longUid();
      CmEvent req = await(e -> e.type() == CmEventType.CONNECT_REQUEST
          && Long.valueOf(targetUid).equals(ConnectPrivateData.uid(e.privateData())),
          "the target's connection request");
      id = req.id();
      setUp(id);
      id.accept(ConnectionParameters.withPrivateData(ConnectPrivateData.of(self.longUid())));
      await(e -> e.id() == id && e.type() == CmEventType.ESTABLISHED, "ESTABLISHED");
      established = true;
    }
    startPoller();
    send(credit(takeGrantForHello()));
    target.await(PeerEvent.Connected.class, address);
    awaitCredits(2);
  }

  private synchronized int takeGrantForHello() {
    credits--;
    return SLOTS - 1; // all receives but the one the target's hello takes
  }

  private void setUp(CmId cid) {
    DeviceContext ctx = cid.verbs();
    pd = ctx.allocPd();
    sendCq = ctx.createCq(2 * SLOTS, null);
    recvCq = ctx.createCq(2 * SLOTS, null);
    memory = OffHeapBuffer.allocate((long) SLOTS * (RECV_SLOT + SEND_SLOT));
    mr = pd.registerMemory(memory, Access.LOCAL_WRITE); // this side's memory stays its own
    cid.createQp(pd, QpInitAttributes.of(QpType.RC, sendCq, recvCq).maxSendWr(SLOTS)
        .maxRecvWr(SLOTS));
    recvWrs.clear();
    for (int i = 0; i < SLOTS; i++) recvWrs.add(i).sge(mr, (long) i * RECV_SLOT, RECV_SLOT);
    cid.qp().postRecv(recvWrs);
    freeSends.clear();
    for (int i = 0; i < SLOTS; i++) freeSends.add(i);
  }

  private void tearDown() {
    stopPoller();
    if (id != null && id.qp() != null) id.destroyQp();
    if (mr != null) mr.close();
    if (memory != null) memory.close();
    if (recvCq != null) recvCq.close();
    if (sendCq != null) sendCq.close();
    if (pd != null) pd.close();
    if (id != null) id.close();
    mr = null;
    memory = null;
    recvCq = null;
    sendCq = null;
    pd = null;
    id = null;
  }

  /** The next CM event matching {@code p}; a connection request it does not wait for is kept. */
  private CmEvent await(Predicate<CmEvent> p, String what) {
    for (int i = 0; i < seen.size(); i++) {
      if (p.test(seen.get(i))) return seen.remove(i);
    }
    long deadline = System.nanoTime() + WAIT.toNanos();
    List<CmEvent> others = new ArrayList<>();
    while (true) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError(address + " saw no " + what + " within " + WAIT + "; saw "
            + others);
      }
      CmEvent e = events.awaitEvent(Duration.ofNanos(Math.min(left, 50_000_000L)));
      if (e == null) continue;
      if (e.type() == CmEventType.DISCONNECTED && e.id() == id) disconnected = true;
      if (p.test(e)) return e;
      if (e.type() == CmEventType.CONNECT_REQUEST) {
        refuse(e.id()); // another member (y) connecting: this one talks to the target alone
        continue;
      }
      seen.add(e);
      others.add(e);
    }
  }

  private static void refuse(CmId request) {
    try {
      request.reject("not talking to you".getBytes(StandardCharsets.UTF_8));
    } catch (RuntimeException e) {
      // the other side gave up on it already
    } finally {
      request.close();
    }
  }

  /** Whether the target ended the connection within {@code timeout}. */
  boolean awaitDisconnected(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    while (!disconnected && System.nanoTime() < deadline) {
      for (CmEvent e : seen) {
        if (e.id() == id && e.type() == CmEventType.DISCONNECTED) disconnected = true;
      }
      CmEvent e = events.awaitEvent(Duration.ofMillis(20));
      if (e == null) continue;
      if (e.id() == id && e.type() == CmEventType.DISCONNECTED) {
        disconnected = true;
      } else if (e.type() == CmEventType.CONNECT_REQUEST) {
        refuse(e.id());
      } else {
        seen.add(e);
      }
    }
    return disconnected;
  }

  /** Ends the connection from this side, as a member that goes away mid-stream. */
  void disconnect() {
    id.disconnect();
    awaitDisconnected(WAIT);
  }

  // ---------------------------------------------------------------- frames

  static byte[] frame(int kind, int grant, int channel, byte[] message) {
    return ByteBuffer.allocate(9 + message.length).put((byte) kind).putInt(grant).putInt(channel)
        .put(message).array();
  }

  static byte[] data(int grant, int channel, String text) {
    return frame(1, grant, channel, text.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] credit(int grant) {
    return frame(2, grant, 0, new byte[0]);
  }

  /** A data frame a well-behaved member could send now: it waits for the credit it needs. */
  synchronized byte[] legitData(int channel, String text) {
    awaitCredits(2);
    return data(takeGrant(), channel, text);
  }

  /** Up to {@code max} data frames a well-behaved member could send now (at least one). */
  synchronized List<byte[]> legitData(int channel, String text, int max) {
    awaitCredits(2);
    List<byte[]> frames = new ArrayList<>();
    while (frames.size() < max && credits >= 2) frames.add(data(takeGrant(), channel, text));
    return frames;
  }

  /** Up to {@code max} credit frames a well-behaved member could send now (at least one). */
  synchronized List<byte[]> legitCredits(int max) {
    awaitCredits(1);
    List<byte[]> frames = new ArrayList<>();
    while (frames.size() < max && credits >= 1) frames.add(credit(takeGrant()));
    return frames;
  }

  /** A credit frame a well-behaved member could send now. */
  synchronized byte[] legitCredit() {
    awaitCredits(1);
    return credit(takeGrant());
  }

  private synchronized int takeGrant() {
    credits--;
    int g = owed;
    owed = 0;
    return g;
  }

  synchronized int credits() {
    return credits;
  }

  synchronized void awaitCredits(int n) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (credits < n) {
      long left = deadline - System.nanoTime();
      if (left <= 0) {
        throw new AssertionError(address + " has " + credits + " credits, waited for " + n);
      }
      try {
        wait(Math.max(1, left / 1_000_000));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new AssertionError(e);
      }
    }
  }

  /** Grants back what the target's frames used, as a member does, once half is owed. */
  synchronized void autoCredit(boolean on) {
    autoCredit = on;
  }

  /** Posts the frames as SENDs and waits for their completions; returns their statuses. */
  List<WcStatus> send(List<byte[]> frames) {
    List<WcStatus> statuses = new ArrayList<>();
    synchronized (sendLock) {
      int posted = 0;
      int next = 0;
      while (next < frames.size() || posted > statuses.size()) {
        sendWrs.clear();
        while (next < frames.size() && !freeSends.isEmpty()) {
          int slot = freeSends.poll();
          byte[] f = frames.get(next++);
          long at = (long) SLOTS * RECV_SLOT + (long) slot * SEND_SLOT;
          sendWrs.add(slot, WrOpcode.SEND, SendRequests.SIGNALED);
          if (f.length > 0) { // a zero-length SEND has no gather element at all
            memory.put(at, f, 0, f.length);
            sendWrs.sge(mr, at, f.length);
          }
        }
        if (sendWrs.size() > 0) {
          id.qp().postSend(sendWrs);
          posted += sendWrs.size();
        }
        pollSends(statuses);
      }
    }
    return statuses;
  }

  List<WcStatus> send(byte[]... frames) {
    return send(List.of(frames));
  }

  /**
   * An RDMA WRITE of {@code length} bytes of {@code fill} to the target's memory, as a peer
   * that learnt (or guessed) an address and key would post it; returns its status.
   */
  WcStatus write(long remoteAddress, int rkey, int length, byte fill) {
    synchronized (sendLock) {
      List<WcStatus> statuses = new ArrayList<>();
      while (freeSends.isEmpty()) pollSends(statuses);
      int slot = freeSends.poll();
      long at = (long) SLOTS * RECV_SLOT + (long) slot * SEND_SLOT;
      byte[] bytes = new byte[length];
      java.util.Arrays.fill(bytes, fill);
      memory.put(at, bytes, 0, length);
      sendWrs.clear();
      sendWrs.add(slot, WrOpcode.RDMA_WRITE, SendRequests.SIGNALED).sge(mr, at, length)
          .rdma(remoteAddress, rkey);
      id.qp().postSend(sendWrs);
      statuses.clear();
      while (statuses.isEmpty()) pollSends(statuses);
      return statuses.get(0);
    }
  }

  /** Waits (bounded) for at least one send completion. */
  private void pollSends(List<WcStatus> statuses) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (true) {
      int n = sendCq.poll(sendWcs);
      for (int i = 0; i < n; i++) {
        freeSends.add((int) sendWcs.wrId(i));
        WcStatus s = sendWcs.status(i);
        statuses.add(s);
        if (s != WcStatus.SUCCESS) errors.add(s);
      }
      if (n > 0) return;
      if (System.nanoTime() > deadline) {
        throw new AssertionError(address + ": no send completed within " + WAIT);
      }
      Thread.onSpinWait();
      TestCluster.sleep(1);
    }
  }

  private void startPoller() {
    polling = true;
    poller = new Thread(this::poll, "hostile-poller-" + address.getPort().get());
    poller.setDaemon(true);
    poller.start();
  }

  private void stopPoller() {
    polling = false;
    if (poller != null) {
      try {
        poller.join(WAIT.toMillis());
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      poller = null;
    }
  }

  private void poll() {
    while (polling) {
      int n = recvCq.poll(recvWcs);
      if (n == 0) {
        TestCluster.sleep(1);
        continue;
      }
      recvWrs.clear();
      for (int i = 0; i < n; i++) {
        int slot = (int) recvWcs.wrId(i);
        if (!recvWcs.ok(i)) {
          errors.add(recvWcs.status(i));
          continue;
        }
        byte[] f = new byte[recvWcs.byteLength(i)];
        memory.get((long) slot * RECV_SLOT, f, 0, f.length);
        received.add(f);
        synchronized (this) {
          if (f.length >= 5) credits += ByteBuffer.wrap(f).getInt(1);
          owed++;
          notifyAll();
        }
        recvWrs.add(slot).sge(mr, (long) slot * RECV_SLOT, RECV_SLOT);
      }
      if (recvWrs.size() > 0 && !disconnected) {
        try {
          id.qp().postRecv(recvWrs);
        } catch (RuntimeException e) {
          // the QP went to ERR under us: the target is gone
        }
      }
      byte[] grant = null;
      synchronized (this) {
        if (autoCredit && owed >= SLOTS / 2 && credits >= 1) grant = credit(takeGrant());
      }
      if (grant != null) send(grant);
    }
  }

  // ---------------------------------------------------------------- the end

  /** Ends the connection if it is up, frees every resource, and leaves the cluster. */
  @Override
  public void close() {
    try {
      if (established && !disconnected) {
        try {
          id.disconnect();
          awaitDisconnected(Duration.ofSeconds(2));
        } catch (RuntimeException e) {
          // it may be gone already
        }
      }
      tearDown();
      for (CmEvent e; (e = events.awaitEvent(Duration.ofMillis(20))) != null; ) {
        if (e.type() == CmEventType.CONNECT_REQUEST) refuse(e.id());
      }
      listener.close();
      ResourceCounts left = provider.liveResources();
      events.close();
      provider.close();
      sendWrs.close();
      recvWrs.close();
      recvWcs.close();
      sendWcs.close();
      if (left.qps() + left.mrs() + left.cqs() + left.pds() != 0) {
        throw new AssertionError("the hostile peer's own harness leaked: " + left);
      }
    } finally {
      kit.shutdownTestKit();
    }
  }
}

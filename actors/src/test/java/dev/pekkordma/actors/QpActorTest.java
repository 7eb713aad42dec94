package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.actors.QpActor.*;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class QpActorTest {
  static final ActorTestKit kit =
      ActorTestKit.create("QpActorTest", config("pekko-rdma.soft.devices = [\"soft0\"]"));
  static final RdmaExtension rdma = RdmaExtension.get(kit.system());
  static final RdmaProvider provider = rdma.provider();
  static final ResourceCounts idle = counts(1, 0, 0, 0, 0, 0);

  ActorRef<PdActor.Command> pd;
  BufferPool pool;
  Gid gid;
  TestProbe<Event> owner;

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @BeforeEach
  void setUp() {
    awaitResources(provider, idle);
    pd = allocatePd(kit, rdma.device(DEVICE));
    pool = pool(kit, pd);
    gid = gid(provider, DEVICE);
    owner = kit.createTestProbe();
  }

  @AfterEach
  void tearDown() {
    TestProbe<Object> watcher = kit.createTestProbe();
    pd.tell(PdActor.Close.INSTANCE);
    watcher.expectTerminated(pd, WAIT);
    // the PD's QPs, CQs, pool registrations and the PD itself are gone
    awaitResources(provider, idle);
  }

  private ActorRef<Command> rc() {
    return createQp(kit, pd, QpSpec.rc(), owner.getRef());
  }

  /** The next StateChanged, past async events (the soft QP raises SQ_DRAINED on SQD -> SQD too). */
  private void expectState(QpState from, QpState to) {
    Event e = owner.receiveMessage(WAIT);
    while (e instanceof AsyncEventReceived) e = owner.receiveMessage(WAIT);
    StateChanged c = assertInstanceOf(StateChanged.class, e);
    assertEquals(from, c.from(), c.toString());
    assertEquals(to, c.to(), c.toString());
  }

  @Test
  void everyLegalTransitionThroughTheActor() {
    ActorRef<Command> a = rc();
    ActorRef<Command> b = rc();
    int qa = state(kit, a).qpNum();
    int qb = state(kit, b).qpNum();
    assertEquals(QpState.RESET, state(kit, a).state());

    assertEquals(new Transitioned(qa, QpState.RESET, QpState.INIT),
        transition(kit, a, QpAttributes.toInit(1, ACCESS)));
    expectState(QpState.RESET, QpState.INIT);
    // INIT -> INIT changes attributes only, and no StateChanged follows
    assertEquals(new Transitioned(qa, QpState.INIT, QpState.INIT),
        transition(kit, a, new QpAttributes().state(QpState.INIT).accessFlags(ACCESS)));
    transition(kit, a, QpAttributes.toRtr(AddressVector.global(gid, GID_INDEX, 1), qb, 0, MTU));
    expectState(QpState.INIT, QpState.RTR);
    transition(kit, a, QpAttributes.toRts(0));
    expectState(QpState.RTR, QpState.RTS);
    transition(kit, a, new QpAttributes().state(QpState.RTS).minRnrTimer(10));
    transition(kit, a, new QpAttributes().state(QpState.SQD).sqdAsyncNotify(true));
    expectState(QpState.RTS, QpState.SQD);
    // the drained send queue's event reaches the QP's owner
    assertEquals(new AsyncEventReceived(qa, AsyncEventType.SQ_DRAINED),
        owner.expectMessageClass(AsyncEventReceived.class, WAIT));
    transition(kit, a, new QpAttributes().state(QpState.SQD).timeout(12));
    transition(kit, a, new QpAttributes().state(QpState.RTS));
    expectState(QpState.SQD, QpState.RTS);
    transition(kit, a, new QpAttributes().state(QpState.ERR));
    expectState(QpState.RTS, QpState.ERR);
    transition(kit, a, new QpAttributes().state(QpState.RESET));
    expectState(QpState.ERR, QpState.RESET);
    // to RESET from anywhere, to ERR from anywhere but RESET (the kernel's table)
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    expectState(QpState.RESET, QpState.INIT);
    transition(kit, a, new QpAttributes().state(QpState.ERR));
    expectState(QpState.INIT, QpState.ERR);
    transition(kit, a, new QpAttributes().state(QpState.RESET));
    expectState(QpState.ERR, QpState.RESET);
    assertInstanceOf(TransitionRejected.class,
        modify(kit, a, new QpAttributes().state(QpState.ERR)));
    assertEquals(QpState.RESET, state(kit, a).state());
  }

  @Test
  void illegalTransitionsAreRejectedNamingTheStateAndNeverReachVerbs() {
    ActorRef<Command> a = rc();
    int qa = state(kit, a).qpNum();
    ModifyResult r = modify(kit, a, QpAttributes.toRts(0));
    TransitionRejected rej = assertInstanceOf(TransitionRejected.class, r);
    assertEquals(QpState.RESET, rej.state());
    assertEquals(QpState.RTS, rej.requested());
    assertTrue(rej.why().contains("RESET -> RTS"), rej.why());

    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    r = modify(kit, a, new QpAttributes().state(QpState.RTR).destQpNum(qa));
    rej = assertInstanceOf(TransitionRejected.class, r);
    assertEquals(QpState.INIT, rej.state());
    assertTrue(rej.why().contains("missing required attributes"), rej.why());
    assertTrue(rej.why().contains("AV"), rej.why());

    r = modify(kit, a, new QpAttributes().state(QpState.INIT).qkey(5));
    assertTrue(assertInstanceOf(TransitionRejected.class, r).why().contains("QKEY"));

    transition(kit, a, new QpAttributes().state(QpState.ERR));
    r = modify(kit, a, new QpAttributes().state(QpState.RTS));
    assertEquals(QpState.ERR, assertInstanceOf(TransitionRejected.class, r).state());
    assertEquals(QpState.ERR, state(kit, a).state());
  }

  @Test
  void aLegalTransitionVerbsRefuseIsAFailureInTheSameState() {
    ActorRef<Command> a = rc();
    ModifyResult r = modify(kit, a, QpAttributes.toInit(2, ACCESS));
    TransitionFailed f = assertInstanceOf(TransitionFailed.class, r);
    assertEquals(QpState.RESET, f.state());
    // soft names "port 2"; native, the verb and its attribute mask (… PORT …) with the errno text
    assertTrue(f.why().toLowerCase().contains("port"), f.why());
    assertEquals(QpState.RESET, state(kit, a).state());
  }

  @Test
  void sendReceiveWriteAndReadCompleteInBatchesAndReturnBuffers() {
    ActorRef<Command> a = rc();
    ActorRef<Command> b = rc();
    connectRc(kit, a, b, gid);
    TestProbe<WorkResult> requester = kit.createTestProbe();
    int free = pool.available();

    List<Work> recvs = new ArrayList<>();
    for (int i = 0; i < 4; i++) recvs.add(new Receive(100 + i, pool.lease()));
    b.tell(new Post(recvs, requester.getRef()));
    List<Work> sends = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      Buffer buf = pool.lease();
      buf.put(0, ("message " + i).getBytes());
      sends.add(new Send(i, buf, 9, i == 3 ? 42 : null));
    }
    a.tell(new Post(sends, requester.getRef()));

    List<Completion> got = new ArrayList<>();
    while (got.size() < 8) {
      got.addAll(requester.expectMessageClass(Completed.class, WAIT).completions());
    }
    for (Completion c : got) {
      assertEquals(WcStatus.SUCCESS, c.status(), c.toString());
      if (c.id() >= 100) {
        assertEquals(WcOpcode.RECV, c.opcode());
        assertEquals(9, c.byteLength());
        assertEquals("message " + (c.id() - 100), new String(c.buffer().bytes(9)));
        assertEquals(c.id() == 103 ? Integer.valueOf(42) : null, c.immediate());
        c.buffer().release();
      } else {
        assertEquals(WcOpcode.SEND, c.opcode());
        assertNull(c.buffer(), "a send's buffer goes back to the pool");
      }
    }
    assertEquals(free, pool.available());

    // one-sided: write into b's buffer, read it back
    Buffer target = pool.lease();
    Buffer src = pool.lease();
    src.put(0, "written".getBytes());
    a.tell(Post.of(new Write(7, src, 7, target.address(), target.rkey(), null),
        requester.getRef()));
    Completion w = requester.expectMessageClass(Completed.class, WAIT).completions().get(0);
    assertEquals(WcStatus.SUCCESS, w.status());
    assertEquals(WcOpcode.RDMA_WRITE, w.opcode());
    assertEquals("written", new String(target.bytes(7)));
    Buffer into = pool.lease();
    a.tell(Post.of(new Read(8, into, 7, target.address(), target.rkey()), requester.getRef()));
    Completion rd = requester.expectMessageClass(Completed.class, WAIT).completions().get(0);
    assertEquals(WcOpcode.RDMA_READ, rd.opcode());
    assertSame(into, rd.buffer());
    assertEquals("written", new String(rd.buffer().bytes(7)));
    rd.buffer().release();
    target.release();
    assertEquals(free, pool.available());
  }

  @Test
  void aRemoteAccessErrorReachesBothOwners() {
    requireFeature(provider, Feature.QP_ACCESS_ERR_EVENT);
    TestProbe<Event> responderOwner = kit.createTestProbe();
    ActorRef<Command> a = rc();
    ActorRef<Command> b = createQp(kit, pd, QpSpec.rc(), responderOwner.getRef());
    connectRc(kit, a, b, gid);
    int qa = state(kit, a).qpNum();
    int qb = state(kit, b).qpNum();
    Buffer target = pool.lease();
    TestProbe<WorkResult> requester = kit.createTestProbe();
    a.tell(Post.of(new Write(1, pool.lease(), 8, target.address(), target.rkey() + 1, null),
        requester.getRef()));
    Completion c = requester.expectMessageClass(Completed.class, WAIT).completions().get(0);
    assertEquals(WcStatus.REM_ACCESS_ERR, c.status());
    assertNull(c.opcode(), "verbs define no opcode for an error");
    // the requester's QP is in ERR; the responder's owner hears QP_ACCESS_ERR and ERR too
    owner.fishForMessage(WAIT, m -> m instanceof StateChanged sc && sc.qpNum() == qa
        && sc.to() == QpState.ERR ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore());
    List<Event> events = new ArrayList<>();
    while (events.size() < 2 || events.stream().noneMatch(e -> e instanceof StateChanged)) {
      Event e = responderOwner.receiveMessage(WAIT);
      if (e instanceof AsyncEventReceived || e.toString().contains("to=ERR")) events.add(e);
    }
    assertTrue(events.contains(new AsyncEventReceived(qb, AsyncEventType.QP_ACCESS_ERR)),
        "" + events);
    assertEquals(QpState.ERR, state(kit, b).state());
    target.release();
  }

  @Test
  void commEstReachesTheOwnerOfAQpInRtr() {
    requireFeature(provider, Feature.COMM_EST_EVENT);
    TestProbe<Event> responderOwner = kit.createTestProbe();
    ActorRef<Command> a = rc();
    ActorRef<Command> b = createQp(kit, pd, QpSpec.rc(), responderOwner.getRef());
    int qa = state(kit, a).qpNum();
    int qb = state(kit, b).qpNum();
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    transition(kit, a, QpAttributes.toRtr(AddressVector.global(gid, GID_INDEX, 1), qb, 0, MTU));
    transition(kit, a, QpAttributes.toRts(0));
    transition(kit, b, QpAttributes.toInit(1, ACCESS));
    transition(kit, b, QpAttributes.toRtr(AddressVector.global(gid, GID_INDEX, 1), qa, 0, MTU));
    TestProbe<WorkResult> requester = kit.createTestProbe();
    b.tell(Post.of(new Receive(1, pool.lease()), requester.getRef()));
    a.tell(Post.of(new Send(2, pool.lease(), 4), requester.getRef()));
    responderOwner.fishForMessage(WAIT, m ->
        m.equals(new AsyncEventReceived(qb, AsyncEventType.COMM_EST))
            ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore());
    int done = 0;
    while (done < 2) {
      for (Completion c : requester.expectMessageClass(Completed.class, WAIT).completions()) {
        assertEquals(WcStatus.SUCCESS, c.status());
        if (c.buffer() != null) c.buffer().release();
        done++;
      }
    }
  }

  @Test
  void postsAStateDoesNotAllowAreRejectedTyped() {
    ActorRef<Command> a = rc();
    TestProbe<WorkResult> requester = kit.createTestProbe();
    Buffer buf = pool.lease();
    a.tell(Post.of(new Receive(1, buf), requester.getRef()));
    PostRejected r = requester.expectMessageClass(PostRejected.class, WAIT);
    assertEquals(QpState.RESET, r.state());
    assertEquals(List.of(1L), r.ids());
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    a.tell(Post.of(new Send(2, buf, 1), requester.getRef()));
    r = requester.expectMessageClass(PostRejected.class, WAIT);
    assertEquals(QpState.INIT, r.state());
    assertTrue(r.why().contains("RTS"), r.why());
    a.tell(Post.of(new Send(3, buf, buf.capacity() + 1), requester.getRef()));
    assertTrue(requester.expectMessageClass(PostRejected.class, WAIT).why().contains("length"));
    buf.release();
    a.tell(Post.of(new Receive(4, buf), requester.getRef()));
    assertTrue(requester.expectMessageClass(PostRejected.class, WAIT).why().contains("not leased"));
  }

  @Test
  void enteringErrReportsEveryOutstandingRequestAsFlushed() {
    ActorRef<Command> a = rc();
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    TestProbe<WorkResult> r1 = kit.createTestProbe();
    TestProbe<WorkResult> r2 = kit.createTestProbe();
    int free = pool.available();
    a.tell(new Post(List.of(new Receive(1, pool.lease()), new Receive(2, pool.lease())),
        r1.getRef()));
    a.tell(Post.of(new Receive(3, pool.lease()), r2.getRef()));
    assertEquals(free - 3, pool.available());
    transition(kit, a, new QpAttributes().state(QpState.ERR));
    // the CQ's flush completions, in as many polls as the hub made of them
    List<Completion> c1 = new java.util.ArrayList<>();
    while (c1.size() < 2) c1.addAll(r1.expectMessageClass(Completed.class, WAIT).completions());
    assertEquals(List.of(1L, 2L), c1.stream().map(Completion::id).sorted().toList());
    for (Completion c : c1) {
      assertEquals(WcStatus.WR_FLUSH_ERR, c.status());
      assertNull(c.buffer());
    }
    Completion c3 = r2.expectMessageClass(Completed.class, WAIT).completions().get(0);
    assertEquals(3L, c3.id());
    assertEquals(WcStatus.WR_FLUSH_ERR, c3.status());
    // reported once each
    r1.expectNoMessage(Duration.ofMillis(100));
    assertEquals(free, pool.available());
    // in ERR new work is flushed at once, without verbs
    a.tell(Post.of(new Receive(4, pool.lease()), r1.getRef()));
    assertEquals(WcStatus.WR_FLUSH_ERR,
        r1.expectMessageClass(Completed.class, WAIT).completions().get(0).status());
    assertEquals(free, pool.available());
  }

  @Test
  void ucSendErrorEntersSqeAndBackToRts() {
    requireFeature(provider, Feature.UC);
    requireFeature(provider, Feature.LOCAL_ERROR_STATUSES);
    ActorRef<Command> a = createQp(kit, pd, QpSpec.of(QpType.UC), owner.getRef());
    ActorRef<Command> b = createQp(kit, pd, QpSpec.of(QpType.UC), owner.getRef());
    int qa = state(kit, a).qpNum();
    int qb = state(kit, b).qpNum();
    for (var pair : List.of(List.of(a, qb), List.of(b, qa))) {
      @SuppressWarnings("unchecked")
      ActorRef<Command> q = (ActorRef<Command>) pair.get(0);
      transition(kit, q, QpAttributes.toInit(1, ACCESS));
      transition(kit, q, new QpAttributes().state(QpState.RTR)
          .addressVector(AddressVector.global(gid, GID_INDEX, 1)).destQpNum((Integer) pair.get(1))
          .rqPsn(0).pathMtu(MTU));
      transition(kit, q, new QpAttributes().state(QpState.RTS).sqPsn(0));
    }
    owner.receiveSeveralMessages(6, WAIT);
    // a buffer registered in another PD: a local protection error on the sender
    ActorRef<PdActor.Command> other = allocatePd(kit, rdma.device(DEVICE));
    Buffer foreign = pool(kit, other).lease();
    TestProbe<WorkResult> requester = kit.createTestProbe();
    a.tell(Post.of(new Send(1, foreign, 8), requester.getRef()));
    Completion c = requester.expectMessageClass(Completed.class, WAIT).completions().get(0);
    assertEquals(WcStatus.LOC_PROT_ERR, c.status());
    expectState(QpState.RTS, QpState.SQE);
    a.tell(Post.of(new Send(2, pool.lease(), 8), requester.getRef()));
    assertEquals(QpState.SQE, requester.expectMessageClass(PostRejected.class, WAIT).state());
    transition(kit, a, new QpAttributes().state(QpState.RTS));
    expectState(QpState.SQE, QpState.RTS);
    other.tell(PdActor.Close.INSTANCE);
  }

  @Test
  void qpFatalReachesTheOwnerAndFlushes() {
    FaultInjection faults = faults(provider);
    ActorRef<Command> a = rc();
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    owner.expectMessageClass(StateChanged.class, WAIT);
    TestProbe<WorkResult> requester = kit.createTestProbe();
    a.tell(Post.of(new Receive(1, pool.lease()), requester.getRef()));
    int qpNum = state(kit, a).qpNum();
    faults.qpFatal(verbsQp(kit, a));
    // the event and the flush race each other to the actor, so any order of these three
    List<Event> events = owner.receiveSeveralMessages(3, WAIT);
    assertTrue(events.contains(new AsyncEventReceived(qpNum, AsyncEventType.QP_FATAL)), "" + events);
    assertTrue(events.stream().anyMatch(e -> e instanceof StateChanged c
        && c.from() == QpState.INIT && c.to() == QpState.ERR), "" + events);
    assertTrue(events.stream().anyMatch(e -> e instanceof Fatal f && !f.restarting()),
        "" + events);
    assertEquals(WcStatus.WR_FLUSH_ERR,
        requester.expectMessageClass(Completed.class, WAIT).completions().get(0).status());
    assertEquals(QpState.ERR, state(kit, a).state());
  }

  @Test
  void qpFatalWithRestartMakesANewQpAfterBackoff() {
    FaultInjection faults = faults(provider);
    ActorRef<Command> a =
        createQp(kit, pd, QpSpec.rc().withRestartOnFatal(true), owner.getRef());
    int first = state(kit, a).qpNum();
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    owner.expectMessageClass(StateChanged.class, WAIT);
    ResourceCounts before = provider.liveResources();
    faults.qpFatal(verbsQp(kit, a));
    List<Event> events = owner.receiveSeveralMessages(3, WAIT);
    assertTrue(events.stream().anyMatch(e -> e instanceof Fatal f && f.restarting()),
        "" + events);
    Restarted r = owner.expectMessageClass(Restarted.class, WAIT);
    assertEquals(first, r.previousQpNum());
    assertNotEquals(first, r.qpNum());
    QpInfo now = state(kit, a);
    assertEquals(r.qpNum(), now.qpNum());
    assertEquals(QpState.RESET, now.state());
    // the old QP and CQ are gone, the new ones took their place
    awaitResources(provider, before);
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
  }

  @Test
  void cqOverrunReachesTheCqOwner() {
    requireFeature(provider, Feature.CQ_OVERRUN_ERROR);
    ActorRef<Command> a = createQp(kit, pd, QpSpec.rc().withQueues(4, 16).withCqSize(1),
        owner.getRef());
    transition(kit, a, QpAttributes.toInit(1, ACCESS));
    owner.expectMessageClass(StateChanged.class, WAIT);
    TestProbe<WorkResult> requester = kit.createTestProbe();
    int free = pool.available();
    List<Work> recvs = new ArrayList<>();
    for (int i = 0; i < 16; i++) recvs.add(new Receive(i, pool.lease()));
    a.tell(new Post(recvs, requester.getRef()));
    // 16 flush completions into a CQ of one entry
    int qpNum = state(kit, a).qpNum();
    transition(kit, a, new QpAttributes().state(QpState.ERR));
    // both the poller (the CQ fails to poll) and the CQ_ERR event reach the CQ's owner
    Fatal fatal = null;
    boolean cqErr = false;
    while (fatal == null || !cqErr) {
      Event e = owner.receiveMessage(WAIT);
      if (e instanceof Fatal f) fatal = f;
      if (e.equals(new AsyncEventReceived(qpNum, AsyncEventType.CQ_ERR))) cqErr = true;
    }
    assertEquals(qpNum, fatal.qpNum());
    assertTrue(fatal.reason().contains("CQ"), fatal.reason());
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (pool.available() != free && System.nanoTime() < deadline) Thread.onSpinWait();
    assertEquals(free, pool.available(), "a failed CQ returns every buffer");
  }

  /** The provider's QP behind an actor, for fault injection. */
  static QueuePair verbsQp(ActorTestKit kit, ActorRef<Command> qp) {
    TestProbe<QueuePair> p = kit.createTestProbe();
    qp.tell(new Inspect(p.getRef()));
    return p.receiveMessage(WAIT);
  }
}

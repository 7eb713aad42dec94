package dev.pekkordma.actors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.fail;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.time.Duration;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;

/** Shared test helpers: a soft-provider config, and the usual request/reply steps. */
final class TestRdma {
  static final Duration WAIT = Duration.ofSeconds(5);
  static final int ACCESS = dev.pekkordma.verbs.Access.LOCAL_WRITE
      | dev.pekkordma.verbs.Access.REMOTE_WRITE | dev.pekkordma.verbs.Access.REMOTE_READ;

  private TestRdma() {}

  /** The software provider with quick pollers and backoffs; {@code extra} overrides. */
  static Config config(String extra) {
    return ConfigFactory.parseString(extra + "\n"
        + "pekko-rdma.provider = soft\n"
        + "pekko-rdma.actors.poller.block-timeout = 20ms\n"
        + "pekko-rdma.actors.device.reopen-backoff { min-backoff = 50ms, max-backoff = 200ms }\n"
        + "pekko-rdma.actors.qp.restart-backoff { min-backoff = 50ms, max-backoff = 200ms }\n"
        + "pekko-rdma.actors.buffer-pool { buffer-size = 4KiB, slab-size = 64KiB, slabs = 1 }\n"
        + "pekko.loglevel = INFO\n")
        .withFallback(ConfigFactory.load());
  }

  static <T> T ok(TestProbe<StatusReply<T>> probe) {
    StatusReply<T> r = probe.receiveMessage(WAIT);
    if (r.isError()) fail("expected success, got " + r.getError().getMessage());
    return r.getValue();
  }

  static ActorRef<PdActor.Command> allocatePd(ActorTestKit kit, ActorRef<DeviceActor.Command> dev) {
    TestProbe<StatusReply<ActorRef<PdActor.Command>>> p = kit.createTestProbe();
    dev.tell(new DeviceActor.AllocatePd(p.getRef()));
    return ok(p);
  }

  static BufferPool pool(ActorTestKit kit, ActorRef<PdActor.Command> pd) {
    TestProbe<BufferPool> p = kit.createTestProbe();
    pd.tell(new PdActor.GetPool(p.getRef()));
    return p.receiveMessage(WAIT);
  }

  static DeviceActor.DeviceInfo info(ActorTestKit kit, ActorRef<DeviceActor.Command> dev) {
    TestProbe<StatusReply<DeviceActor.DeviceInfo>> p = kit.createTestProbe();
    dev.tell(new DeviceActor.GetInfo(p.getRef()));
    return ok(p);
  }

  static ActorRef<QpActor.Command> createQp(ActorTestKit kit, ActorRef<PdActor.Command> pd,
      QpSpec spec, ActorRef<QpActor.Event> owner) {
    TestProbe<StatusReply<ActorRef<QpActor.Command>>> p = kit.createTestProbe();
    pd.tell(new PdActor.CreateQp(spec, owner, p.getRef()));
    return ok(p);
  }

  static QpActor.ModifyResult modify(ActorTestKit kit, ActorRef<QpActor.Command> qp,
      QpAttributes a) {
    TestProbe<QpActor.ModifyResult> p = kit.createTestProbe();
    qp.tell(new QpActor.Modify(a, p.getRef()));
    return p.receiveMessage(WAIT);
  }

  static QpActor.Transitioned transition(ActorTestKit kit, ActorRef<QpActor.Command> qp,
      QpAttributes a) {
    QpActor.ModifyResult r = modify(kit, qp, a);
    return assertInstanceOf(QpActor.Transitioned.class, r, r.toString());
  }

  static QpActor.QpInfo state(ActorTestKit kit, ActorRef<QpActor.Command> qp) {
    TestProbe<QpActor.QpInfo> p = kit.createTestProbe();
    qp.tell(new QpActor.GetState(p.getRef()));
    return p.receiveMessage(WAIT);
  }

  /** RESET to RTS on both RC QPs, each talking to the other. */
  static void connectRc(ActorTestKit kit, ActorRef<QpActor.Command> a,
      ActorRef<QpActor.Command> b, Gid gid) {
    int qa = state(kit, a).qpNum();
    int qb = state(kit, b).qpNum();
    for (var pair : java.util.List.of(java.util.Map.entry(a, qb), java.util.Map.entry(b, qa))) {
      transition(kit, pair.getKey(), QpAttributes.toInit(1, ACCESS));
      transition(kit, pair.getKey(), QpAttributes.toRtr(AddressVector.global(gid, 0, 1),
          pair.getValue(), 0, Mtu.MTU_4096));
      transition(kit, pair.getKey(), QpAttributes.toRts(0));
    }
  }

  /** Waits until the provider's live resources equal {@code expected}. */
  static void awaitResources(RdmaProvider provider, ResourceCounts expected) {
    long deadline = System.nanoTime() + WAIT.toNanos();
    ResourceCounts now = provider.liveResources();
    while (!now.equals(expected) && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        throw new AssertionError(e);
      }
      now = provider.liveResources();
    }
    assertEquals(expected, now);
  }

  static ResourceCounts counts(int contexts, int pds, int mrs, int cqs, int qps, int cmIds) {
    return new ResourceCounts(contexts, pds, mrs, 0, cqs, qps, 0, 0, cmIds);
  }
}

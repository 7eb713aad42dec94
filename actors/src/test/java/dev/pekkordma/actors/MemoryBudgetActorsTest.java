package dev.pekkordma.actors;

import static dev.pekkordma.actors.TestRdma.*;
import static org.junit.jupiter.api.Assertions.*;

import dev.pekkordma.runtime.MemoryBudget;
import dev.pekkordma.runtime.RdmaRuntime;
import org.apache.pekko.Done;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/** The actors' pools and registrations take their bytes from the budget and give them back. */
class MemoryBudgetActorsTest {
  /** The tests' pool is one slab of 64 KiB; the budget holds it and half of another. */
  static final long POOL = 64 << 10;
  static final ActorTestKit kit = ActorTestKit.create("MemoryBudgetActorsTest",
      config(MemoryBudget.SETTING + " = " + (POOL + POOL / 2)));
  static final RdmaExtension rdma = RdmaExtension.get(kit.system());
  static final MemoryBudget budget = RdmaRuntime.get(kit.system()).memory();

  @AfterAll
  static void shutdown() {
    kit.shutdownTestKit();
  }

  @Test
  void poolsAndRegistrationsPastTheBudgetAreRefusedNamingIt() {
    ActorRef<DeviceActor.Command> dev = rdma.device(DEVICE);
    ActorRef<PdActor.Command> pd = allocatePd(kit, dev);
    assertEquals(POOL, budget.used(), "the PD's pool");

    TestProbe<StatusReply<ActorRef<PdActor.Command>>> second = kit.createTestProbe();
    dev.tell(new DeviceActor.AllocatePd(second.getRef()));
    String why = second.receiveMessage(WAIT).getError().getMessage();
    assertTrue(why.contains(MemoryBudget.SETTING) && why.contains("buffer-pool"), why);

    TestProbe<StatusReply<PdActor.Registration>> reg = kit.createTestProbe();
    pd.tell(new PdActor.Register((int) POOL, BufferPool.ACCESS, reg.getRef()));
    why = reg.receiveMessage(WAIT).getError().getMessage();
    assertTrue(why.contains(MemoryBudget.SETTING), why);
    assertEquals(POOL, budget.used(), "refusals take nothing");

    pd.tell(new PdActor.Register((int) (POOL / 2), BufferPool.ACCESS, reg.getRef()));
    PdActor.Registration r = ok(reg);
    assertEquals(POOL + POOL / 2, budget.used());
    TestProbe<StatusReply<Done>> done = kit.createTestProbe();
    pd.tell(new PdActor.Deregister(r, done.getRef()));
    ok(done);
    assertEquals(POOL, budget.used(), "deregistering gives its bytes back");

    pd.tell(PdActor.Close.INSTANCE);
    kit.createTestProbe().expectTerminated(pd, WAIT);
    assertEquals(0, budget.used(), "a stopped PD gives its pool's bytes back");
  }
}

package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.ResourceCounts;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * On rxe in the VM: CQs and QPs map their queues into the process, and a provider whose
 * headroom is nearly spent refuses the next one with ENOMEM naming the numbers and the setting,
 * keeps working, and creates again once resources are closed.
 */
@EnabledIfSystemProperty(named = "pekko-rdma.provider", matches = "native", disabledReason =
    "needs -Dpekko-rdma.provider=native and an RDMA device (the Soft-RoCE VM)")
class NativeMapHeadroomTest {
  private static final long RESERVE = 64;
  private static final int ROOM = 80; // mappings allowed beyond today's

  @Test
  void pastTheHeadroomACreationIsRefusedNamingTheSettingAndNothingLeaks() {
    warmUp(); // the libraries a first open loads stay mapped: not the headroom's to count
    long before = MapHeadroom.countMappings();
    MapHeadroom headroom = new MapHeadroom(before + RESERVE + ROOM, RESERVE,
        MapHeadroom::countMappings);
    NativeProvider provider = new NativeProvider(headroom);
    List<AutoCloseable> made = new ArrayList<>();
    try {
      DeviceContext ctx = provider.open(NativeSmokeTest.DEVICE);
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(16, null);
      long withCq = MapHeadroom.countMappings();
      QueuePair first = pd.createQp(init(cq));
      made.add(first);
      long withQp = MapHeadroom.countMappings();
      System.out.println("mappings: " + before + " at start, the device, a PD and a CQ added "
          + (withCq - before) + ", an RC QP " + (withQp - withCq));
      assertTrue(withQp > withCq, "an rxe QP maps its queues into the process");

      RdmaException refused = null;
      for (int i = 0; i < ROOM && refused == null; i++) {
        try {
          made.add(i % 2 == 0 ? pd.createQp(init(cq)) : ctx.createCq(16, null));
        } catch (RdmaException e) {
          refused = e;
        }
      }
      assertNotNull(refused, "refused within " + ROOM + " mappings");
      assertEquals(RdmaException.ENOMEM, refused.errno());
      String why = refused.getMessage();
      assertTrue(why.contains("vm.max_map_count = " + headroom.limit())
          && why.contains(MapHeadroom.RESERVE_SETTING) && why.contains("refused"), why);
      System.out.println("after " + made.size() + " QPs and CQs: " + why);

      for (int i = made.size() - 1; i >= 0; i--) close(made.get(i));
      made.clear();
      CompletionQueue again = ctx.createCq(16, null); // the mappings came back
      again.close();
      cq.close();
      pd.close();
      ctx.close();
      assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources());
    } finally {
      for (AutoCloseable c : made) close(c);
      provider.close();
    }
  }

  /** Opens the device, a CQ and a QP once, and closes them. */
  private static void warmUp() {
    NativeProvider provider = new NativeProvider();
    try (DeviceContext ctx = provider.open(NativeSmokeTest.DEVICE)) {
      ProtectionDomain pd = ctx.allocPd();
      CompletionQueue cq = ctx.createCq(16, null);
      pd.createQp(init(cq)).close();
      cq.close();
      pd.close();
    } finally {
      provider.close();
    }
  }

  private static QpInitAttributes init(CompletionQueue cq) {
    return QpInitAttributes.of(QpType.RC, cq, cq).maxSendWr(16).maxRecvWr(16);
  }

  private static void close(AutoCloseable c) {
    try {
      c.close();
    } catch (Exception e) {
      throw new AssertionError("closing " + c, e);
    }
  }
}

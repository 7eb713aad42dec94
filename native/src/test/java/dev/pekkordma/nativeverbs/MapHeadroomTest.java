package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.RdmaException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/** The guard on the process's memory mappings, against a counter the test controls. */
class MapHeadroomTest {
  private final AtomicLong mappings = new AtomicLong();
  private final AtomicInteger counts = new AtomicInteger();

  private MapHeadroom headroom(long limit, long reserve) {
    return new MapHeadroom(limit, reserve, () -> {
      counts.incrementAndGet();
      return mappings.get();
    });
  }

  @Test
  void countsOnlyWhenTheEstimateNearsTheLimitAndRefusesPastTheReserve() {
    mappings.set(500);
    MapHeadroom h = headroom(1000, 100);
    int allowed = 0;
    RdmaException refused = null;
    for (int i = 0; i < 1000 && refused == null; i++) {
      try {
        h.beforeCreating("ibv_create_qp", "a RC QP");
        allowed++;
        mappings.addAndGet(MapHeadroom.MAPS_PER_CREATION); // what the creation maps
      } catch (RdmaException e) {
        refused = e;
      }
    }
    assertEquals((900 - 500) / MapHeadroom.MAPS_PER_CREATION, allowed,
        "creations until fewer than the reserve would be left");
    assertTrue(counts.get() < 20, "counted " + counts.get() + " times for " + allowed);
    assertEquals(RdmaException.ENOMEM, refused.errno());
    String why = refused.getMessage();
    for (String part : new String[] {"ibv_create_qp", "a RC QP refused", "900 memory mappings",
        "vm.max_map_count = 1000", "100 are kept", MapHeadroom.RESERVE_SETTING, "sysctl"}) {
      assertTrue(why.contains(part), "'" + part + "' in: " + why);
    }
  }

  @Test
  void mappingsGivenBackAreSeenAtTheNextCount() {
    mappings.set(899);
    MapHeadroom h = headroom(1000, 100);
    assertThrows(RdmaException.class, () -> h.beforeCreating("ibv_create_cq", "a CQ"));
    mappings.set(600); // connections closed
    assertDoesNotThrow(() -> h.beforeCreating("ibv_create_cq", "a CQ"));
  }

  @Test
  void anUnknownLimitGuardsNothingAndCountsNothing() {
    MapHeadroom h = headroom(0, 100);
    mappings.set(Long.MAX_VALUE / 4);
    for (int i = 0; i < 100; i++) h.beforeCreating("ibv_create_qp", "a QP");
    assertEquals(0, counts.get());
  }

  @Test
  void aNegativeReserveIsRefusedNamingTheSetting() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> headroom(1000, -1));
    assertTrue(e.getMessage().contains(MapHeadroom.RESERVE_SETTING), e.getMessage());
  }

  @Test
  @EnabledOnOs(OS.LINUX)
  void readsThisProcesssMappingsAndTakesTheKernelsLimitOnlyWhenPlausible() {
    long now = MapHeadroom.countMappings();
    assertTrue(now > 10, now + " mappings");
    long limit = MapHeadroom.readLimit();
    MapHeadroom process = MapHeadroom.ofProcess(MapHeadroom.DEFAULT_RESERVE);
    assertEquals(limit > now ? limit : 0, process.limit(), "vm.max_map_count says " + limit);
    assertEquals(65530, MapHeadroom.plausible(65530, 300));
    assertEquals(0, MapHeadroom.plausible(6, 230), "a sandbox's figure that is not a limit");
    assertEquals(0, MapHeadroom.plausible(0, 230), "no figure");
  }
}

package dev.pekkordma.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.LinkLayer;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaException;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The device list, device and port attributes, GIDs, and opening a device. */
class DeviceConformanceTest extends ConformanceTest {

  @Test
  void providerIsTheOneAskedFor() {
    String asked = ConformanceProvider.providerName();
    if (!asked.equals("auto")) {
      assertEquals(asked, fx.provider.name(), "pekko-rdma.provider = " + asked);
    }
  }

  @Test
  void deviceListNamesEachDeviceOnce() {
    List<RdmaDevice> devices = fx.provider.devices();
    assertFalse(devices.isEmpty(), "device list");
    Set<String> names = new HashSet<>();
    for (RdmaDevice d : devices) {
      assertNotNull(d.name(), "device name of " + d);
      assertFalse(d.name().isBlank(), "device name of " + d);
      assertTrue(names.add(d.name()), "device name " + d.name() + " repeats in " + devices);
    }
    assertTrue(devices.contains(fx.device), fx.device + " in " + devices);
  }

  @Test
  void deviceAttributesArePlausible() {
    DeviceAttributes a = fx.context.queryDevice();
    System.out.println("[conformance] " + fx.device.name() + ": " + a);
    assertTrue(a.maxQp() > 0, "maxQp " + a.maxQp());
    assertTrue(a.maxQpWr() > 0, "maxQpWr " + a.maxQpWr());
    assertTrue(a.maxSge() >= 1, "maxSge " + a.maxSge());
    assertTrue(a.maxCq() > 0, "maxCq " + a.maxCq());
    assertTrue(a.maxCqe() > 0, "maxCqe " + a.maxCqe());
    assertTrue(a.maxMr() > 0, "maxMr " + a.maxMr());
    assertTrue(a.maxPd() > 0, "maxPd " + a.maxPd());
    assertTrue(a.maxMrSize() > 0, "maxMrSize " + a.maxMrSize());
    assertTrue(a.maxInlineData() >= 0, "maxInlineData " + a.maxInlineData());
    assertTrue(a.maxQpRdAtom() >= 0 && a.maxQpInitRdAtom() >= 0, "rd_atom " + a);
    assertNotNull(a.atomicCap(), "atomicCap");
    assertTrue(a.physPortCnt() >= 1, "physPortCnt " + a.physPortCnt());
    assertEquals(a, fx.attributes, "queryDevice twice");
    if (fx.provider.supports(dev.pekkordma.verbs.RdmaProvider.Feature.SRQ)) {
      assertTrue(a.maxSrq() > 0 && a.maxSrqWr() > 0, "SRQ supported but " + a);
    }
  }

  @Test
  void portAttributesAndGids() {
    PortAttributes p = fx.context.queryPort(fx.port);
    System.out.println("[conformance] port " + fx.port + ": " + p + ", GID[" + fx.gidIndex + "] "
        + fx.gid);
    assertEquals(PortState.ACTIVE, p.state(), "state of port " + fx.port);
    assertNotNull(p.maxMtu(), "maxMtu");
    assertNotNull(p.activeMtu(), "activeMtu");
    assertTrue(p.activeMtu().bytes <= p.maxMtu().bytes, "active MTU " + p.activeMtu()
        + " above max " + p.maxMtu());
    assertTrue(p.gidTableLength() >= 1, "gidTableLength " + p.gidTableLength());
    assertNotNull(p.linkLayer(), "linkLayer");
    assertTrue(p.linkLayer() == LinkLayer.ETHERNET || p.linkLayer() == LinkLayer.INFINIBAND,
        "link layer " + p.linkLayer());
    assertTrue(p.maxMsgSize() > 0 || p.maxMsgSize() == Integer.MIN_VALUE,
        "maxMsgSize " + p.maxMsgSize()); // 2^31 does not fit an int
    Gid g = fx.context.queryGid(fx.port, fx.gidIndex);
    assertEquals(fx.gid, g, "GID " + fx.gidIndex + " of port " + fx.port);
    assertFalse(g.isZero(), "GID " + fx.gidIndex);
    assertEquals(16, g.toBytes().length, "GID bytes");
    assertEquals(g, Gid.of(g.toBytes()), "GID round trip");
  }

  @Test
  void queryOfAMissingPortOrGidFails() {
    int ports = fx.attributes.physPortCnt();
    assertRdma(RdmaException.EINVAL, () -> fx.context.queryPort(ports + 1),
        "ibv_query_port(" + (ports + 1) + ") on a device with " + ports + " port(s)");
    assertRdma(RdmaException.EINVAL, () -> fx.context.queryPort(0), "ibv_query_port(0)");
    int gids = fx.portAttributes.gidTableLength();
    assertRdma(RdmaException.EINVAL, () -> fx.context.queryGid(fx.port, gids),
        "ibv_query_gid index " + gids + " of a table of " + gids);
  }

  @Test
  void secondContextSeesTheSameDeviceAndWontCloseWhileInUse() {
    int before = fx.provider.liveResources().contexts();
    DeviceContext c2 = fx.provider.open(fx.device);
    try {
      assertEquals(before + 1, fx.provider.liveResources().contexts(), "contexts after open");
      assertEquals(fx.device, c2.device(), "device of the new context");
      assertEquals(fx.attributes, c2.queryDevice(), "attributes through a second context");
      assertEquals(fx.gid, c2.queryGid(fx.port, fx.gidIndex), "GID through a second context");
      ProtectionDomain pd = c2.allocPd();
      RdmaException e = assertRdma(RdmaException.EBUSY, c2::close,
          "closing a context with an open PD");
      assertMentionsAnyIgnoreCase(e, "closing a context with an open PD", "PD",
          "protection domain");
      pd.close();
    } finally {
      c2.close();
    }
    assertEquals(before, fx.provider.liveResources().contexts(), "contexts after close");
  }

  @Test
  void openingAnUnknownDeviceNamesTheDevices() {
    RdmaException e = assertRdma(RdmaException.ENODEV,
        () -> fx.provider.open("no-such-device-42"), "opening an unknown device");
    assertMentions(e, "opening an unknown device", "no-such-device-42", fx.device.name());
  }
}

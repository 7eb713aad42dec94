package dev.pekkordma.actors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.spi.FaultInjection;
import java.time.Duration;
import java.util.Optional;
import org.apache.pekko.actor.testkit.typed.javadsl.ActorTestKit;
import org.apache.pekko.actor.testkit.typed.javadsl.FishingOutcomes;
import org.apache.pekko.actor.testkit.typed.javadsl.TestProbe;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.pattern.StatusReply;
import org.junit.jupiter.api.Assumptions;

/**
 * Shared test helpers: the provider's config, and the usual request/reply steps. The tests run on
 * the software provider unless the system property {@code pekko-rdma.provider} says
 * {@code native}, as native/softroce/run-native-tests.sh does inside the Soft-RoCE VM: then they
 * use the devices named by {@code pekko-rdma.test.device} (plain verbs, e.g. rxe_lo with GID
 * index {@code pekko-rdma.test.gid-index}) and {@code pekko-rdma.test.cm-device}, at
 * {@code pekko-rdma.test.cm-address}, and skip, saying why, what needs fault injection or a
 * device behaviour the device lacks.
 */
public final class TestRdma {
  public static final boolean NATIVE =
      "native".equals(System.getProperty("pekko-rdma.provider", "soft"));
  /** The device of plain-verbs tests. */
  public static final String DEVICE =
      NATIVE ? System.getProperty("pekko-rdma.test.device", "rxe_lo") : "soft0";
  /** The device the CM tests' address belongs to. */
  public static final String CM_DEVICE =
      NATIVE ? System.getProperty("pekko-rdma.test.cm-device", "rxe0") : "soft0";
  public static final String CM_HOST =
      NATIVE ? System.getProperty("pekko-rdma.test.cm-address", "192.0.2.1") : "127.0.0.1";
  static final int GID_INDEX =
      NATIVE ? Integer.getInteger("pekko-rdma.test.gid-index", 1) : 0;
  /** Emulated (the VM) is many times slower than here. */
  public static final Duration WAIT = Duration.ofSeconds(NATIVE ? 20 : 5);
  /** The path MTU of hand-made connections (rxe_lo's port is active at 4096 too). */
  static final Mtu MTU = Mtu.MTU_4096;
  static final int ACCESS = dev.pekkordma.verbs.Access.LOCAL_WRITE
      | dev.pekkordma.verbs.Access.REMOTE_WRITE | dev.pekkordma.verbs.Access.REMOTE_READ;

  private TestRdma() {}

  /**
   * The provider under test with quick pollers and backoffs; {@code extra} overrides. On native,
   * the extension opens {@code device} only (soft device names in {@code extra} do not apply).
   */
  public static Config config(String device, String extra) {
    String provider = NATIVE
        ? "pekko-rdma.provider = native\npekko-rdma.actors.devices = [\"" + device + "\"]\n"
        : "pekko-rdma.provider = soft\n";
    return ConfigFactory.parseString(provider
        + "pekko-rdma.runtime.poller.block-timeout = 20ms\n"
        + "pekko-rdma.actors.device.reopen-backoff { min-backoff = 50ms, max-backoff = 200ms }\n"
        + "pekko-rdma.actors.qp.restart-backoff { min-backoff = 50ms, max-backoff = 200ms }\n"
        + "pekko-rdma.actors.buffer-pool { buffer-size = 4KiB, slab-size = 64KiB, slabs = 1 }\n"
        + "pekko.loglevel = INFO\n" + extra + "\n")
        .withFallback(ConfigFactory.load());
  }

  /** The software provider's config; on native, {@link #DEVICE}. */
  static Config config(String extra) {
    return config(DEVICE, extra);
  }

  /** Skips the calling test on a provider without fault injection, saying so. */
  /**
   * Checks that {@code got} is {@code expected} as sent: the IB CM carries private data in a
   * fixed area, so on RoCE and InfiniBand it arrives padded with zeros to the area's size.
   */
  static void assertPrivateData(String expected, byte[] got) {
    byte[] want = expected.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    assertTrue(got.length >= want.length, "private data " + java.util.Arrays.toString(got));
    assertArrayEquals(want, java.util.Arrays.copyOf(got, want.length),
        "private data starts with what was sent");
    for (int i = want.length; i < got.length; i++) {
      assertEquals(0, got[i], "private data past what was sent is padding");
    }
  }

  static FaultInjection faults(RdmaProvider provider) {
    Optional<FaultInjection> faults = FaultInjection.of(provider);
    Assumptions.assumeTrue(faults.isPresent(), () -> skip("it injects faults, which provider '"
        + provider.name() + "' cannot"));
    return faults.get();
  }

  /** Skips the calling test where the device lacks {@code feature}, saying so. */
  static void requireFeature(RdmaProvider provider, Feature feature) {
    Assumptions.assumeTrue(provider.supports(feature), () -> skip("the device lacks " + feature
        + (feature.meaning() == null ? "" : ": " + feature.meaning())));
  }

  /** The reason a test is skipped, printed as {@code [actors] skipped: ...}. */
  static String skip(String why) {
    String line = "skipped: " + why;
    System.out.println("[actors] " + line);
    return line;
  }

  /**
   * Takes port 1 of {@code device} down or brings it up: by fault injection on soft; on native,
   * with {@code -Dpekko-rdma.test.toggle-netdev=true}, by the link state of its netdev
   * ({@code pekko-rdma.test.cm-netdev}, the VM's dummy0), so that the kernel raises the real
   * PORT_ERR / PORT_ACTIVE (seen working; it breaks the VM's later CM connections).
   */
  static void setPort(RdmaProvider provider, String device, boolean up) {
    if (!NATIVE) {
      try (DeviceContext ctx = provider.open(device)) {
        faults(provider).setPortState(ctx, 1, up);
      }
      return;
    }
    // opt in: in the VM, once dummy0 had gone down and up, CM connections on rxe0 (rping's
    // too) ended UNREACHABLE for the rest of the run
    Assumptions.assumeTrue(Boolean.getBoolean("pekko-rdma.test.toggle-netdev"),
        () -> skip("taking " + CM_DEVICE + "'s netdev down and up leaves its CM connections"
            + " unreachable afterwards in the VM; -Dpekko-rdma.test.toggle-netdev=true runs it"));
    Assumptions.assumeTrue(device.equals(CM_DEVICE),
        () -> skip("only " + CM_DEVICE + "'s netdev may go down in a test"));
    String netdev = System.getProperty("pekko-rdma.test.cm-netdev", "dummy0");
    try {
      Process ip = new ProcessBuilder("ip", "link", "set", netdev, up ? "up" : "down")
          .redirectErrorStream(true).start();
      String out = new String(ip.getInputStream().readAllBytes());
      if (ip.waitFor() != 0) {
        throw new AssertionError("ip link set " + netdev + (up ? " up" : " down") + ": " + out);
      }
      if (up) awaitCmGid(provider);
    } catch (java.io.IOException e) {
      throw new AssertionError("could not run ip: " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new AssertionError(e);
    }
  }

  /**
   * After its netdev comes up, the kernel puts the port's RoCE GIDs back in its own time: waits
   * until the CM address's IPv4-mapped GID is there again.
   */
  static void awaitCmGid(RdmaProvider provider) throws java.io.IOException, InterruptedException {
    byte[] v4 = java.net.InetAddress.getByName(CM_HOST).getAddress();
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (System.nanoTime() < deadline) {
      try (DeviceContext ctx = provider.open(CM_DEVICE)) {
        int gids = ctx.queryPort(1).gidTableLength();
        for (int i = 0; i < gids; i++) {
          byte[] raw = ctx.queryGid(1, i).toBytes();
          if (raw[10] == (byte) 0xff && raw[11] == (byte) 0xff
              && java.util.Arrays.equals(raw, 12, 16, v4, 0, 4)) {
            return;
          }
        }
      }
      Thread.sleep(100);
    }
    throw new AssertionError(CM_DEVICE + " has no GID for " + CM_HOST + " after its netdev came up");
  }

  /** The GID of {@link #GID_INDEX} on {@code device}'s port 1 (from a context of its own). */
  static Gid gid(RdmaProvider provider, String device) {
    try (DeviceContext ctx = provider.open(device)) {
      return ctx.queryGid(1, GID_INDEX);
    }
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
      transition(kit, pair.getKey(), QpAttributes.toRtr(AddressVector.global(gid, GID_INDEX, 1),
          pair.getValue(), 0, MTU));
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

  /** The first {@code type} the probe receives, skipping anything else. */
  static <E, T extends E> T fish(TestProbe<E> probe, Class<T> type) {
    return probe.fishForMessage(WAIT, m -> type.isInstance(m)
            ? FishingOutcomes.complete() : FishingOutcomes.continueAndIgnore())
        .stream().filter(type::isInstance).map(type::cast).findFirst().orElseThrow();
  }

  /**
   * A connection through the CM actor to a fresh listener at {@code host}: the client's
   * Connected and the server side's.
   */
  static ConnectionActor.Connected[] connectThroughCm(RdmaExtension rdma, String host,
      TestProbe<ListenerActor.Event> server, TestProbe<ConnectionActor.Event> client,
      TestProbe<ConnectionActor.Event> serverSide) {
    rdma.cm().tell(new CmActor.Listen(new java.net.InetSocketAddress(host, 0), QpSpec.rc(),
        server.getRef()));
    ListenerActor.Bound bound = server.expectMessageClass(ListenerActor.Bound.class, WAIT);
    rdma.cm().tell(new CmActor.Connect(bound.address(), new byte[0], QpSpec.rc(),
        client.getRef()));
    server.expectMessageClass(ListenerActor.ConnectionRequested.class, WAIT).connection()
        .tell(new ConnectionActor.Accept(new byte[0], serverSide.getRef()));
    return new ConnectionActor.Connected[] {
        client.expectMessageClass(ConnectionActor.Connected.class, WAIT),
        serverSide.expectMessageClass(ConnectionActor.Connected.class, WAIT)};
  }

  static ResourceCounts counts(int contexts, int pds, int mrs, int cqs, int qps, int cmIds) {
    return new ResourceCounts(contexts, pds, mrs, 0, cqs, qps, 0, 0, cmIds);
  }
}

package dev.pekkordma.soft;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.ResourceCounts;
import dev.pekkordma.verbs.WrOpcode;
import java.io.IOException;

/**
 * What the hostile-peer tests attack: a soft provider whose QP (the victim) is connected to a
 * QP of a {@link RawFabricPeer}, with a registered region between canaries, and a second QP
 * connected to another raw peer whose traffic must go on whatever the first one does.
 */
final class HostileFabric implements AutoCloseable {
  static final int REGION = 64 * 1024;
  static final int CANARY = 4096;
  static final long CANARY_WORD = 0xc0ffeec0ffeec0ffL;
  static final int PEER_QPN = 0x4242;
  static final int ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
      | Access.REMOTE_ATOMIC;

  final RdmaProvider provider;
  final DeviceContext ctx;
  final ProtectionDomain pd;
  final CompletionQueue cq;
  final Guarded region;
  final Guarded otherRegion;
  final RawFabricPeer peer;
  final RawFabricPeer otherPeer;
  final QueuePair victim;
  final QueuePair other;
  final int serial;
  /** The victim's next expected PSN, as the tests' legitimate requests advance it. */
  int epsn;
  private RawFabricPeer.Conn otherConn;
  private int otherPsn;

  HostileFabric() throws IOException {
    provider = RdmaProviders.load(ConfigFactory.parseString("pekko-rdma.provider = soft")
        .withFallback(ConfigFactory.load()));
    ctx = provider.open(provider.devices().get(0));
    serial = ((SoftContext) ctx).device.serial;
    pd = ctx.allocPd();
    cq = ctx.createCq(1024, null);
    region = new Guarded(pd);
    otherRegion = new Guarded(pd);
    peer = new RawFabricPeer();
    otherPeer = new RawFabricPeer();
    victim = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    other = pd.createQp(QpInitAttributes.of(QpType.RC, cq, cq));
    connectVictim();
    connect(other, otherPeer.gid(1), PEER_QPN, 10, 1);
  }

  /** (Re)connects the victim to the peer's QP: RESET, INIT, RTR, RTS, PSNs from 0. */
  void connectVictim() {
    connect(victim, peer.gid(1), PEER_QPN, 10, 1);
    epsn = 0;
  }

  static void connect(QueuePair qp, Gid gid, int destQpn, int timeout, int retry) {
    if (qp.state() != QpState.RESET) qp.modify(new QpAttributes().state(QpState.RESET));
    qp.modify(QpAttributes.toInit(1, ACCESS));
    qp.modify(QpAttributes.toRtr(AddressVector.global(gid, 0, 1), destQpn, 0, Mtu.MTU_4096)
        .maxDestRdAtomic(4));
    qp.modify(QpAttributes.toRts(0).timeout(timeout).retryCount(retry).maxRdAtomic(4));
  }

  /** A WRITE from the peer's QP to the victim, well-formed in every field. */
  RawFabricPeer.Frame write(int psn, long offset, int length) {
    RawFabricPeer.Frame f = request(WrOpcode.RDMA_WRITE, psn);
    f.rkey = region.mr.rkey();
    f.remoteAddress = region.mr.address() + offset;
    f.payloadLength = length;
    return f;
  }

  RawFabricPeer.Frame request(WrOpcode op, int psn) {
    RawFabricPeer.Frame f = new RawFabricPeer.Frame();
    f.kind = FabricWire.REQUEST;
    f.destDevice = serial;
    f.destQpn = victim.qpNum();
    f.srcQpn = PEER_QPN;
    f.psn = psn;
    f.opcodeOrCode = op.code;
    return f;
  }

  /**
   * Legitimate traffic on the other connection: a WRITE of a fresh pattern into the other
   * region, acknowledged and in place. Fails if whatever the test did stopped it.
   */
  void otherTrafficGoesOn() throws IOException {
    if (otherConn == null) otherConn = otherPeer.connect();
    byte[] data = new byte[256];
    java.util.concurrent.ThreadLocalRandom.current().nextBytes(data);
    RawFabricPeer.Frame f = new RawFabricPeer.Frame();
    f.destDevice = serial;
    f.destQpn = other.qpNum();
    f.srcQpn = PEER_QPN;
    f.psn = otherPsn;
    f.opcodeOrCode = WrOpcode.RDMA_WRITE.code;
    f.rkey = otherRegion.mr.rkey();
    f.remoteAddress = otherRegion.mr.address() + 512;
    f.payloadLength = data.length;
    otherConn.send(f.withPayload(data, FabricWire.TRAILER_WHOLE));
    RawFabricPeer.Frame answer = otherConn.readFrame(5000);
    if (answer == null || answer.kind != FabricWire.RESPONSE
        || answer.opcodeOrCode != SoftPeer.Response.ACK || answer.psn != otherPsn) {
      throw new AssertionError("the other connection's write was not acknowledged: "
          + (answer == null ? "connection closed" : "code " + answer.opcodeOrCode));
    }
    otherPsn++;
    byte[] landed = otherRegion.read(512, data.length);
    if (!java.util.Arrays.equals(data, landed)) {
      throw new AssertionError("the other connection's write did not land intact");
    }
    otherRegion.assertCanaries();
  }

  @Override
  public void close() throws IOException {
    if (otherConn != null) otherConn.close();
    victim.close();
    other.close();
    region.close();
    otherRegion.close();
    cq.close();
    pd.close();
    ctx.close();
    peer.close();
    otherPeer.close();
    assertEquals(new ResourceCounts(0, 0, 0, 0, 0, 0, 0, 0, 0), provider.liveResources(),
        "everything the test made is gone");
    provider.close();
  }

  /** A registered region between two canary pages. */
  static final class Guarded implements AutoCloseable {
    final OffHeapBuffer memory = OffHeapBuffer.allocate(REGION + 2 * CANARY);
    final MemoryRegion mr;

    Guarded(ProtectionDomain pd) {
      long base = memory.address();
      NativeMemory.zero(base, REGION + 2 * CANARY);
      for (long at = 0; at < CANARY; at += 8) {
        NativeMemory.putLong(base + at, CANARY_WORD);
        NativeMemory.putLong(base + CANARY + REGION + at, CANARY_WORD);
      }
      mr = pd.registerMemory(base + CANARY, REGION, ACCESS);
    }

    byte[] read(long offset, int length) {
      byte[] b = new byte[length];
      memory.get(CANARY + offset, b, 0, length);
      return b;
    }

    byte[] snapshot() {
      return read(0, REGION);
    }

    void assertCanaries() {
      long base = memory.address();
      for (long at = 0; at < CANARY; at += 8) {
        if (NativeMemory.getLong(base + at) != CANARY_WORD
            || NativeMemory.getLong(base + CANARY + REGION + at) != CANARY_WORD) {
          throw new AssertionError("a canary next to the registered region changed");
        }
      }
    }

    @Override
    public void close() {
      mr.close();
      memory.close();
    }
  }
}

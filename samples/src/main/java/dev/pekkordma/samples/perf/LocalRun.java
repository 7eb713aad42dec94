package dev.pekkordma.samples.perf;

import dev.pekkordma.samples.BadOption;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaDevice;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.ResourceCounts;
import java.io.PrintStream;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Both sides in this JVM, each with a device context of its own on one device, their QPs
 * connected by hand as perftest connects them (its addresses swapped over a socket, here in
 * memory): RC, UC or UD. The answering side runs on a thread of its own.
 */
final class LocalRun {
  private static final int RC_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ;
  /** UC has no RDMA READ to allow. */
  private static final int UC_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
  /** Most outstanding RDMA reads and atomics asked for. */
  static final int RD_ATOMIC = 16;

  private LocalRun() {}

  static PerfRun.Outcome run(RdmaProvider provider, PerfRun.PerfSettings asked, PrintStream out) {
    ResourceCounts before = provider.liveResources();
    requireTransport(provider, asked.spec().connection());
    RdmaDevice device = PerfRun.pickDevice(provider, asked.device());
    long[] serverAllocated = {-1, 0};
    PerfRun.Results results = new PerfRun.Results(out, asked.gbits());
    Initiator initiator;
    PerfSpec spec;
    try (DeviceContext serverCtx = provider.open(device);
        DeviceContext clientCtx = provider.open(device)) {
      PortAttributes portAttrs = checkPort(clientCtx, asked.port());
      Gid gid = checkGid(clientCtx, asked.port(), asked.gidIndex(), portAttrs);
      spec = fitToMtu(asked.spec(), portAttrs, device.name(), asked.port(), out);
      PerfRun.PerfSettings s = asked.with(spec);
      try (PerfSide server = new PerfSide(serverCtx, s.port(), spec);
          PerfSide client = new PerfSide(clientCtx, s.port(), spec)) {
        for (int k = 0; k < spec.qps(); k++) {
          QueuePair sqp = server.pd.createQp(server.qpAttributes());
          server.adopt(k, sqp, sqp::close);
          QueuePair cqp = client.pd.createQp(client.qpAttributes());
          client.adopt(k, cqp, cqp::close);
        }
        if (spec.connection() == QpType.UD) {
          AddressVector av = AddressVector.global(gid, s.gidIndex(), s.port());
          server.adoptAddressHandle(server.pd.createAddressHandle(av));
          client.adoptAddressHandle(client.pd.createAddressHandle(av));
        }
        for (int k = 0; k < spec.qps(); k++) {
          // random first PSNs, as perftest picks them (lrand48 & 0xffffff)
          int serverPsn = ThreadLocalRandom.current().nextInt(1 << 24);
          int clientPsn = ThreadLocalRandom.current().nextInt(1 << 24);
          connect(server, server.qps[k], gid, client.qps[k].qpNum(), clientPsn, serverPsn, s,
              portAttrs);
          connect(client, client.qps[k], gid, server.qps[k].qpNum(), serverPsn, clientPsn, s,
              portAttrs);
          server.remoteQpns[k] = client.qps[k].qpNum();
          client.remoteQpns[k] = server.qps[k].qpNum();
        }
        server.remote = client.local();
        client.remote = server.local();
        server.postAllReceives();
        client.postAllReceives();
        Banner.print(out, provider, device.name(), s, portAttrs, gid,
            "in-process: server and client in this JVM, QPs connected by hand (no CM)", client);
        PeerLink[] link = PeerLink.pair();
        AtomicReference<Throwable> serverFailure = new AtomicReference<>();
        AtomicReference<Throwable> clientFailure = new AtomicReference<>();
        Thread serverThread = new Thread(() -> {
          try {
            PerfResponder r = new PerfResponder(server,
                new IdleWatch(s.timeout().toNanos(), () -> clientFailure.get() != null), link[1]);
            r.run();
            serverAllocated[0] = r.loopAllocatedBytes();
            serverAllocated[1] = r.requests();
          } catch (Throwable e) {
            serverFailure.set(e);
          }
        }, "rdma-perf-server");
        serverThread.setDaemon(true);
        serverThread.start();
        initiator = new Initiator(client,
            new IdleWatch(s.timeout().toNanos(), () -> serverFailure.get() != null), link[0]);
        try {
          results.header(spec);
          initiator.run(results);
          results.footer();
        } catch (RuntimeException e) {
          clientFailure.set(e);
          join(serverThread, s.timeout());
          Throwable sf = serverFailure.get();
          boolean consequence = sf instanceof PerfFailure && ((PerfFailure) sf).peerGone();
          if (sf != null && !consequence) {
            PerfFailure f = new PerfFailure("server side: " + sf.getMessage(), sf);
            f.addSuppressed(e);
            throw f;
          }
          throw e;
        }
        join(serverThread, s.timeout());
        Throwable sf = serverFailure.get();
        if (sf != null) throw new PerfFailure("server side: " + sf.getMessage(), sf);
      }
    }
    return results.outcome(spec, initiator, serverAllocated[0], serverAllocated[1],
        provider.liveResources().minus(before));
  }

  /** UC and UD are optional in a provider: say so before anything is opened. */
  static void requireTransport(RdmaProvider provider, QpType type) {
    RdmaProvider.Feature f = type == QpType.UD ? RdmaProvider.Feature.UD
        : type == QpType.UC ? RdmaProvider.Feature.UC : null;
    if (f != null && !provider.supports(f)) {
      throw new PerfFailure("-c/--connection " + type + ": the " + provider.name()
          + " provider has no " + type + " QPs");
    }
  }

  /**
   * UD carries a message in one packet: sizes above the path MTU are refused; -a stops at the
   * MTU, as perftest's does.
   */
  static PerfSpec fitToMtu(PerfSpec spec, PortAttributes port, String device, int portNum,
      PrintStream out) {
    if (spec.connection() != QpType.UD) return spec;
    int mtu = port.activeMtu().bytes;
    if (spec.maxSize() <= mtu) return spec;
    if (Arrays.equals(spec.sizes(), PerfSpec.ALL_SIZES)) {
      out.println(" Max msg size in UD is MTU " + mtu + ": -a stops there");
      return spec.withSizes(Arrays.stream(spec.sizes()).filter(v -> v <= mtu).toArray());
    }
    throw new BadOption("-s/--size " + spec.maxSize() + " bytes is more than a UD message can"
        + " carry: at most the path MTU, " + mtu + " bytes on " + device + " port " + portNum);
  }

  static PortAttributes checkPort(DeviceContext ctx, int port) {
    int ports = ctx.queryDevice().physPortCnt();
    if (port < 1 || port > ports) {
      throw new BadOption("--ib-port " + port + ": " + ctx.device().name() + " has "
          + ports + " port(s)");
    }
    return ctx.queryPort(port);
  }

  private static Gid checkGid(DeviceContext ctx, int port, int index, PortAttributes attrs) {
    if (index < 0 || index >= attrs.gidTableLength()) {
      throw new BadOption("--gid-index " + index + ": port " + port + " of "
          + ctx.device().name() + " has " + attrs.gidTableLength() + " GID(s)");
    }
    Gid gid = ctx.queryGid(port, index);
    if (gid.isZero()) {
      throw new BadOption("--gid-index " + index + ": entry " + index + " of port "
          + port + " of " + ctx.device().name() + " is empty");
    }
    return gid;
  }

  /** RESET to RTS by hand, with what each transport takes (ibv_modify_qp(3)). */
  private static void connect(PerfSide side, QueuePair qp, Gid peerGid, int peerQpn,
      int peerPsn, int psn, PerfRun.PerfSettings s, PortAttributes port) {
    switch (side.type) {
      case UD -> {
        qp.modify(QpAttributes.toInitUd(s.port(), PerfSide.QKEY));
        qp.modify(new QpAttributes().state(QpState.RTR));
        qp.modify(new QpAttributes().state(QpState.RTS).sqPsn(psn));
      }
      case UC -> {
        AddressVector av = AddressVector.global(peerGid, s.gidIndex(), s.port());
        qp.modify(QpAttributes.toInit(s.port(), UC_ACCESS));
        qp.modify(new QpAttributes().state(QpState.RTR).addressVector(av).destQpNum(peerQpn)
            .rqPsn(peerPsn).pathMtu(port.activeMtu()));
        qp.modify(new QpAttributes().state(QpState.RTS).sqPsn(psn));
      }
      case RC -> {
        DeviceAttributes dev = side.ctx.queryDevice();
        AddressVector av = AddressVector.global(peerGid, s.gidIndex(), s.port());
        qp.modify(QpAttributes.toInit(s.port(), RC_ACCESS));
        qp.modify(QpAttributes.toRtr(av, peerQpn, peerPsn, port.activeMtu())
            .maxDestRdAtomic(Math.min(RD_ATOMIC, dev.maxQpRdAtom())));
        qp.modify(QpAttributes.toRts(psn).maxRdAtomic(Math.min(RD_ATOMIC,
            dev.maxQpInitRdAtom())));
      }
      default -> throw new IllegalStateException(side.type.name());
    }
  }

  private static void join(Thread t, Duration timeout) {
    try {
      t.join(timeout.toMillis() + 5000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (t.isAlive()) throw new PerfFailure("the server side did not stop");
  }
}

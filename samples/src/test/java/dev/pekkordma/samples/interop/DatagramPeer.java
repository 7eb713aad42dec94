package dev.pekkordma.samples.interop;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The other end of rdma-core's datagram examples, on the public API only (the CM's RDMA_PS_UDP
 * ids and UD QPs), speaking their format: {@value #COUNT} datagrams of {@value #SIZE} bytes
 * each way, each a SEND_WITH_IMM whose immediate is the sender's QP number, received after the
 * 40-byte GRH.
 *
 * <ul>
 *   <li>{@code udaddy-server BIND}: as {@code udaddy}: listens on BIND:7174 (udaddy's fixed
 *       port), accepts one SIDR request, receives the ten datagrams, then replies ten times to
 *       the QP the immediates named, each reply the first 100 bytes of its receive buffer as
 *       udaddy's server sends them (the last datagram's GRH, then its first 60 bytes).
 *   <li>{@code udaddy-client SERVER BIND}: as {@code udaddy -s SERVER -b BIND}: a SIDR request
 *       to SERVER:7174, ten datagrams to the QP that ESTABLISHED names, ten replies back.
 *   <li>{@code mckey-receive GROUP BIND}: as {@code mckey -m GROUP -b BIND}: joins, receives ten.
 *   <li>{@code mckey-send GROUP BIND}: as {@code mckey -m GROUP -s -b BIND}: joins, sends ten.
 * </ul>
 */
public final class DatagramPeer {
  /** udaddy's port (it has no option for it). */
  public static final int UDADDY_PORT = 7174;
  /** The tools' default message size and count. */
  public static final int SIZE = 100;
  public static final int COUNT = 10;
  /** The global route header before every UD receive's data. */
  public static final int GRH = 40;
  private static final int SLOT = GRH + SIZE;
  /** After a datagram of a burst, the rest come within this or not at all. */
  static final Duration QUIET = Duration.ofSeconds(5);

  private DatagramPeer() {}

  /** What one run saw: the peer's QP, and each datagram received (its GRH and data). */
  public record Result(int localQpn, int peerQpn, UdParameters ud, List<Datagram> received) {}

  /** One datagram received: the source QP and immediate its completion gave, its bytes. */
  public record Datagram(int sourceQp, int immediate, byte[] grh, byte[] data) {}

  /** Failure of a run, naming what happened (an event's type and status). */
  public static final class PeerFailure extends RuntimeException {
    public final CmEvent event;

    PeerFailure(String message, CmEvent event) {
      super(message);
      this.event = event;
    }
  }

  /** Some datagrams came and the rest did not: UD may drop one, as its name says. */
  public static final class DatagramsLost extends RuntimeException {
    DatagramsLost(String message) {
      super(message);
    }
  }

  /** Our message {@code n}: text, then a pattern, {@value #SIZE} bytes. */
  public static byte[] message(int n) {
    byte[] b = new byte[SIZE];
    byte[] head = ("pekko-rdma datagram " + n + " of " + COUNT + ": ")
        .getBytes(StandardCharsets.US_ASCII);
    System.arraycopy(head, 0, b, 0, head.length);
    for (int i = head.length; i < SIZE; i++) b[i] = (byte) ('a' + (n + i) % 26);
    return b;
  }

  /** A UD QP on a datagram id, its CQ and a buffer of {@value #COUNT} receive slots and one send slot. */
  private static final class Endpoint implements AutoCloseable {
    final CmId id;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final QueuePair qp;
    final OffHeapBuffer buf = OffHeapBuffer.allocate((long) SLOT * (COUNT + 1));
    final MemoryRegion mr;
    final WorkCompletions wc = new WorkCompletions(COUNT);
    AddressHandle ah;

    Endpoint(CmId id) {
      this.id = id;
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(2 * COUNT, null);
      qp = id.createQp(pd, QpInitAttributes.of(QpType.UD, cq, cq).maxSendWr(COUNT)
          .maxRecvWr(COUNT));
      mr = pd.registerMemory(buf, Access.LOCAL_WRITE);
    }

    void postRecvs() {
      try (RecvRequests rr = new RecvRequests(COUNT, 1)) {
        for (int i = 0; i < COUNT; i++) rr.add(i).sge(mr, (long) i * SLOT, SLOT);
        qp.postRecv(rr);
      }
    }

    /** Sends {@code data} to {@code qpn}, with our QP number as the immediate; waits for it. */
    void send(AddressVector to, int qpn, int qkey, byte[] data, Duration timeout) {
      if (ah == null) ah = pd.createAddressHandle(to);
      long off = (long) SLOT * COUNT;
      buf.put(off, data, 0, data.length);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(1000, WrOpcode.SEND_WITH_IMM, SendRequests.SIGNALED).sge(mr, off, data.length)
            .immediate(qp.qpNum()).ud(ah, qpn, qkey);
        qp.postSend(sr);
      }
      long deadline = System.nanoTime() + timeout.toNanos();
      while (true) {
        int k = cq.poll(wc);
        if (k > 0) {
          if (wc.status(0) != WcStatus.SUCCESS || wc.opcode(0) != WcOpcode.SEND) {
            throw new PeerFailure("send: " + wc.describe(0), null);
          }
          return;
        }
        if (System.nanoTime() > deadline) throw new PeerFailure("send: no completion", null);
        Thread.onSpinWait();
      }
    }

    /**
     * The next {@code n} datagrams, each {@value #SIZE} bytes after the GRH. The tools send
     * theirs in one burst: {@link DatagramsLost} when the rest stay away for {@link #QUIET}
     * after one came.
     */
    List<Datagram> receive(int n, Duration timeout, PrintStream out) throws InterruptedException {
      List<Datagram> got = new ArrayList<>();
      long deadline = System.nanoTime() + timeout.toNanos();
      long lastArrival = 0;
      while (got.size() < n) {
        long now = System.nanoTime();
        if (!got.isEmpty() && now - lastArrival > QUIET.toNanos()) {
          throw new DatagramsLost(got.size() + " of " + n + " datagrams, then none for "
              + QUIET.toSeconds() + " s");
        }
        if (now > deadline) {
          throw new PeerFailure(got.size() + " of " + n + " datagrams within "
              + timeout.toSeconds() + " s", null);
        }
        int k = cq.poll(wc);
        for (int i = 0; i < k; i++) {
          if (wc.status(i) != WcStatus.SUCCESS || wc.opcode(i) != WcOpcode.RECV) {
            throw new PeerFailure("receive: " + wc.describe(i), null);
          }
          if (wc.byteLength(i) != GRH + SIZE) {
            throw new PeerFailure("a datagram of " + (wc.byteLength(i) - GRH) + " bytes, not "
                + SIZE + ": " + wc.describe(i), null);
          }
          long slot = wc.wrId(i) * SLOT;
          byte[] grh = new byte[GRH];
          byte[] data = new byte[SIZE];
          buf.get(slot, grh, 0, GRH);
          buf.get(slot + GRH, data, 0, SIZE);
          got.add(new Datagram(wc.sourceQp(i), wc.immediate(i), grh, data));
          lastArrival = System.nanoTime();
        }
        if (k == 0) Thread.sleep(1);
      }
      out.println("datagram-peer: received " + n + " datagrams of " + SIZE + " bytes from QP "
          + got.get(0).sourceQp());
      return got;
    }

    @Override
    public void close() {
      if (ah != null) ah.close();
      id.destroyQp();
      mr.close();
      cq.close();
      pd.close();
      buf.close();
      wc.close();
    }
  }

  private static CmEvent await(CmEventChannel ch, CmEventType type, Duration timeout,
      String doing) {
    CmEvent e = ch.awaitEvent(timeout);
    if (e == null) throw new PeerFailure(doing + ": no " + type + " within " + timeout, null);
    if (e.type() != type) {
      throw new PeerFailure(doing + ": " + e.outcome(), e);
    }
    return e;
  }

  /**
   * udaddy's server: one SIDR request on {@code bind}:7174, accepted; ten datagrams in; ten
   * replies to the QP their immediates name, with the address vector the request gave.
   * {@code listening} runs once it listens.
   */
  public static Result udaddyServer(RdmaProvider provider, InetAddress bind, Duration timeout,
      Runnable listening, PrintStream out) throws InterruptedException {
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      CmId listener = ch.createId("udaddy-server", RdmaPortSpace.UDP);
      try {
        listener.bind(new InetSocketAddress(bind, UDADDY_PORT));
        listener.listen(1);
        out.println("datagram-peer: listening on " + listener.localAddress());
        listening.run();
        CmEvent req = await(ch, CmEventType.CONNECT_REQUEST, timeout, "waiting for a request");
        CmId conn = req.id();
        out.println("datagram-peer: request from " + conn.remoteAddress());
        try (Endpoint ep = new Endpoint(conn)) {
          ep.postRecvs();
          conn.accept(ConnectionParameters.defaults());
          List<Datagram> in = ep.receive(COUNT, timeout, out);
          // as udaddy: the peer's QP from the first immediate, our own QP's Q_Key, and the
          // reply is the first SIZE bytes of the receive buffer the last datagram filled
          int peer = in.get(0).immediate();
          Datagram last = in.get(in.size() - 1);
          byte[] reply = new byte[SIZE];
          System.arraycopy(last.grh(), 0, reply, 0, GRH);
          System.arraycopy(last.data(), 0, reply, GRH, SIZE - GRH);
          for (int i = 0; i < COUNT; i++) {
            ep.send(req.ud().addressVector(), peer, ep.qp.query().qkey(), reply, timeout);
          }
          out.println("datagram-peer: replied " + COUNT + " times to QP " + peer);
          return new Result(ep.qp.qpNum(), peer, req.ud(), in);
        } finally {
          conn.close();
        }
      } finally {
        listener.close();
      }
    }
  }

  /**
   * udaddy's client: a SIDR request to {@code server}:7174 from {@code bind}; ten datagrams to
   * the QP ESTABLISHED names, ten replies in. A request nobody answers fails with the event.
   */
  public static Result udaddyClient(RdmaProvider provider, InetAddress server, InetAddress bind,
      Duration timeout, PrintStream out) throws InterruptedException {
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      CmId id = ch.createId("udaddy-client", RdmaPortSpace.UDP);
      try {
        id.resolveAddress(new InetSocketAddress(bind, 0),
            new InetSocketAddress(server, UDADDY_PORT), Duration.ofSeconds(2));
        await(ch, CmEventType.ADDR_RESOLVED, timeout, "resolving " + server);
        id.resolveRoute(Duration.ofSeconds(2));
        await(ch, CmEventType.ROUTE_RESOLVED, timeout, "resolving the route to " + server);
        try (Endpoint ep = new Endpoint(id)) {
          ep.postRecvs();
          id.connect(ConnectionParameters.defaults());
          CmEvent est = await(ch, CmEventType.ESTABLISHED, timeout,
              "SIDR request to " + server + ":" + UDADDY_PORT);
          UdParameters ud = est.ud();
          out.println("datagram-peer: ESTABLISHED, QP " + ud.qpNum() + ", Q_Key 0x"
              + Integer.toHexString(ud.qkey()));
          for (int i = 0; i < COUNT; i++) {
            ep.send(ud.addressVector(), ud.qpNum(), ud.qkey(), message(i), timeout);
          }
          List<Datagram> in = ep.receive(COUNT, timeout, out);
          return new Result(ep.qp.qpNum(), ud.qpNum(), ud, in);
        }
      } finally {
        id.close();
      }
    }
  }

  /** Joins {@code group} from an id resolved from {@code bind} (as mckey does). */
  private static UdParameters join(CmEventChannel ch, Endpoint ep, InetSocketAddress group,
      Duration timeout, PrintStream out) {
    ep.id.joinMulticast(group);
    CmEvent j = await(ch, CmEventType.MULTICAST_JOIN, timeout, "joining " + group);
    out.println("datagram-peer: joined " + group.getAddress().getHostAddress() + ", MGID "
        + j.ud().addressVector().dgid() + ", Q_Key 0x" + Integer.toHexString(j.ud().qkey()));
    return j.ud();
  }

  private static CmId resolvedId(CmEventChannel ch, String name, InetAddress group,
      InetAddress bind, Duration timeout) {
    CmId id = ch.createId(name, RdmaPortSpace.UDP);
    id.resolveAddress(new InetSocketAddress(bind, 0), new InetSocketAddress(group, 0),
        Duration.ofSeconds(2));
    await(ch, CmEventType.ADDR_RESOLVED, timeout, "resolving " + group);
    return id;
  }

  /** mckey's receiver: joins {@code group}, then ({@code joined} runs) receives ten, leaves. */
  public static Result mckeyReceive(RdmaProvider provider, InetAddress group, InetAddress bind,
      Duration timeout, Runnable joined, PrintStream out) throws InterruptedException {
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      CmId id = resolvedId(ch, "mckey-receiver", group, bind, timeout);
      try (Endpoint ep = new Endpoint(id)) {
        ep.postRecvs();
        InetSocketAddress g = new InetSocketAddress(group, 0);
        UdParameters ud = join(ch, ep, g, timeout, out);
        joined.run();
        List<Datagram> in = ep.receive(COUNT, timeout, out);
        id.leaveMulticast(g);
        return new Result(ep.qp.qpNum(), in.get(0).sourceQp(), ud, in);
      } finally {
        id.close();
      }
    }
  }

  /** mckey's sender: joins {@code group}, sends ten to it, leaves. */
  public static Result mckeySend(RdmaProvider provider, InetAddress group, InetAddress bind,
      Duration timeout, PrintStream out) {
    try (CmEventChannel ch = provider.createCmEventChannel()) {
      CmId id = resolvedId(ch, "mckey-sender", group, bind, timeout);
      try (Endpoint ep = new Endpoint(id)) {
        InetSocketAddress g = new InetSocketAddress(group, 0);
        UdParameters ud = join(ch, ep, g, timeout, out);
        for (int i = 0; i < COUNT; i++) {
          ep.send(ud.addressVector(), ud.qpNum(), ud.qkey(), message(i), timeout);
        }
        out.println("datagram-peer: sent " + COUNT + " datagrams to " + group.getHostAddress());
        id.leaveMulticast(g);
        return new Result(ep.qp.qpNum(), ud.qpNum(), ud, List.of());
      } finally {
        id.close();
      }
    }
  }

  /**
   * {@code DatagramPeer udaddy-server BIND | udaddy-client SERVER BIND | mckey-receive GROUP
   * BIND | mckey-send GROUP BIND}; exits 0 when the exchange completed.
   */
  public static void main(String[] args) throws Exception {
    if (args.length < 2) {
      System.err.println("usage: DatagramPeer udaddy-server BIND | udaddy-client SERVER BIND"
          + " | mckey-receive GROUP BIND | mckey-send GROUP BIND");
      System.exit(2);
    }
    Duration timeout = Duration.ofSeconds(60);
    InetAddress a = InetAddress.getByName(args[1]);
    InetAddress b = args.length > 2 ? InetAddress.getByName(args[2]) : null;
    try (RdmaProvider provider = RdmaProviders.load()) {
      Result r = switch (args[0]) {
        case "udaddy-server" -> udaddyServer(provider, a, timeout, () -> { }, System.out);
        case "udaddy-client" -> udaddyClient(provider, a, b, timeout, System.out);
        case "mckey-receive" -> mckeyReceive(provider, a, b, timeout, () -> { }, System.out);
        case "mckey-send" -> mckeySend(provider, a, b, timeout, System.out);
        default -> throw new IllegalArgumentException("unknown role " + args[0]);
      };
      System.out.println("datagram-peer: done, our QP " + r.localQpn() + ", the peer's "
          + r.peerQpn());
    } catch (PeerFailure e) {
      System.out.println("datagram-peer: " + e.getMessage());
      System.exit(1);
    }
  }
}

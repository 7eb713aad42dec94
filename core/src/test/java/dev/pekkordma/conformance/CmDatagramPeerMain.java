package dev.pekkordma.conformance;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WrOpcode;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;

/**
 * The other process of {@link CmDatagramConformanceTest}'s cross-process cases.
 *
 * <p>{@code sidr}: a UDP listener; prints {@code LISTENING port}, accepts one SIDR request whose
 * private data starts with {@link #HELLO} with {@link #WELCOME}, answers the first datagram it
 * receives with {@code echo:} and its bytes, to the requester's address (the CONNECT_REQUEST's)
 * and QP (the receive's source).
 *
 * <p>{@code multicast GROUP}: a member of GROUP; prints {@code JOINED qpn}, then {@code GOT hex}
 * of the first datagram from another QP, and sends {@code echo:} and its bytes to the group.
 *
 * <p>Both print {@code PEER OK} at the end.
 */
public final class CmDatagramPeerMain {
  static final String HELLO = "datagram-parent";
  static final String WELCOME = "datagram-peer";
  private static final int GRH = 40;
  private static final Duration T = Duration.ofSeconds(20);

  private CmDatagramPeerMain() {}

  public static void main(String[] args) {
    PeerProcess.watchdog(Duration.ofSeconds(60));
    try (RdmaProvider provider = ConformanceProvider.loadProvider(ConfigFactory.empty())) {
      if (args.length > 0 && args[0].equals("sidr")) {
        sidr(provider);
      } else if (args.length > 1 && args[0].equals("multicast")) {
        multicast(provider, InetAddress.getByName(args[1]));
      } else {
        throw new IllegalArgumentException("usage: sidr | multicast GROUP");
      }
      System.out.println("PEER OK");
      System.out.flush();
      System.exit(0);
    } catch (Throwable t) {
      System.out.println("PEER FAIL " + t);
      t.printStackTrace(System.out);
      System.out.flush();
      System.exit(1);
    }
  }

  /** A datagram id's verbs: PD, CQ, UD QP, buffer. */
  private static final class Side implements AutoCloseable {
    final CmId id;
    final ProtectionDomain pd;
    final CompletionQueue cq;
    final Region r;
    AddressHandle ah;

    Side(CmId id) {
      this.id = id;
      pd = id.verbs().allocPd();
      cq = id.verbs().createCq(16, null);
      id.createQp(pd, QpInitAttributes.of(QpType.UD, cq, cq).maxSendWr(4).maxRecvWr(4));
      r = Region.of(pd, 8192, Access.LOCAL_WRITE);
    }

    Wc receive(int notFrom) {
      while (true) {
        Wc w = Completions.awaitOne(cq, "peer CQ");
        if (!w.ok()) throw new IllegalStateException("completion " + w);
        if (w.opcode() == WcOpcode.RECV && w.srcQp() != notFrom) return w;
        if (w.opcode() == WcOpcode.RECV) ConformanceTest.postRecv(id.qp(), 1, r, 0, 2048);
      }
    }

    void send(AddressVector to, int qpn, byte[] data) {
      r.put(4096, data);
      ah = pd.createAddressHandle(to);
      try (SendRequests sr = new SendRequests(1, 1)) {
        sr.add(2, WrOpcode.SEND, SendRequests.SIGNALED).sge(r.mr, 4096, data.length)
            .ud(ah, qpn, UdParameters.UDP_QKEY);
        id.qp().postSend(sr);
      }
      while (true) {
        Wc w = Completions.awaitOne(cq, "peer CQ (send)");
        if (w.wrId() == 2 && w.opcode() == WcOpcode.SEND) {
          if (!w.ok()) throw new IllegalStateException("send " + w);
          return;
        }
      }
    }

    @Override
    public void close() {
      if (id.qp() != null) id.destroyQp();
      if (ah != null) ah.close();
      r.close();
      cq.close();
      pd.close();
      id.close();
    }
  }

  private static void sidr(RdmaProvider provider) throws Exception {
    CmEventChannel ch = provider.createCmEventChannel();
    CmId listener = ch.createId("peer-listener", RdmaPortSpace.UDP);
    Side side = null;
    try {
      listener.bind(new InetSocketAddress(InetAddress.getByName(ConformanceProvider.cmAddress()),
          0));
      listener.listen(1);
      System.out.println("LISTENING " + listener.localAddress().getPort());
      System.out.flush();
      CmEvent req = CmPeerMain.await(ch, CmEventType.CONNECT_REQUEST, T);
      byte[] hello = HELLO.getBytes(StandardCharsets.US_ASCII);
      byte[] pdata = req.privateData();
      if (pdata.length < hello.length
          || !Arrays.equals(hello, Arrays.copyOf(pdata, hello.length))) {
        throw new IllegalStateException("SIDR private data " + PeerProcess.hex(pdata));
      }
      side = new Side(req.id());
      ConformanceTest.postRecv(side.id.qp(), 1, side.r, 0, 2048);
      side.id.accept(ConnectionParameters.withPrivateData(
          WELCOME.getBytes(StandardCharsets.US_ASCII)));
      Wc in = side.receive(-1);
      byte[] echo = ConformanceTest.concat("echo:".getBytes(StandardCharsets.US_ASCII),
          side.r.get(GRH, in.byteLen() - GRH));
      side.send(req.ud().addressVector(), in.srcQp(), echo);
    } finally {
      if (side != null) side.close();
      listener.close();
      ch.close();
    }
  }

  private static void multicast(RdmaProvider provider, InetAddress group) throws Exception {
    CmEventChannel ch = provider.createCmEventChannel();
    CmId id = ch.createId("peer-member", RdmaPortSpace.UDP);
    Side side = null;
    InetSocketAddress g = new InetSocketAddress(group, 0);
    try {
      id.bind(new InetSocketAddress(InetAddress.getByName(ConformanceProvider.cmAddress()), 0));
      side = new Side(id);
      ConformanceTest.postRecv(id.qp(), 1, side.r, 0, 2048);
      id.joinMulticast(g);
      CmEvent joined = CmPeerMain.await(ch, CmEventType.MULTICAST_JOIN, T);
      System.out.println("JOINED " + id.qp().qpNum());
      System.out.flush();
      Wc in = side.receive(id.qp().qpNum());
      byte[] got = side.r.get(GRH, in.byteLen() - GRH);
      System.out.println("GOT " + PeerProcess.hex(got));
      System.out.flush();
      side.send(joined.ud().addressVector(), UdParameters.MULTICAST_QPN,
          ConformanceTest.concat("echo:".getBytes(StandardCharsets.US_ASCII), got));
      id.leaveMulticast(g);
    } finally {
      if (side != null) side.close();
      else id.close();
      ch.close();
    }
  }
}

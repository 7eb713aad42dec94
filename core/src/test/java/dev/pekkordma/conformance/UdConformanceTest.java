package dev.pekkordma.conformance;

import static dev.pekkordma.verbs.SendRequests.SIGNALED;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProvider.Feature;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WrOpcode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Unreliable datagrams: the 40-byte GRH, qkeys, source QP numbers. */
class UdConformanceTest extends ConformanceTest {
  private static final int GRH = 40;
  private static final int QKEY = 0x11111111;

  private ProtectionDomain pd;
  private CompletionQueue aCq;
  private CompletionQueue bCq;
  private QueuePair a;
  private QueuePair b;
  private AddressHandle ah;
  private Region ar;
  private Region br;

  @BeforeEach
  void udPair() {
    requireFeature(Feature.UD);
    pd = fx.context.allocPd();
    aCq = fx.context.createCq(16, null);
    bCq = fx.context.createCq(16, null);
    a = pd.createQp(QpInitAttributes.of(QpType.UD, aCq, aCq));
    b = pd.createQp(QpInitAttributes.of(QpType.UD, bCq, bCq));
    for (QueuePair qp : new QueuePair[] {a, b}) {
      qp.modify(QpAttributes.toInitUd(fx.port, QKEY));
      qp.modify(new QpAttributes().state(QpState.RTR));
      qp.modify(new QpAttributes().state(QpState.RTS).sqPsn(0x10));
    }
    ah = pd.createAddressHandle(fx.loopback());
    ar = Region.of(pd, 4096, Link.ALL_REMOTE);
    br = Region.of(pd, 4096, Link.ALL_REMOTE);
  }

  @AfterEach
  void close() {
    if (br != null) br.close();
    if (ar != null) ar.close();
    if (ah != null) ah.close();
    if (b != null) b.close();
    if (a != null) a.close();
    if (bCq != null) bCq.close();
    if (aCq != null) aCq.close();
    if (pd != null) pd.close();
  }

  private void udSend(long wrId, int offset, int length, int remoteQkey) {
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(wrId, WrOpcode.SEND, SIGNALED).sge(ar.mr, offset, length).ud(ah, b.qpNum(),
          remoteQkey);
      a.postSend(sr);
    }
  }

  @Test
  void datagramArrivesAfterA40ByteGrhWithTheSourceQp() {
    br.fill(0x5a);
    byte[] data = Region.pattern(100, 21);
    ar.put(0, data);
    postRecv(b, 1, br, 0, GRH + 256);
    udSend(2, 0, 100, QKEY);
    Completions.awaitSuccess(aCq, "A CQ", 2, WcOpcode.SEND);
    Wc r = Completions.awaitSuccess(bCq, "B CQ", 1, WcOpcode.RECV);
    assertEquals(GRH + 100, r.byteLen(), "byte_len (GRH + payload) of " + r);
    assertTrue(r.hasGrh(), "GRH flag of " + r);
    assertEquals(a.qpNum(), r.srcQp(), "source QP of " + r);
    assertEquals(b.qpNum(), r.qpNum(), "qp_num of " + r);
    assertBytes(data, br.get(GRH, 100), "payload after the GRH");
    assertBytes(Region.filled(4096 - GRH - 100, 0x5a), br.get(GRH + 100, 4096 - GRH - 100),
        "after the payload");
  }

  @Test
  void datagramWithTheWrongQkeyIsDropped() {
    postRecv(b, 1, br, 0, GRH + 256);
    udSend(2, 0, 100, QKEY + 1);
    Completions.awaitSuccess(aCq, "A CQ (a UD send completes without the peer)", 2,
        WcOpcode.SEND);
    Completions.expectNone(bCq, "B CQ (wrong qkey)");
    // the receive is still there for a good datagram
    udSend(3, 0, 10, QKEY);
    Completions.awaitSuccess(aCq, "A CQ", 3, WcOpcode.SEND);
    Wc r = Completions.awaitSuccess(bCq, "B CQ", 1, WcOpcode.RECV);
    assertEquals(GRH + 10, r.byteLen(), r.toString());
  }

  @Test
  void datagramToAQpWithoutReceiveIsDroppedSilently() {
    udSend(4, 0, 10, QKEY);
    Completions.awaitSuccess(aCq, "A CQ", 4, WcOpcode.SEND);
    postRecv(b, 5, br, 0, GRH + 256);
    Completions.expectNone(bCq, "B CQ (the datagram came before the receive)");
    assertEquals(QpState.RTS, b.state(), "B state");
  }

  @Test
  void rdmaOnUdIsRejected() {
    try (SendRequests sr = new SendRequests(1, 1)) {
      sr.add(6, WrOpcode.RDMA_WRITE, SIGNALED).sge(ar.mr, 0, 8).rdma(br.address(), br.rkey());
      RdmaException e = assertRdma(RdmaException.EINVAL, () -> a.postSend(sr),
          "RDMA_WRITE on a UD QP");
      assertMentions(e, "RDMA_WRITE on a UD QP", "RDMA_WRITE");
    }
  }
}

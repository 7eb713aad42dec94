package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;

/**
 * How the CM moves a connection's QP, as librdmacm does: made and taken to INIT by {@code
 * rdma_create_qp}, to RTR and RTS with the peer's numbers from the handshake, to ERR on a
 * disconnect.
 */
final class CmQpSteps {
  /**
   * The local ACK timeout the CM gives a connected QP, as the kernel's CM derives it for RoCE
   * (packet lifetime 16, plus one): 4.096 us * 2^17, about 0.54 s a try, so a peer that stops
   * answering fails the connection within (retryCount + 1) tries of it.
   */
  static final int ACK_TIMEOUT = 17;

  /** The access rdma_create_qp gives a QP on its way to INIT. */
  static final int QP_ACCESS =
      Access.LOCAL_WRITE | Access.REMOTE_READ | Access.REMOTE_WRITE | Access.REMOTE_ATOMIC;

  private CmQpSteps() {}

  /**
   * {@code rdma_create_qp}: a QP of a type {@code space} takes on the id's device: an RC QP in
   * INIT, or a UD QP in RTS with {@link UdParameters#UDP_QKEY}, as librdmacm makes them.
   */
  static QueuePair create(String verb, RdmaPortSpace space, ProtectionDomain pd,
      QpInitAttributes attributes, DeviceContext verbs, QueuePair existing) {
    if (pd == null || attributes == null) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          (pd == null ? "pd" : "attributes") + " is null");
    }
    if (pd.context() != verbs) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the PD is on device context "
          + pd.context() + ", the id on " + verbs + "; allocate the PD from verbs()");
    }
    if (existing != null) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "the id already has QP " + existing.qpNum());
    }
    if (!space.takes(attributes.type())) {
      throw new RdmaException(verb, RdmaException.EINVAL, "an RDMA_PS_" + space + " id takes "
          + (space.datagram() ? "UD" : "RC") + " QPs, not " + attributes.type());
    }
    QueuePair q = pd.createQp(attributes);
    try {
      if (attributes.type() == QpType.UD) {
        q.modify(QpAttributes.toInitUd(1, UdParameters.UDP_QKEY));
        q.modify(new QpAttributes().state(QpState.RTR));
        q.modify(new QpAttributes().state(QpState.RTS).sqPsn(0));
      } else {
        q.modify(QpAttributes.toInit(1, QP_ACCESS));
      }
    } catch (RuntimeException e) {
      q.close();
      throw e;
    }
    return q;
  }

  /** The CM moves the QP on from INIT: the application must have left it there. */
  static void requireInit(String verb, QueuePair qp) {
    if (qp != null && qp.state() != QpState.INIT) {
      throw new RdmaException(verb, RdmaException.EINVAL, "QP " + qp.qpNum() + " is in "
          + qp.state() + "; the CM moves it on from INIT (leave it as rdma_create_qp made it)");
    }
  }

  /** To RTR, towards the QP the peer's REQ or REP names. */
  static void toRtr(QueuePair qp, CmMessage peer, Mtu mtu, int maxDestRdAtomic) {
    qp.modify(QpAttributes.toRtr(AddressVector.global(peer.gid(), 0, 1), peer.qpn(), peer.psn(),
        mtu).maxDestRdAtomic(maxDestRdAtomic));
  }

  static void toRts(QueuePair qp, int psn, int retryCount, int rnrRetry, int maxRdAtomic) {
    qp.modify(QpAttributes.toRts(psn).timeout(ACK_TIMEOUT).retryCount(retryCount)
        .rnrRetry(rnrRetry).maxRdAtomic(maxRdAtomic));
  }

  /** Destroys the QP, if any, swallowing errors: the provider is closing. */
  static void closeQuietly(QueuePair qp) {
    if (qp == null) return;
    try {
      qp.close();
    } catch (RuntimeException e) {
      // going away regardless
    }
  }

  /** To ERR, which flushes the QP's outstanding work requests. */
  static void flush(QueuePair qp) {
    if (qp == null) return;
    try {
      qp.modify(new QpAttributes().state(QpState.ERR));
    } catch (RuntimeException e) {
      // a QP whose device died is in ERR already
    }
  }
}

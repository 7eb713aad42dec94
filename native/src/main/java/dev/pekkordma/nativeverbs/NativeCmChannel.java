package dev.pekkordma.nativeverbs;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.RdmaException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A librdmacm event channel: {@code struct rdma_event_channel *}. A daemon thread per channel
 * blocks in poll(2) on its fd, reads each event with rdma_get_cm_event, copies it to a
 * {@link CmEvent}, acknowledges it and queues it for {@link #awaitEvent}.
 */
final class NativeCmChannel implements CmEventChannel {
  final NativeProvider provider;
  final long handle;
  final int fd;
  final Map<Long, NativeCmId> ids = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();
  private final BlockingQueue<CmEvent> events = new LinkedBlockingQueue<>();
  private final int wakeFd;
  private final Thread pump;
  private volatile boolean stopping;
  private volatile RuntimeException pumpFailure;

  NativeCmChannel(NativeProvider provider, long channel) {
    this.provider = provider;
    this.handle = channel;
    this.fd = NativeMemory.getInt(channel + Layout.CM_EVENT_CHANNEL_FD);
    this.wakeFd = Verbs.eventFd();
    this.pump = new Thread(this::pump, "pekko-rdma-cm-events-fd" + fd);
    pump.setDaemon(true);
    pump.start();
  }

  /**
   * Reads every event as it arrives (blocking in poll(2) on the channel's fd and an eventfd that
   * close() signals), acknowledges it and queues its copy. A DISCONNECTED is answered at once
   * with rdma_disconnect (the DREP), as the software CM does, so the peer's disconnect completes
   * without waiting for this application; a later disconnect() of the id is a no-op.
   */
  private void pump() {
    try {
      while (!stopping) {
        if (!Verbs.awaitReadableOrWoken(fd, wakeFd)) break;
        if (stopping) break;
        long ev = Verbs.getCmEvent(handle);
        CmEvent e;
        try {
          e = toEvent(ev);
        } finally {
          Verbs.ackCmEvent(ev);
        }
        if (e.type() == CmEventType.DISCONNECTED && e.id() instanceof NativeCmId) {
          ((NativeCmId) e.id()).answerDisconnect();
        }
        if (e.type() == CmEventType.DEVICE_REMOVAL && e.id() instanceof NativeCmId removed) {
          provider.deviceRemoved(removed.verbsHandle());
        }
        events.add(e);
      }
    } catch (RuntimeException e) {
      pumpFailure = e;
    }
  }

  void checkOpen(String verb) {
    if (closed.get()) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the CM event channel is closed");
    }
  }

  @Override
  public CmId createId(Object context, RdmaPortSpace space) {
    checkOpen("rdma_create_id");
    if (space == null) {
      throw new RdmaException("rdma_create_id", RdmaException.EINVAL, "no port space given");
    }
    if (space != RdmaPortSpace.TCP && space != RdmaPortSpace.UDP) {
      // librdmacm's rdma_create_id makes RDMA_PS_IB ids RC only, and an RDMA_PS_IPOIB id's QP
      // takes its Q_Key from an InfiniBand subnet administrator's IPoIB group
      throw new RdmaException("rdma_create_id", RdmaException.EPROTONOSUPPORT,
          "the native provider creates RDMA_PS_TCP and RDMA_PS_UDP ids, not "
              + NativeCmId.psName(space));
    }
    NativeCmId id = new NativeCmId(this, Verbs.createId(handle, space.code,
        "creating an " + NativeCmId.psName(space) + " id"), context, space);
    ids.put(id.handle, id);
    provider.live.cmIds.incrementAndGet();
    return id;
  }

  @Override
  public CmEvent awaitEvent(Duration timeout) {
    checkOpen("rdma_get_cm_event");
    try {
      CmEvent e = timeout == null ? events.take()
          : events.poll(Math.max(0, timeout.toNanos()), TimeUnit.NANOSECONDS);
      if (e == null && pumpFailure != null) {
        throw new RdmaException("rdma_get_cm_event", pumpFailure instanceof RdmaException
            ? ((RdmaException) pumpFailure).errno() : RdmaException.EIO,
            "the CM event reader failed: " + pumpFailure.getMessage(), pumpFailure);
      }
      return e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return null;
    }
  }

  private CmEvent toEvent(long ev) {
    long idPtr = NativeMemory.getLong(ev + Layout.CM_EVENT_ID);
    long listenPtr = NativeMemory.getLong(ev + Layout.CM_EVENT_LISTEN_ID);
    CmEventType type = CmEventType.of(NativeMemory.getInt(ev + Layout.CM_EVENT_EVENT));
    int status = NativeMemory.getInt(ev + Layout.CM_EVENT_STATUS);
    NativeCmId listen = listenPtr == 0 ? null : ids.get(listenPtr);
    NativeCmId id;
    if (type == CmEventType.CONNECT_REQUEST) {
      // a new id for the connection, on this channel, with the listener's context and space
      id = new NativeCmId(this, idPtr, listen == null ? null : listen.context(),
          spaceOf(NativeMemory.getInt(idPtr + Layout.CM_ID_PS)));
      ids.put(idPtr, id);
      provider.live.cmIds.incrementAndGet();
    } else {
      id = ids.get(idPtr);
    }
    if (id != null && id.portSpace().datagram()) {
      return datagramEvent(ev, type, id, listen, status);
    }
    byte[] data = new byte[0];
    ConnectionParameters params = null;
    switch (type) {
      case CONNECT_REQUEST:
      case CONNECT_RESPONSE:
      case ESTABLISHED:
      case REJECTED: {
        long conn = ev + Layout.CM_EVENT_PARAM_CONN;
        long p = NativeMemory.getLong(conn + Layout.CONN_PARAM_PRIVATE_DATA);
        int len = NativeQp.u8(conn + Layout.CONN_PARAM_PRIVATE_DATA_LEN);
        if (p != 0 && len > 0) {
          data = new byte[len];
          NativeMemory.copyToArray(p, data, 0, len);
        }
        params = new ConnectionParameters(data,
            NativeQp.u8(conn + Layout.CONN_PARAM_RESPONDER_RESOURCES),
            NativeQp.u8(conn + Layout.CONN_PARAM_INITIATOR_DEPTH),
            NativeQp.u8(conn + Layout.CONN_PARAM_RETRY_COUNT),
            NativeQp.u8(conn + Layout.CONN_PARAM_RNR_RETRY_COUNT));
        break;
      }
      default:
        break;
    }
    return new CmEvent(type, id, listen, status, data, params);
  }

  private static RdmaPortSpace spaceOf(int code) {
    for (RdmaPortSpace s : RdmaPortSpace.values()) if (s.code == code) return s;
    return RdmaPortSpace.TCP;
  }

  /**
   * A datagram id's event, its param.ud decoded: CONNECT_REQUEST (the request's private data;
   * the address vector back to the requester from the new id's route: the kernel's is zeros, and
   * the request carries no QP number or Q_Key), ESTABLISHED (the peer's QP, Q_Key and address
   * vector, the reply's private data), MULTICAST_JOIN (the group's address vector, QP 0xFFFFFF
   * and Q_Key; its private_data is our join's context). UNREACHABLE (the SIDR reply's status:
   * 1 no listener, 2 rejected, 3 no QP; or -ETIMEDOUT) carries a reject's private data.
   */
  private CmEvent datagramEvent(long ev, CmEventType type, NativeCmId id, NativeCmId listen,
      int status) {
    long ud = ev + Layout.CM_EVENT_PARAM_UD;
    switch (type) {
      case CONNECT_REQUEST: {
        byte[] data = privateData(ud);
        return new CmEvent(type, id, listen, status, data, null,
            new UdParameters(data, id.requesterAddressVector(), 0, 0));
      }
      case ESTABLISHED: {
        byte[] data = privateData(ud);
        return new CmEvent(type, id, listen, status, data, null, new UdParameters(data,
            NativeQp.readAhAttr(ud + Layout.UD_PARAM_AH_ATTR),
            NativeMemory.getInt(ud + Layout.UD_PARAM_QP_NUM),
            NativeMemory.getInt(ud + Layout.UD_PARAM_QKEY)));
      }
      case MULTICAST_JOIN: {
        AddressVector group = NativeQp.readAhAttr(ud + Layout.UD_PARAM_AH_ATTR);
        id.joined(NativeMemory.getLong(ud + Layout.UD_PARAM_PRIVATE_DATA), group);
        byte[] none = new byte[0];
        return new CmEvent(type, id, listen, status, none, null, new UdParameters(none, group,
            NativeMemory.getInt(ud + Layout.UD_PARAM_QP_NUM),
            NativeMemory.getInt(ud + Layout.UD_PARAM_QKEY)));
      }
      case MULTICAST_ERROR:
        return new CmEvent(type, id, listen, status, new byte[0], null, null);
      case UNREACHABLE:
      case REJECTED:
        return new CmEvent(type, id, listen, status, privateData(ud), null, null);
      default:
        return new CmEvent(type, id, listen, status, new byte[0], null, null);
    }
  }

  /** The private data of param.conn or param.ud (at the same offsets in both). */
  private static byte[] privateData(long param) {
    long p = NativeMemory.getLong(param + Layout.UD_PARAM_PRIVATE_DATA);
    int len = NativeQp.u8(param + Layout.UD_PARAM_PRIVATE_DATA_LEN);
    byte[] data = new byte[p == 0 ? 0 : len];
    if (data.length > 0) NativeMemory.copyToArray(p, data, 0, data.length);
    return data;
  }

  @Override
  public void close() {
    if (closed.get()) return;
    synchronized (this) {
      if (closed.get()) return;
      if (!ids.isEmpty()) {
        List<String> names = new ArrayList<>();
        for (NativeCmId id : ids.values()) names.add(id.toString());
        throw new RdmaException("rdma_destroy_event_channel", RdmaException.EBUSY,
            "the CM event channel still has ids: " + names);
      }
      stopping = true;
      Verbs.wake(wakeFd);
      try {
        pump.join(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      Verbs.closeFd(wakeFd);
      Verbs.destroyEventChannel(handle);
      closed.set(true);
    }
    provider.cmChannels.remove(this);
  }

  /** Destroys the QPs of its ids (rdma_destroy_qp). */
  void forceCloseQps(List<RuntimeException> failures) {
    for (NativeCmId id : new ArrayList<>(ids.values())) {
      NativeQp qp = id.qpOrNull();
      if (qp != null) qp.forceClose(failures);
    }
  }

  /** Destroys every id, then the channel. */
  void forceClose(List<RuntimeException> failures) {
    forceCloseQps(failures);
    for (NativeCmId id : new ArrayList<>(ids.values())) {
      try {
        id.close();
      } catch (RuntimeException e) {
        failures.add(e);
      }
    }
    try {
      close();
    } catch (RuntimeException e) {
      failures.add(e);
    }
  }
}

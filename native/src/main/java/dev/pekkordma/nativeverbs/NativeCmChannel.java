package dev.pekkordma.nativeverbs;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.RdmaException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A librdmacm event channel: {@code struct rdma_event_channel *}. Waiting blocks in poll(2) on its
 * fd; each event is read with rdma_get_cm_event, copied to a {@link CmEvent} and acknowledged.
 */
final class NativeCmChannel implements CmEventChannel {
  final NativeProvider provider;
  final long handle;
  final int fd;
  final Map<Long, NativeCmId> ids = new ConcurrentHashMap<>();
  private final AtomicBoolean closed = new AtomicBoolean();

  NativeCmChannel(NativeProvider provider, long channel) {
    this.provider = provider;
    this.handle = channel;
    this.fd = NativeMemory.getInt(channel + Layout.CM_EVENT_CHANNEL_FD);
  }

  void checkOpen(String verb) {
    if (closed.get()) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the CM event channel is closed");
    }
  }

  @Override
  public CmId createId(Object context) {
    checkOpen("rdma_create_id");
    NativeCmId id = new NativeCmId(this, Verbs.createId(handle), context);
    ids.put(id.handle, id);
    provider.cmIds.incrementAndGet();
    return id;
  }

  @Override
  public CmEvent awaitEvent(Duration timeout) {
    checkOpen("rdma_get_cm_event");
    long deadline = timeout == null ? 0 : System.nanoTime() + Math.max(0, timeout.toNanos());
    while (true) {
      Duration left = timeout == null ? null
          : Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
      if (!Verbs.awaitReadable(fd, left)) return null;
      synchronized (this) {
        if (closed.get()) return null;
        if (Verbs.awaitReadable(fd, Duration.ZERO)) {
          long ev = Verbs.getCmEvent(handle);
          try {
            return toEvent(ev);
          } finally {
            Verbs.ackCmEvent(ev);
          }
        }
      }
      if (timeout != null && System.nanoTime() - deadline >= 0) return null;
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
      // a new id for the connection, on this channel, with the listener's context
      id = new NativeCmId(this, idPtr, listen == null ? null : listen.context());
      ids.put(idPtr, id);
      provider.cmIds.incrementAndGet();
    } else {
      id = ids.get(idPtr);
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

package dev.pekkordma.nativeverbs.ffi;

import dev.pekkordma.annotation.InternalApi;
import jnr.ffi.annotations.SaveError;

/** librdmacm's exported functions. */
@InternalApi
@SaveError
public interface LibRdmacm {
  long rdma_create_event_channel();
  void rdma_destroy_event_channel(long channel);
  int rdma_create_id(long channel, long idOut, long context, int portSpace);
  int rdma_destroy_id(long id);
  int rdma_bind_addr(long id, long sockaddr);
  int rdma_listen(long id, int backlog);
  int rdma_resolve_addr(long id, long srcAddr, long dstAddr, int timeoutMs);
  int rdma_resolve_route(long id, int timeoutMs);
  int rdma_create_qp(long id, long pd, long qpInitAttr);
  void rdma_destroy_qp(long id);
  int rdma_connect(long id, long connParam);
  int rdma_accept(long id, long connParam);
  int rdma_reject(long id, long privateData, byte privateDataLen);
  int rdma_disconnect(long id);
  int rdma_join_multicast(long id, long addr, long context);
  int rdma_leave_multicast(long id, long addr);
  int rdma_get_cm_event(long channel, long eventOut);
  int rdma_ack_cm_event(long event);
  String rdma_event_str(int event);
  long rdma_get_devices(long numDevicesOut);
  void rdma_free_devices(long list);
}

package dev.pekkordma.nativeverbs.ffi;

import dev.pekkordma.annotation.InternalApi;
import jnr.ffi.annotations.SaveError;

/** libibverbs' exported functions (the default symbol versions, as a C program links them). */
@InternalApi
@SaveError
public interface LibIbverbs {
  long ibv_get_device_list(long numDevices);
  void ibv_free_device_list(long list);
  String ibv_get_device_name(long device);
  long ibv_get_device_guid(long device);
  long ibv_open_device(long device);
  int ibv_close_device(long context);
  int ibv_query_device(long context, long deviceAttr);
  /** The exported ibv_query_port@@IBVERBS_1.1 (verbs.h wraps it in an inline ___ibv_query_port). */
  int ibv_query_port(long context, byte portNum, long portAttr);
  int ibv_query_gid(long context, byte portNum, int index, long gid);
  long ibv_alloc_pd(long context);
  int ibv_dealloc_pd(long pd);
  long ibv_reg_mr(long pd, long addr, long length, int access);
  int ibv_rereg_mr(long mr, int flags, long pd, long addr, long length, int access);
  int ibv_dereg_mr(long mr);
  long ibv_create_comp_channel(long context);
  int ibv_destroy_comp_channel(long channel);
  long ibv_create_cq(long context, int cqe, long cqContext, long channel, int compVector);
  int ibv_resize_cq(long cq, int cqe);
  int ibv_destroy_cq(long cq);
  int ibv_get_cq_event(long channel, long cqOut, long cqContextOut);
  void ibv_ack_cq_events(long cq, int nevents);
  long ibv_create_qp(long pd, long qpInitAttr);
  int ibv_modify_qp(long qp, long attr, int attrMask);
  int ibv_query_qp(long qp, long attr, int attrMask, long initAttr);
  int ibv_destroy_qp(long qp);
  long ibv_create_srq(long pd, long srqInitAttr);
  int ibv_modify_srq(long srq, long srqAttr, int srqAttrMask);
  int ibv_query_srq(long srq, long srqAttr);
  int ibv_destroy_srq(long srq);
  long ibv_create_ah(long pd, long ahAttr);
  int ibv_destroy_ah(long ah);
  int ibv_detach_mcast(long qp, long gid, short lid);
  int ibv_get_async_event(long context, long event);
  void ibv_ack_async_event(long event);
}

package dev.pekkordma.nativeverbs;

import dev.pekkordma.verbs.abi.CompletionLayout;
import dev.pekkordma.verbs.abi.RequestLayout;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.AtomicCapability;
import dev.pekkordma.verbs.LinkLayer;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.PortState;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import dev.pekkordma.verbs.WrOpcode;
import java.io.File;
import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Compiles a C program against the installed libibverbs-dev and librdmacm-dev headers that prints
 * offsetof/sizeof of every struct field the binding uses (and the enum values the Java API
 * mirrors), and checks {@link Layout} and core's request/completion layouts against it. Needs gcc
 * and the headers, not an RDMA device: it runs in every build, and skips only when those are
 * missing.
 */
class LayoutTest {
  /** Layout's constants: field name to the C expression that must equal it. */
  private static final Map<String, String> LAYOUT = new LinkedHashMap<>();
  /** Other Java values (core's layouts and codes) to C expressions. */
  private static final List<Object[]> OTHER = new ArrayList<>();
  private static Map<String, Long> measured;

  private static void l(String field, String c) {
    LAYOUT.put(field, c);
  }

  private static String off(String struct, String field) {
    return "offsetof(struct " + struct + ", " + field + ")";
  }

  private static String size(String struct) {
    return "sizeof(struct " + struct + ")";
  }

  private static void o(String name, long javaValue, String c) {
    OTHER.add(new Object[] {name, javaValue, c});
  }

  static {
    l("POINTER_SIZE", "sizeof(void *)");
    l("DEVICE_NODE_TYPE", off("ibv_device", "node_type"));
    l("DEVICE_TRANSPORT_TYPE", off("ibv_device", "transport_type"));
    l("DEVICE_NAME", off("ibv_device", "name"));
    l("DEVICE_IBDEV_PATH", off("ibv_device", "ibdev_path"));
    l("DEVICE_IBDEV_PATH_MAX", "sizeof(((struct ibv_device *) 0)->ibdev_path)");
    l("CONTEXT_OPS_ALLOC_MW", off("ibv_context", "ops.alloc_mw"));
    l("CONTEXT_OPS_BIND_MW", off("ibv_context", "ops.bind_mw"));
    l("CONTEXT_OPS_DEALLOC_MW", off("ibv_context", "ops.dealloc_mw"));
    l("CONTEXT_OPS_POLL_CQ", off("ibv_context", "ops.poll_cq"));
    l("CONTEXT_OPS_REQ_NOTIFY_CQ", off("ibv_context", "ops.req_notify_cq"));
    l("CONTEXT_OPS_POST_SRQ_RECV", off("ibv_context", "ops.post_srq_recv"));
    l("CONTEXT_OPS_POST_SEND", off("ibv_context", "ops.post_send"));
    l("CONTEXT_OPS_POST_RECV", off("ibv_context", "ops.post_recv"));
    l("CONTEXT_CMD_FD", off("ibv_context", "cmd_fd"));
    l("CONTEXT_ASYNC_FD", off("ibv_context", "async_fd"));
    String da = "ibv_device_attr";
    l("DEVICE_ATTR_SIZE", size(da));
    l("DEVICE_ATTR_FW_VER", off(da, "fw_ver"));
    l("DEVICE_ATTR_FW_VER_LEN", "sizeof(((struct ibv_device_attr *) 0)->fw_ver)");
    l("DEVICE_ATTR_NODE_GUID", off(da, "node_guid"));
    l("DEVICE_ATTR_MAX_MR_SIZE", off(da, "max_mr_size"));
    l("DEVICE_ATTR_MAX_QP", off(da, "max_qp"));
    l("DEVICE_ATTR_MAX_QP_WR", off(da, "max_qp_wr"));
    l("DEVICE_ATTR_DEVICE_CAP_FLAGS", off(da, "device_cap_flags"));
    l("DEVICE_ATTR_MAX_SGE", off(da, "max_sge"));
    l("DEVICE_ATTR_MAX_CQ", off(da, "max_cq"));
    l("DEVICE_ATTR_MAX_CQE", off(da, "max_cqe"));
    l("DEVICE_ATTR_MAX_MR", off(da, "max_mr"));
    l("DEVICE_ATTR_MAX_PD", off(da, "max_pd"));
    l("DEVICE_ATTR_MAX_QP_RD_ATOM", off(da, "max_qp_rd_atom"));
    l("DEVICE_ATTR_MAX_QP_INIT_RD_ATOM", off(da, "max_qp_init_rd_atom"));
    l("DEVICE_ATTR_ATOMIC_CAP", off(da, "atomic_cap"));
    l("DEVICE_ATTR_MAX_MW", off(da, "max_mw"));
    l("DEVICE_ATTR_MAX_SRQ", off(da, "max_srq"));
    l("DEVICE_ATTR_MAX_SRQ_WR", off(da, "max_srq_wr"));
    l("DEVICE_ATTR_MAX_SRQ_SGE", off(da, "max_srq_sge"));
    l("DEVICE_ATTR_PHYS_PORT_CNT", off(da, "phys_port_cnt"));
    l("DEVICE_CAP_MEM_WINDOW", "IBV_DEVICE_MEM_WINDOW");
    l("DEVICE_CAP_MEM_WINDOW_TYPE_2A", "IBV_DEVICE_MEM_WINDOW_TYPE_2A");
    l("DEVICE_CAP_MEM_WINDOW_TYPE_2B", "IBV_DEVICE_MEM_WINDOW_TYPE_2B");
    String pa = "ibv_port_attr";
    l("PORT_ATTR_SIZE", size(pa));
    l("PORT_ATTR_STATE", off(pa, "state"));
    l("PORT_ATTR_MAX_MTU", off(pa, "max_mtu"));
    l("PORT_ATTR_ACTIVE_MTU", off(pa, "active_mtu"));
    l("PORT_ATTR_GID_TBL_LEN", off(pa, "gid_tbl_len"));
    l("PORT_ATTR_MAX_MSG_SZ", off(pa, "max_msg_sz"));
    l("PORT_ATTR_LID", off(pa, "lid"));
    l("PORT_ATTR_LINK_LAYER", off(pa, "link_layer"));
    l("GID_SIZE", "sizeof(union ibv_gid)");
    l("COMP_CHANNEL_FD", off("ibv_comp_channel", "fd"));
    l("CQ_CQE", off("ibv_cq", "cqe"));
    l("MR_SIZE", size("ibv_mr"));
    l("MR_ADDR", off("ibv_mr", "addr"));
    l("MR_LENGTH", off("ibv_mr", "length"));
    l("MR_LKEY", off("ibv_mr", "lkey"));
    l("MR_RKEY", off("ibv_mr", "rkey"));
    l("MW_RKEY", off("ibv_mw", "rkey"));
    l("MW_TYPE", off("ibv_mw", "type"));
    l("MW_BIND_SIZE", size("ibv_mw_bind"));
    l("MW_BIND_WR_ID", off("ibv_mw_bind", "wr_id"));
    l("MW_BIND_SEND_FLAGS", off("ibv_mw_bind", "send_flags"));
    l("MW_BIND_MR", off("ibv_mw_bind", "bind_info.mr"));
    l("MW_BIND_ADDR", off("ibv_mw_bind", "bind_info.addr"));
    l("MW_BIND_LENGTH", off("ibv_mw_bind", "bind_info.length"));
    l("MW_BIND_ACCESS", off("ibv_mw_bind", "bind_info.mw_access_flags"));
    l("QP_QP_NUM", off("ibv_qp", "qp_num"));
    l("QP_STATE", off("ibv_qp", "state"));
    l("QP_QP_TYPE", off("ibv_qp", "qp_type"));
    l("QP_CAP_MAX_SEND_WR", off("ibv_qp_cap", "max_send_wr"));
    l("QP_CAP_MAX_RECV_WR", off("ibv_qp_cap", "max_recv_wr"));
    l("QP_CAP_MAX_SEND_SGE", off("ibv_qp_cap", "max_send_sge"));
    l("QP_CAP_MAX_RECV_SGE", off("ibv_qp_cap", "max_recv_sge"));
    l("QP_CAP_MAX_INLINE_DATA", off("ibv_qp_cap", "max_inline_data"));
    String qi = "ibv_qp_init_attr";
    l("QP_INIT_ATTR_SIZE", size(qi));
    l("QP_INIT_ATTR_QP_CONTEXT", off(qi, "qp_context"));
    l("QP_INIT_ATTR_SEND_CQ", off(qi, "send_cq"));
    l("QP_INIT_ATTR_RECV_CQ", off(qi, "recv_cq"));
    l("QP_INIT_ATTR_SRQ", off(qi, "srq"));
    l("QP_INIT_ATTR_CAP", off(qi, "cap"));
    l("QP_INIT_ATTR_QP_TYPE", off(qi, "qp_type"));
    l("QP_INIT_ATTR_SQ_SIG_ALL", off(qi, "sq_sig_all"));
    String ah = "ibv_ah_attr";
    l("AH_ATTR_SIZE", size(ah));
    l("AH_ATTR_GRH_DGID", off(ah, "grh.dgid"));
    l("AH_ATTR_GRH_FLOW_LABEL", off(ah, "grh.flow_label"));
    l("AH_ATTR_GRH_SGID_INDEX", off(ah, "grh.sgid_index"));
    l("AH_ATTR_GRH_HOP_LIMIT", off(ah, "grh.hop_limit"));
    l("AH_ATTR_GRH_TRAFFIC_CLASS", off(ah, "grh.traffic_class"));
    l("AH_ATTR_DLID", off(ah, "dlid"));
    l("AH_ATTR_SL", off(ah, "sl"));
    l("AH_ATTR_IS_GLOBAL", off(ah, "is_global"));
    l("AH_ATTR_PORT_NUM", off(ah, "port_num"));
    String qa = "ibv_qp_attr";
    l("QP_ATTR_SIZE", size(qa));
    l("QP_ATTR_QP_STATE", off(qa, "qp_state"));
    l("QP_ATTR_CUR_QP_STATE", off(qa, "cur_qp_state"));
    l("QP_ATTR_PATH_MTU", off(qa, "path_mtu"));
    l("QP_ATTR_PATH_MIG_STATE", off(qa, "path_mig_state"));
    l("QP_ATTR_QKEY", off(qa, "qkey"));
    l("QP_ATTR_RQ_PSN", off(qa, "rq_psn"));
    l("QP_ATTR_SQ_PSN", off(qa, "sq_psn"));
    l("QP_ATTR_DEST_QP_NUM", off(qa, "dest_qp_num"));
    l("QP_ATTR_QP_ACCESS_FLAGS", off(qa, "qp_access_flags"));
    l("QP_ATTR_CAP", off(qa, "cap"));
    l("QP_ATTR_AH_ATTR", off(qa, "ah_attr"));
    l("QP_ATTR_ALT_AH_ATTR", off(qa, "alt_ah_attr"));
    l("QP_ATTR_PKEY_INDEX", off(qa, "pkey_index"));
    l("QP_ATTR_EN_SQD_ASYNC_NOTIFY", off(qa, "en_sqd_async_notify"));
    l("QP_ATTR_MAX_RD_ATOMIC", off(qa, "max_rd_atomic"));
    l("QP_ATTR_MAX_DEST_RD_ATOMIC", off(qa, "max_dest_rd_atomic"));
    l("QP_ATTR_MIN_RNR_TIMER", off(qa, "min_rnr_timer"));
    l("QP_ATTR_PORT_NUM", off(qa, "port_num"));
    l("QP_ATTR_TIMEOUT", off(qa, "timeout"));
    l("QP_ATTR_RETRY_CNT", off(qa, "retry_cnt"));
    l("QP_ATTR_RNR_RETRY", off(qa, "rnr_retry"));
    l("SRQ_INIT_ATTR_SIZE", size("ibv_srq_init_attr"));
    l("SRQ_INIT_ATTR_ATTR", off("ibv_srq_init_attr", "attr"));
    l("SRQ_ATTR_SIZE", size("ibv_srq_attr"));
    l("SRQ_ATTR_MAX_WR", off("ibv_srq_attr", "max_wr"));
    l("SRQ_ATTR_MAX_SGE", off("ibv_srq_attr", "max_sge"));
    l("SRQ_ATTR_SRQ_LIMIT", off("ibv_srq_attr", "srq_limit"));
    l("SRQ_LIMIT_MASK", "IBV_SRQ_LIMIT");
    l("ASYNC_EVENT_SIZE", size("ibv_async_event"));
    l("ASYNC_EVENT_ELEMENT", off("ibv_async_event", "element"));
    l("ASYNC_EVENT_EVENT_TYPE", off("ibv_async_event", "event_type"));
    l("REREG_MR_CHANGE_TRANSLATION", "IBV_REREG_MR_CHANGE_TRANSLATION");
    l("REREG_MR_CHANGE_ACCESS", "IBV_REREG_MR_CHANGE_ACCESS");
    l("CM_EVENT_CHANNEL_FD", off("rdma_event_channel", "fd"));
    String id = "rdma_cm_id";
    l("CM_ID_VERBS", off(id, "verbs"));
    l("CM_ID_CHANNEL", off(id, "channel"));
    l("CM_ID_CONTEXT", off(id, "context"));
    l("CM_ID_QP", off(id, "qp"));
    l("CM_ID_SRC_ADDR", off(id, "route.addr.src_addr"));
    l("CM_ID_DST_ADDR", off(id, "route.addr.dst_addr"));
    l("CM_ID_SGID", off(id, "route.addr.addr.ibaddr.sgid"));
    l("CM_ID_DGID", off(id, "route.addr.addr.ibaddr.dgid"));
    l("CM_ID_PS", off(id, "ps"));
    l("CM_ID_PORT_NUM", off(id, "port_num"));
    l("CM_ID_PD", off(id, "pd"));
    l("CM_ID_QP_TYPE", off(id, "qp_type"));
    String cp = "rdma_conn_param";
    l("CONN_PARAM_SIZE", size(cp));
    l("CONN_PARAM_PRIVATE_DATA", off(cp, "private_data"));
    l("CONN_PARAM_PRIVATE_DATA_LEN", off(cp, "private_data_len"));
    l("CONN_PARAM_RESPONDER_RESOURCES", off(cp, "responder_resources"));
    l("CONN_PARAM_INITIATOR_DEPTH", off(cp, "initiator_depth"));
    l("CONN_PARAM_FLOW_CONTROL", off(cp, "flow_control"));
    l("CONN_PARAM_RETRY_COUNT", off(cp, "retry_count"));
    l("CONN_PARAM_RNR_RETRY_COUNT", off(cp, "rnr_retry_count"));
    l("CONN_PARAM_SRQ", off(cp, "srq"));
    l("CONN_PARAM_QP_NUM", off(cp, "qp_num"));
    String ev = "rdma_cm_event";
    l("CM_EVENT_SIZE", size(ev));
    l("CM_EVENT_ID", off(ev, "id"));
    l("CM_EVENT_LISTEN_ID", off(ev, "listen_id"));
    l("CM_EVENT_EVENT", off(ev, "event"));
    l("CM_EVENT_STATUS", off(ev, "status"));
    l("CM_EVENT_PARAM_CONN", off(ev, "param.conn"));
    l("CM_EVENT_PARAM_UD", off(ev, "param.ud"));
    String ud = "rdma_ud_param";
    l("UD_PARAM_SIZE", size(ud));
    l("UD_PARAM_PRIVATE_DATA", off(ud, "private_data"));
    l("UD_PARAM_PRIVATE_DATA_LEN", off(ud, "private_data_len"));
    l("UD_PARAM_AH_ATTR", off(ud, "ah_attr"));
    l("UD_PARAM_QP_NUM", off(ud, "qp_num"));
    l("UD_PARAM_QKEY", off(ud, "qkey"));
    l("GRH_SIZE", size("ibv_grh"));
    l("GRH_SGID", off("ibv_grh", "sgid"));
    l("GRH_DGID", off("ibv_grh", "dgid"));
    l("RDMA_PS_TCP", "RDMA_PS_TCP");
    l("RDMA_PS_UDP", "RDMA_PS_UDP");
    l("RDMA_PS_IPOIB", "RDMA_PS_IPOIB");
    l("RDMA_PS_IB", "RDMA_PS_IB");
    l("RDMA_UDP_QKEY", "RDMA_UDP_QKEY");
    l("AF_INET", "AF_INET");
    l("AF_INET6", "AF_INET6");
    l("SOCKADDR_FAMILY", off("sockaddr", "sa_family"));
    l("SOCKADDR_IN_SIZE", size("sockaddr_in"));
    l("SOCKADDR_IN_PORT", off("sockaddr_in", "sin_port"));
    l("SOCKADDR_IN_ADDR", off("sockaddr_in", "sin_addr"));
    l("SOCKADDR_IN6_SIZE", size("sockaddr_in6"));
    l("SOCKADDR_IN6_PORT", off("sockaddr_in6", "sin6_port"));
    l("SOCKADDR_IN6_ADDR", off("sockaddr_in6", "sin6_addr"));
    l("SOCKADDR_IN6_SCOPE_ID", off("sockaddr_in6", "sin6_scope_id"));
    l("SOCKADDR_STORAGE_SIZE", size("sockaddr_storage"));
    l("POLLFD_SIZE", size("pollfd"));
    l("POLLFD_FD", off("pollfd", "fd"));
    l("POLLFD_EVENTS", off("pollfd", "events"));
    l("POLLFD_REVENTS", off("pollfd", "revents"));
    l("POLLIN", "POLLIN");
    l("RLIMIT_SIZE", size("rlimit"));
    l("RLIMIT_MEMLOCK", "RLIMIT_MEMLOCK");

    // core's off-heap layouts, which the native provider hands to the driver as they are
    String sw = "ibv_send_wr";
    o("RequestLayout.SEND_WR_SIZE", RequestLayout.SEND_WR_SIZE, size(sw));
    o("RequestLayout.OFF_WR_ID", RequestLayout.OFF_WR_ID, off(sw, "wr_id"));
    o("RequestLayout.OFF_NEXT", RequestLayout.OFF_NEXT, off(sw, "next"));
    o("RequestLayout.OFF_SG_LIST", RequestLayout.OFF_SG_LIST, off(sw, "sg_list"));
    o("RequestLayout.OFF_NUM_SGE", RequestLayout.OFF_NUM_SGE, off(sw, "num_sge"));
    o("RequestLayout.OFF_OPCODE", RequestLayout.OFF_OPCODE, off(sw, "opcode"));
    o("RequestLayout.OFF_SEND_FLAGS", RequestLayout.OFF_SEND_FLAGS, off(sw, "send_flags"));
    o("RequestLayout.OFF_IMM_DATA", RequestLayout.OFF_IMM_DATA, off(sw, "imm_data"));
    o("RequestLayout.OFF_IMM_DATA(invalidate_rkey)", RequestLayout.OFF_IMM_DATA,
        off(sw, "invalidate_rkey"));
    o("RequestLayout.OFF_REMOTE_ADDR", RequestLayout.OFF_REMOTE_ADDR, off(sw, "wr.rdma.remote_addr"));
    o("RequestLayout.OFF_RDMA_RKEY", RequestLayout.OFF_RDMA_RKEY, off(sw, "wr.rdma.rkey"));
    o("RequestLayout.OFF_REMOTE_ADDR(atomic)", RequestLayout.OFF_REMOTE_ADDR,
        off(sw, "wr.atomic.remote_addr"));
    o("RequestLayout.OFF_COMPARE_ADD", RequestLayout.OFF_COMPARE_ADD, off(sw, "wr.atomic.compare_add"));
    o("RequestLayout.OFF_SWAP", RequestLayout.OFF_SWAP, off(sw, "wr.atomic.swap"));
    o("RequestLayout.OFF_ATOMIC_RKEY", RequestLayout.OFF_ATOMIC_RKEY, off(sw, "wr.atomic.rkey"));
    o("RequestLayout.OFF_UD_AH", RequestLayout.OFF_UD_AH, off(sw, "wr.ud.ah"));
    o("RequestLayout.OFF_UD_REMOTE_QPN", RequestLayout.OFF_UD_REMOTE_QPN, off(sw, "wr.ud.remote_qpn"));
    o("RequestLayout.OFF_UD_REMOTE_QKEY", RequestLayout.OFF_UD_REMOTE_QKEY,
        off(sw, "wr.ud.remote_qkey"));
    o("RequestLayout.OFF_BIND_MW", RequestLayout.OFF_BIND_MW, off(sw, "bind_mw.mw"));
    o("RequestLayout.OFF_BIND_RKEY", RequestLayout.OFF_BIND_RKEY, off(sw, "bind_mw.rkey"));
    o("RequestLayout.OFF_BIND_MR", RequestLayout.OFF_BIND_MR, off(sw, "bind_mw.bind_info.mr"));
    o("RequestLayout.OFF_BIND_ADDR", RequestLayout.OFF_BIND_ADDR, off(sw, "bind_mw.bind_info.addr"));
    o("RequestLayout.OFF_BIND_LENGTH", RequestLayout.OFF_BIND_LENGTH,
        off(sw, "bind_mw.bind_info.length"));
    o("RequestLayout.OFF_BIND_ACCESS", RequestLayout.OFF_BIND_ACCESS,
        off(sw, "bind_mw.bind_info.mw_access_flags"));
    o("RequestLayout.SGE_SIZE", RequestLayout.SGE_SIZE, size("ibv_sge"));
    o("sge.addr (SendRequests.sge writes +0)", 0, off("ibv_sge", "addr"));
    o("sge.length (SendRequests.sge writes +8)", 8, off("ibv_sge", "length"));
    o("sge.lkey (SendRequests.sge writes +12)", 12, off("ibv_sge", "lkey"));
    o("SendRequests.FENCE", SendRequests.FENCE, "IBV_SEND_FENCE");
    o("SendRequests.SIGNALED", SendRequests.SIGNALED, "IBV_SEND_SIGNALED");
    o("SendRequests.SOLICITED", SendRequests.SOLICITED, "IBV_SEND_SOLICITED");
    o("SendRequests.INLINE", SendRequests.INLINE, "IBV_SEND_INLINE");
    String rw = "ibv_recv_wr";
    o("RequestLayout.RECV_WR_SIZE", RequestLayout.RECV_WR_SIZE, size(rw));
    o("RequestLayout.OFF_WR_ID", RequestLayout.OFF_WR_ID, off(rw, "wr_id"));
    o("RequestLayout.OFF_NEXT", RequestLayout.OFF_NEXT, off(rw, "next"));
    o("RequestLayout.OFF_SG_LIST", RequestLayout.OFF_SG_LIST, off(rw, "sg_list"));
    o("RequestLayout.OFF_NUM_SGE", RequestLayout.OFF_NUM_SGE, off(rw, "num_sge"));
    o("RequestLayout.SGE_SIZE", RequestLayout.SGE_SIZE, size("ibv_sge"));
    String wc = "ibv_wc";
    o("CompletionLayout.WC_SIZE", CompletionLayout.WC_SIZE, size(wc));
    o("CompletionLayout.OFF_WR_ID", CompletionLayout.OFF_WR_ID, off(wc, "wr_id"));
    o("CompletionLayout.OFF_STATUS", CompletionLayout.OFF_STATUS, off(wc, "status"));
    o("CompletionLayout.OFF_OPCODE", CompletionLayout.OFF_OPCODE, off(wc, "opcode"));
    o("CompletionLayout.OFF_VENDOR_ERR", CompletionLayout.OFF_VENDOR_ERR, off(wc, "vendor_err"));
    o("CompletionLayout.OFF_BYTE_LEN", CompletionLayout.OFF_BYTE_LEN, off(wc, "byte_len"));
    o("CompletionLayout.OFF_IMM_DATA", CompletionLayout.OFF_IMM_DATA, off(wc, "imm_data"));
    o("CompletionLayout.OFF_QP_NUM", CompletionLayout.OFF_QP_NUM, off(wc, "qp_num"));
    o("CompletionLayout.OFF_SRC_QP", CompletionLayout.OFF_SRC_QP, off(wc, "src_qp"));
    o("CompletionLayout.OFF_WC_FLAGS", CompletionLayout.OFF_WC_FLAGS, off(wc, "wc_flags"));
    o("CompletionLayout.OFF_PKEY_INDEX", CompletionLayout.OFF_PKEY_INDEX, off(wc, "pkey_index"));
    o("CompletionLayout.OFF_SLID", CompletionLayout.OFF_SLID, off(wc, "slid"));
    o("CompletionLayout.OFF_SL", CompletionLayout.OFF_SL, off(wc, "sl"));
    o("CompletionLayout.OFF_DLID_PATH_BITS", CompletionLayout.OFF_DLID_PATH_BITS,
        off(wc, "dlid_path_bits"));
    o("WorkCompletions.FLAG_GRH", WorkCompletions.FLAG_GRH, "IBV_WC_GRH");
    o("WorkCompletions.FLAG_WITH_IMM", WorkCompletions.FLAG_WITH_IMM, "IBV_WC_WITH_IMM");
    o("WorkCompletions.FLAG_WITH_INV", WorkCompletions.FLAG_WITH_INV, "IBV_WC_WITH_INV");

    // the codes core's enums and flag classes mirror
    o("Access.LOCAL_WRITE", Access.LOCAL_WRITE, "IBV_ACCESS_LOCAL_WRITE");
    o("Access.REMOTE_WRITE", Access.REMOTE_WRITE, "IBV_ACCESS_REMOTE_WRITE");
    o("Access.REMOTE_READ", Access.REMOTE_READ, "IBV_ACCESS_REMOTE_READ");
    o("Access.REMOTE_ATOMIC", Access.REMOTE_ATOMIC, "IBV_ACCESS_REMOTE_ATOMIC");
    o("Access.MW_BIND", Access.MW_BIND, "IBV_ACCESS_MW_BIND");
    for (WrOpcode op : WrOpcode.values()) o("WrOpcode." + op, op.code, "IBV_WR_" + op);
    for (WcOpcode op : WcOpcode.values()) {
      String c = op == WcOpcode.BIND_MW ? "IBV_WC_BIND_MW" : "IBV_WC_" + op;
      o("WcOpcode." + op, op.code, c);
    }
    for (WcStatus s : WcStatus.values()) o("WcStatus." + s, s.code, "IBV_WC_" + s);
    for (QpState s : QpState.values()) o("QpState." + s, s.code, "IBV_QPS_" + s);
    for (QpType t : QpType.values()) o("QpType." + t, t.code, "IBV_QPT_" + t);
    for (Mtu m : Mtu.values()) o("Mtu." + m, m.code, "IBV_MTU_" + m.bytes);
    for (PortState s : PortState.values()) o("PortState." + s, s.code, "IBV_PORT_" + s);
    for (LinkLayer ll : LinkLayer.values()) o("LinkLayer." + ll, ll.code, "IBV_LINK_LAYER_" + ll);
    for (AtomicCapability a : AtomicCapability.values()) {
      o("AtomicCapability." + a, a.code, "IBV_ATOMIC_" + a);
    }
    for (AsyncEventType t : AsyncEventType.values()) o("AsyncEventType." + t, t.code, "IBV_EVENT_" + t);
    for (MemoryWindow.Type t : MemoryWindow.Type.values()) {
      o("MemoryWindow.Type." + t, t.code, "IBV_MW_" + t);
    }
    for (CmEventType t : CmEventType.values()) o("CmEventType." + t, t.code, "RDMA_CM_EVENT_" + t);
    for (RdmaPortSpace ps : RdmaPortSpace.values()) o("RdmaPortSpace." + ps, ps.code, "RDMA_PS_" + ps);
    o("UdParameters.UDP_QKEY", UdParameters.UDP_QKEY, "RDMA_UDP_QKEY");
    String[] masks = {"STATE", "CUR_STATE", "EN_SQD_ASYNC_NOTIFY", "ACCESS_FLAGS", "PKEY_INDEX",
        "PORT", "QKEY", "AV", "PATH_MTU", "TIMEOUT", "RETRY_CNT", "RNR_RETRY", "RQ_PSN",
        "MAX_QP_RD_ATOMIC", "ALT_PATH", "MIN_RNR_TIMER", "SQ_PSN", "MAX_DEST_RD_ATOMIC",
        "PATH_MIG_STATE", "CAP", "DEST_QPN"};
    for (String m : masks) {
      try {
        o("QpAttributes." + m, QpAttributes.class.getField(m).getInt(null), "IBV_QP_" + m);
      } catch (ReflectiveOperationException e) {
        throw new ExceptionInInitializerError(e);
      }
    }
  }

  @BeforeAll
  static void compileAndRun() throws Exception {
    String why = missingToolchain();
    if (why != null) {
      System.out.println("LayoutTest skipped: " + why);
    }
    assumeTrue(why == null, why);
    Path dir = Path.of("target", "layout-check");
    Files.createDirectories(dir);
    StringBuilder c = new StringBuilder();
    c.append("#include <stdio.h>\n#include <stddef.h>\n#include <poll.h>\n")
        .append("#include <sys/resource.h>\n#include <netinet/in.h>\n#include <infiniband/verbs.h>\n")
        .append("#include <rdma/rdma_cma.h>\n\nint main(void) {\n");
    int i = 0;
    for (Map.Entry<String, String> e : LAYOUT.entrySet()) {
      c.append("  printf(\"L").append(i++).append(" %lld\\n\", (long long) (")
          .append(e.getValue()).append("));\n");
    }
    i = 0;
    for (Object[] e : OTHER) {
      c.append("  printf(\"O").append(i++).append(" %lld\\n\", (long long) (")
          .append(e[2]).append("));\n");
    }
    c.append("  return 0;\n}\n");
    Path src = dir.resolve("layout.c");
    Path exe = dir.resolve("layout");
    Files.writeString(src, c.toString());
    String out = run(List.of("gcc", "-std=gnu11", "-Wall", "-o", exe.toString(), src.toString()));
    String printed = run(List.of(exe.toAbsolutePath().toString()));
    measured = new LinkedHashMap<>();
    for (String line : printed.split("\n")) {
      if (line.isBlank()) continue;
      String[] kv = line.trim().split(" ");
      measured.put(kv[0], Long.parseLong(kv[1]));
    }
    assertEquals(LAYOUT.size() + OTHER.size(), measured.size(), "lines printed: " + out);
  }

  /** Null when gcc and both headers are there, else why the test cannot run. */
  private static String missingToolchain() {
    try {
      Process p = new ProcessBuilder("gcc", "--version").redirectErrorStream(true).start();
      p.getInputStream().readAllBytes();
      if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) return "gcc --version failed";
    } catch (IOException | InterruptedException e) {
      return "no gcc on the PATH (" + e.getMessage() + "); apt-get install gcc";
    }
    for (String h : new String[] {"/usr/include/infiniband/verbs.h", "/usr/include/rdma/rdma_cma.h"}) {
      if (!new File(h).isFile()) {
        return h + " is missing; apt-get install libibverbs-dev librdmacm-dev";
      }
    }
    return null;
  }

  private static String run(List<String> cmd) throws IOException, InterruptedException {
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), cmd + " timed out");
    assertEquals(0, p.exitValue(), cmd + " failed:\n" + out);
    return out;
  }

  @Test
  void everyLayoutConstantMatchesTheHeaders() throws Exception {
    List<String> wrong = new ArrayList<>();
    int i = 0;
    for (Map.Entry<String, String> e : LAYOUT.entrySet()) {
      long c = measured.get("L" + i++);
      Field f = Layout.class.getField(e.getKey());
      long java = ((Number) f.get(null)).longValue();
      if (java != c) wrong.add("Layout." + e.getKey() + " = " + java + " but " + e.getValue() + " = " + c);
    }
    assertTrue(wrong.isEmpty(), String.join("\n", wrong));
  }

  @Test
  void everyLayoutConstantIsChecked() {
    List<String> unchecked = new ArrayList<>();
    for (Field f : Layout.class.getDeclaredFields()) {
      int m = f.getModifiers();
      if (Modifier.isStatic(m) && Modifier.isPublic(m) && !LAYOUT.containsKey(f.getName())) {
        unchecked.add(f.getName());
      }
    }
    assertTrue(unchecked.isEmpty(), "Layout constants without a C expression here: " + unchecked);
  }

  @Test
  void coreRequestAndCompletionLayoutsAndCodesMatchTheHeaders() {
    List<String> wrong = new ArrayList<>();
    int i = 0;
    for (Object[] e : OTHER) {
      long c = measured.get("O" + i++);
      if ((long) e[1] != c) wrong.add(e[0] + " = " + e[1] + " but " + e[2] + " = " + c);
    }
    assertTrue(wrong.isEmpty(), String.join("\n", wrong));
  }
}

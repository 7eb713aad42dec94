package dev.pekkordma.nativeverbs;

/**
 * Sizes and field offsets of the C structs the native provider reads and writes (x86-64, LP64,
 * rdma-core's verbs.h and rdma_cma.h). {@code LayoutTest} compiles a C program against the
 * installed headers and checks every constant here, and core's SendRequests, RecvRequests and
 * WorkCompletions offsets, against offsetof/sizeof.
 *
 * <p>Naming: {@code STRUCT_FIELD} for offsets, {@code STRUCT_SIZE} for sizes, with the struct's
 * name shortened (ibv_ dropped).
 */
final class Layout {
  private Layout() {}

  public static final int POINTER_SIZE = 8;

  // struct ibv_device
  public static final int DEVICE_NODE_TYPE = 16;
  public static final int DEVICE_TRANSPORT_TYPE = 20;
  public static final int DEVICE_NAME = 24;
  public static final int DEVICE_IBDEV_PATH = 408;
  public static final int DEVICE_IBDEV_PATH_MAX = 256;

  // struct ibv_context (ops is embedded at offset 8: the function pointers the inline verbs use)
  public static final int CONTEXT_OPS_ALLOC_MW = 64;
  public static final int CONTEXT_OPS_BIND_MW = 72;
  public static final int CONTEXT_OPS_DEALLOC_MW = 80;
  public static final int CONTEXT_OPS_POLL_CQ = 96;
  public static final int CONTEXT_OPS_REQ_NOTIFY_CQ = 104;
  public static final int CONTEXT_OPS_POST_SRQ_RECV = 168;
  public static final int CONTEXT_OPS_POST_SEND = 208;
  public static final int CONTEXT_OPS_POST_RECV = 216;
  public static final int CONTEXT_CMD_FD = 264;
  public static final int CONTEXT_ASYNC_FD = 268;

  // struct ibv_device_attr
  public static final int DEVICE_ATTR_SIZE = 232;
  public static final int DEVICE_ATTR_FW_VER = 0;
  public static final int DEVICE_ATTR_FW_VER_LEN = 64;
  public static final int DEVICE_ATTR_NODE_GUID = 64;
  public static final int DEVICE_ATTR_MAX_MR_SIZE = 80;
  public static final int DEVICE_ATTR_MAX_QP = 108;
  public static final int DEVICE_ATTR_MAX_QP_WR = 112;
  public static final int DEVICE_ATTR_DEVICE_CAP_FLAGS = 116;
  public static final int DEVICE_ATTR_MAX_SGE = 120;
  public static final int DEVICE_ATTR_MAX_CQ = 128;
  public static final int DEVICE_ATTR_MAX_CQE = 132;
  public static final int DEVICE_ATTR_MAX_MR = 136;
  public static final int DEVICE_ATTR_MAX_PD = 140;
  public static final int DEVICE_ATTR_MAX_QP_RD_ATOM = 144;
  public static final int DEVICE_ATTR_MAX_QP_INIT_RD_ATOM = 156;
  public static final int DEVICE_ATTR_ATOMIC_CAP = 164;
  public static final int DEVICE_ATTR_MAX_MW = 176;
  public static final int DEVICE_ATTR_MAX_SRQ = 212;
  public static final int DEVICE_ATTR_MAX_SRQ_WR = 216;
  public static final int DEVICE_ATTR_MAX_SRQ_SGE = 220;
  public static final int DEVICE_ATTR_PHYS_PORT_CNT = 227;
  // enum ibv_device_cap_flags bits used
  public static final int DEVICE_CAP_MEM_WINDOW = 1 << 17;
  public static final int DEVICE_CAP_MEM_WINDOW_TYPE_2A = 1 << 23;
  public static final int DEVICE_CAP_MEM_WINDOW_TYPE_2B = 1 << 24;

  // struct ibv_port_attr
  public static final int PORT_ATTR_SIZE = 52;
  public static final int PORT_ATTR_STATE = 0;
  public static final int PORT_ATTR_MAX_MTU = 4;
  public static final int PORT_ATTR_ACTIVE_MTU = 8;
  public static final int PORT_ATTR_GID_TBL_LEN = 12;
  public static final int PORT_ATTR_MAX_MSG_SZ = 20;
  public static final int PORT_ATTR_LID = 34;
  public static final int PORT_ATTR_LINK_LAYER = 46;

  // union ibv_gid
  public static final int GID_SIZE = 16;

  // struct ibv_comp_channel
  public static final int COMP_CHANNEL_FD = 8;

  // struct ibv_cq
  public static final int CQ_CQE = 28;

  // struct ibv_mr
  public static final int MR_SIZE = 48;
  public static final int MR_ADDR = 16;
  public static final int MR_LENGTH = 24;
  public static final int MR_LKEY = 36;
  public static final int MR_RKEY = 40;

  // struct ibv_mw
  public static final int MW_RKEY = 16;
  public static final int MW_TYPE = 24;

  // struct ibv_mw_bind
  public static final int MW_BIND_SIZE = 48;
  public static final int MW_BIND_WR_ID = 0;
  public static final int MW_BIND_SEND_FLAGS = 8;
  public static final int MW_BIND_MR = 16;
  public static final int MW_BIND_ADDR = 24;
  public static final int MW_BIND_LENGTH = 32;
  public static final int MW_BIND_ACCESS = 40;

  // struct ibv_qp
  public static final int QP_QP_NUM = 52;
  public static final int QP_STATE = 56;
  public static final int QP_QP_TYPE = 60;

  // struct ibv_qp_cap (inside ibv_qp_init_attr and ibv_qp_attr)
  public static final int QP_CAP_MAX_SEND_WR = 0;
  public static final int QP_CAP_MAX_RECV_WR = 4;
  public static final int QP_CAP_MAX_SEND_SGE = 8;
  public static final int QP_CAP_MAX_RECV_SGE = 12;
  public static final int QP_CAP_MAX_INLINE_DATA = 16;

  // struct ibv_qp_init_attr
  public static final int QP_INIT_ATTR_SIZE = 64;
  public static final int QP_INIT_ATTR_QP_CONTEXT = 0;
  public static final int QP_INIT_ATTR_SEND_CQ = 8;
  public static final int QP_INIT_ATTR_RECV_CQ = 16;
  public static final int QP_INIT_ATTR_SRQ = 24;
  public static final int QP_INIT_ATTR_CAP = 32;
  public static final int QP_INIT_ATTR_QP_TYPE = 52;
  public static final int QP_INIT_ATTR_SQ_SIG_ALL = 56;

  // struct ibv_ah_attr (and the ibv_global_route at its start)
  public static final int AH_ATTR_SIZE = 32;
  public static final int AH_ATTR_GRH_DGID = 0;
  public static final int AH_ATTR_GRH_FLOW_LABEL = 16;
  public static final int AH_ATTR_GRH_SGID_INDEX = 20;
  public static final int AH_ATTR_GRH_HOP_LIMIT = 21;
  public static final int AH_ATTR_GRH_TRAFFIC_CLASS = 22;
  public static final int AH_ATTR_DLID = 24;
  public static final int AH_ATTR_SL = 26;
  public static final int AH_ATTR_IS_GLOBAL = 29;
  public static final int AH_ATTR_PORT_NUM = 30;

  // struct ibv_qp_attr
  public static final int QP_ATTR_SIZE = 144;
  public static final int QP_ATTR_QP_STATE = 0;
  public static final int QP_ATTR_CUR_QP_STATE = 4;
  public static final int QP_ATTR_PATH_MTU = 8;
  public static final int QP_ATTR_PATH_MIG_STATE = 12;
  public static final int QP_ATTR_QKEY = 16;
  public static final int QP_ATTR_RQ_PSN = 20;
  public static final int QP_ATTR_SQ_PSN = 24;
  public static final int QP_ATTR_DEST_QP_NUM = 28;
  public static final int QP_ATTR_QP_ACCESS_FLAGS = 32;
  public static final int QP_ATTR_CAP = 36;
  public static final int QP_ATTR_AH_ATTR = 56;
  public static final int QP_ATTR_ALT_AH_ATTR = 88;
  public static final int QP_ATTR_PKEY_INDEX = 120;
  public static final int QP_ATTR_EN_SQD_ASYNC_NOTIFY = 124;
  public static final int QP_ATTR_MAX_RD_ATOMIC = 126;
  public static final int QP_ATTR_MAX_DEST_RD_ATOMIC = 127;
  public static final int QP_ATTR_MIN_RNR_TIMER = 128;
  public static final int QP_ATTR_PORT_NUM = 129;
  public static final int QP_ATTR_TIMEOUT = 130;
  public static final int QP_ATTR_RETRY_CNT = 131;
  public static final int QP_ATTR_RNR_RETRY = 132;

  // struct ibv_srq_init_attr / ibv_srq_attr
  public static final int SRQ_INIT_ATTR_SIZE = 24;
  public static final int SRQ_INIT_ATTR_ATTR = 8;
  public static final int SRQ_ATTR_SIZE = 12;
  public static final int SRQ_ATTR_MAX_WR = 0;
  public static final int SRQ_ATTR_MAX_SGE = 4;
  public static final int SRQ_ATTR_SRQ_LIMIT = 8;
  // enum ibv_srq_attr_mask
  public static final int SRQ_LIMIT_MASK = 1 << 1;

  // struct ibv_async_event
  public static final int ASYNC_EVENT_SIZE = 16;
  public static final int ASYNC_EVENT_ELEMENT = 0;
  public static final int ASYNC_EVENT_EVENT_TYPE = 8;

  // ibv_rereg_mr flags
  public static final int REREG_MR_CHANGE_TRANSLATION = 1;
  public static final int REREG_MR_CHANGE_ACCESS = 1 << 2;

  // struct rdma_event_channel
  public static final int CM_EVENT_CHANNEL_FD = 0;

  // struct rdma_cm_id
  public static final int CM_ID_VERBS = 0;
  public static final int CM_ID_CHANNEL = 8;
  public static final int CM_ID_CONTEXT = 16;
  public static final int CM_ID_QP = 24;
  public static final int CM_ID_SRC_ADDR = 32;
  public static final int CM_ID_DST_ADDR = 160;
  public static final int CM_ID_SGID = 288;
  public static final int CM_ID_DGID = 304;
  public static final int CM_ID_PS = 344;
  public static final int CM_ID_PORT_NUM = 348;
  public static final int CM_ID_PD = 400;
  public static final int CM_ID_QP_TYPE = 408;

  // struct rdma_conn_param
  public static final int CONN_PARAM_SIZE = 24;
  public static final int CONN_PARAM_PRIVATE_DATA = 0;
  public static final int CONN_PARAM_PRIVATE_DATA_LEN = 8;
  public static final int CONN_PARAM_RESPONDER_RESOURCES = 9;
  public static final int CONN_PARAM_INITIATOR_DEPTH = 10;
  public static final int CONN_PARAM_FLOW_CONTROL = 11;
  public static final int CONN_PARAM_RETRY_COUNT = 12;
  public static final int CONN_PARAM_RNR_RETRY_COUNT = 13;
  public static final int CONN_PARAM_SRQ = 14;
  public static final int CONN_PARAM_QP_NUM = 16;

  // struct rdma_cm_event
  public static final int CM_EVENT_SIZE = 80;
  public static final int CM_EVENT_ID = 0;
  public static final int CM_EVENT_LISTEN_ID = 8;
  public static final int CM_EVENT_EVENT = 16;
  public static final int CM_EVENT_STATUS = 20;
  public static final int CM_EVENT_PARAM_CONN = 24;
  public static final int CM_EVENT_PARAM_UD = 24;

  // struct rdma_ud_param (a datagram id's events; for multicast events private_data is the
  // context given to rdma_join_multicast)
  public static final int UD_PARAM_SIZE = 56;
  public static final int UD_PARAM_PRIVATE_DATA = 0;
  public static final int UD_PARAM_PRIVATE_DATA_LEN = 8;
  public static final int UD_PARAM_AH_ATTR = 16;
  public static final int UD_PARAM_QP_NUM = 48;
  public static final int UD_PARAM_QKEY = 52;

  // struct ibv_grh (the 40 bytes before a UD receive's data)
  public static final int GRH_SIZE = 40;
  public static final int GRH_SGID = 8;
  public static final int GRH_DGID = 24;

  // enum rdma_port_space
  public static final int RDMA_PS_TCP = 0x0106;
  public static final int RDMA_PS_UDP = 0x0111;
  public static final int RDMA_PS_IPOIB = 0x0002;
  public static final int RDMA_PS_IB = 0x013F;
  public static final int RDMA_UDP_QKEY = 0x01234567;

  // struct sockaddr_in / sockaddr_in6 (ports and addresses in network order)
  public static final int AF_INET = 2;
  public static final int AF_INET6 = 10;
  public static final int SOCKADDR_FAMILY = 0;
  public static final int SOCKADDR_IN_SIZE = 16;
  public static final int SOCKADDR_IN_PORT = 2;
  public static final int SOCKADDR_IN_ADDR = 4;
  public static final int SOCKADDR_IN6_SIZE = 28;
  public static final int SOCKADDR_IN6_PORT = 2;
  public static final int SOCKADDR_IN6_ADDR = 8;
  public static final int SOCKADDR_IN6_SCOPE_ID = 24;
  public static final int SOCKADDR_STORAGE_SIZE = 128;

  // struct pollfd (poll(2))
  public static final int POLLFD_SIZE = 8;
  public static final int POLLFD_FD = 0;
  public static final int POLLFD_EVENTS = 4;
  public static final int POLLFD_REVENTS = 6;
  public static final short POLLIN = 1;

  // struct rlimit
  public static final int RLIMIT_SIZE = 16;
  public static final int RLIMIT_MEMLOCK = 8;
}

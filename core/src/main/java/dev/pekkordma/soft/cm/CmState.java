package dev.pekkordma.soft.cm;

/** rdma_cm's id states, with the steps of a connection spelled out. */
enum CmState {
  IDLE, ADDR_QUERY, ADDR_BOUND, ADDR_RESOLVED, ROUTE_QUERY, ROUTE_RESOLVED, LISTEN,
  /** Active side: REQ sent (or the TCP connect under way), waiting for REP or REJ. */
  CONNECTING,
  /** Passive side: REQ received, waiting for the application's accept or reject. */
  CONNECT_REQUEST,
  /** Passive side: REP sent, waiting for RTU. */
  ACCEPTING,
  ESTABLISHED,
  /** DREQ sent, waiting for DREP. */
  DISCONNECTING,
  DISCONNECTED,
  /** How a connection attempt ended. */
  REJECTED, UNREACHABLE, CONNECT_ERROR,
  DEVICE_REMOVAL,
  DESTROYED
}

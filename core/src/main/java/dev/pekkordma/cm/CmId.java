package dev.pekkordma.cm;

import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * A connection manager id ({@code rdma_cm_id}): the RDMA counterpart of a socket. Every outcome
 * arrives as an event on its channel.
 */
public interface CmId extends AutoCloseable {
  Object context();

  CmEventChannel channel();

  /** The port space it was created in. */
  RdmaPortSpace portSpace();

  /** Binds to a local address and port (port 0 picks one) ({@code rdma_bind_addr}). */
  void bind(InetSocketAddress local);

  /** Listens for connection requests ({@code rdma_listen}). */
  void listen(int backlog);

  /** ADDR_RESOLVED or ADDR_ERROR follows ({@code rdma_resolve_addr}). */
  void resolveAddress(InetSocketAddress source, InetSocketAddress destination, Duration timeout);

  /** ROUTE_RESOLVED or ROUTE_ERROR follows ({@code rdma_resolve_route}). */
  void resolveRoute(Duration timeout);

  /** The device this id is bound to, once bound or resolved; null before. */
  DeviceContext verbs();

  int portNum();

  InetSocketAddress localAddress();

  /**
   * The peer's address once resolved (or, for a request's id, the requester's); after a bind and
   * before that, the unspecified address of the bound family with port 0 ({@code 0.0.0.0:0}), as
   * the kernel's {@code rdma_bind_addr} leaves it; null before either.
   */
  InetSocketAddress remoteAddress();

  /**
   * Creates the id's QP ({@code rdma_create_qp}); the CM moves it through its states. A
   * datagram id's UD QP goes straight to RTS with {@link UdParameters#UDP_QKEY}; a QP type the
   * port space does not take fails naming both (EINVAL).
   */
  QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes);

  QueuePair qp();

  /**
   * ESTABLISHED, REJECTED, UNREACHABLE or CONNECT_ERROR follows ({@code rdma_connect}). On a
   * datagram id it is a SIDR request: ESTABLISHED carries the peer's {@link UdParameters}.
   */
  void connect(ConnectionParameters parameters);

  /** Accepts a connection request; ESTABLISHED follows ({@code rdma_accept}). */
  void accept(ConnectionParameters parameters);

  /** Rejects a connection request with private data ({@code rdma_reject}). */
  void reject(byte[] privateData);

  /**
   * Joins the multicast group at {@code group} (an IPv4 or IPv6 multicast address) with the
   * id's QP, attaching it ({@code rdma_join_multicast}): MULTICAST_JOIN with the group's {@link
   * UdParameters}, or MULTICAST_ERROR, follows. Datagram ids only, once bound or resolved.
   */
  void joinMulticast(InetSocketAddress group);

  /** Leaves a group it joined, detaching its QP ({@code rdma_leave_multicast}). */
  void leaveMulticast(InetSocketAddress group);

  /** DISCONNECTED follows on both sides ({@code rdma_disconnect}). */
  void disconnect();

  /** Destroys the id's QP ({@code rdma_destroy_qp}). */
  void destroyQp();

  /** Destroys the id ({@code rdma_destroy_id}); fails with EBUSY while its QP exists. */
  @Override
  void close();
}

/**
 * Pekko Typed actors that own every RDMA resource.
 *
 * <p>{@link dev.pekkordma.actors.RdmaExtension#get RdmaExtension.get(system)} loads the provider
 * named by the system's {@code pekko-rdma} config and opens the devices of {@code
 * pekko-rdma.actors.devices}; the settings are checked first and a wrong one fails naming its
 * key. Terminating the system stops the actors, which frees everything, then closes the provider.
 *
 * <p>The tree, each owner stopping after what it owns:
 *
 * <pre>
 * DeviceActor        a device context; async events; reopened with backoff after a failure
 *   CqPoller         every CQ of the device, on a poller thread (BackoffIdleStrategy)
 *   AsyncEventReader nextAsyncEvent, on a poller thread: each event to its owner
 *   PdActor          a PD, its registrations and its BufferPool (registered once)
 *     QpActor        a QP and its CQ; one behavior per QP state
 * CmActor            the CM event channel and its reader (a poller thread)
 *   ListenerActor    one bound address; a ConnectionActor per CONNECT_REQUEST
 *   Connector        a client connection: resolve, route, connect, each with timeout and retry
 *   DatagramEndpoint a UDP id, its PD, CQ, SRQ and UD QPs (datagram package)
 *   MulticastGroup   a UDP id joined to a group, its PD, CQ and UD QP (datagram package)
 *   DeviceActor      per device context the CM hands out
 *     PdActor        the connections' PD and pool
 *       ConnectionActor  a CM id
 *         QpActor        its QP
 * </pre>
 *
 * <p>The data path: lease a {@link dev.pekkordma.actors.Buffer} from the PD's {@link
 * dev.pekkordma.actors.BufferPool}, post it to a QP actor ({@link
 * dev.pekkordma.actors.QpActor.Post}); completions come back in batches ({@link
 * dev.pekkordma.actors.QpActor.Completed}), and the buffer with them where it holds data
 * (receives, reads), else straight back to its pool.
 *
 * <p>Server: {@link dev.pekkordma.actors.CmActor.Listen}, then answer each {@link
 * dev.pekkordma.actors.ListenerActor.ConnectionRequested} with Accept or Reject. Client: {@link
 * dev.pekkordma.actors.CmActor.Connect}. Either side gets {@link
 * dev.pekkordma.actors.ConnectionActor.Connected} with the QP actor and pool. The samples
 * package has an echo server and client built this way.
 */
package dev.pekkordma.actors;

package dev.pekkordma.soft.cm;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import java.net.InetAddress;
import java.time.Duration;

/**
 * What the software connection manager needs from the software provider: device contexts shared
 * by CM ids (as librdmacm shares one context per device), the GID peers route to, and counting.
 */
@InternalApi
public interface SoftCmSupport {
  /**
   * A context of the software device serving {@code local} (any local address maps to the first
   * configured device); shared and reference-counted: call {@link #releaseContext} once per call.
   */
  DeviceContext acquireContext(InetAddress local);

  void releaseContext(DeviceContext context);

  /** The GID (index 0, port 1) by which peers reach the QPs of {@code context}. */
  Gid gid(DeviceContext context);

  /** Whether port 1 of the context's device is active (route resolution needs it). */
  boolean portActive(DeviceContext context);

  /**
   * Calls {@code onRemoval} if the context's device dies (DEVICE_FATAL), so ids on it can report
   * DEVICE_REMOVAL; close the returned handle to stop listening.
   */
  AutoCloseable onDeviceRemoval(DeviceContext context, Runnable onRemoval);

  /** Counts live CM ids for {@code liveResources()}: +1 on create, -1 on destroy. */
  void countCmId(int delta);

  /** How long a connect waits for the peer's answer before UNREACHABLE. */
  Duration connectTimeout();

  /**
   * What the provider's CM ids share: TLS ({@code pekko-rdma.soft.tls}), the bounds on what
   * peers can make them hold ({@code pekko-rdma.cm}), and the threads reading connections. One
   * per provider, the same on every call.
   */
  CmResources cmResources();

  /**
   * Attaches a UD QP of this provider to multicast group {@code mgid} ({@code
   * ibv_attach_mcast}); fails naming the group (ENODEV when the process cannot join it).
   */
  void attachMulticast(dev.pekkordma.verbs.QueuePair qp, Gid mgid);

  /** Detaches it ({@code ibv_detach_mcast}); EINVAL when it is not attached. */
  void detachMulticast(dev.pekkordma.verbs.QueuePair qp, Gid mgid);
}

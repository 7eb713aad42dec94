package dev.pekkordma.verbs.spi;

import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import java.util.Optional;

/** Events a test can provoke on a provider that models the hardware (the software provider). */
public interface FaultInjection {
  /** {@code provider}'s fault injection, where it has one (the software provider does). */
  static Optional<FaultInjection> of(RdmaProvider provider) {
    return provider.unwrap(FaultInjection.class);
  }

  /** Takes a port down (PORT_ERR) or brings it up (PORT_ACTIVE). */
  void setPortState(DeviceContext context, int port, boolean active);

  /** The device dies: DEVICE_FATAL, every QP to the error state, CM ids see DEVICE_REMOVAL. */
  void deviceFatal(DeviceContext context);

  /**
   * The device is back after {@link #deviceFatal} (a reset NIC, a re-plugged device): its port is
   * active again and new contexts work; contexts from before stay dead and must be closed.
   */
  void restoreDevice(DeviceContext context);

  /** The QP hits an internal error: QP_FATAL and the error state. */
  void qpFatal(QueuePair qp);
}

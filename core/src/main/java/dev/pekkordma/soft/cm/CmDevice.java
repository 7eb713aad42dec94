package dev.pekkordma.soft.cm;

import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Mtu;
import java.net.InetAddress;

/**
 * The device a CM id is on, as any id of either port space has it: the provider's shared
 * context for the id's address, taken when the id is bound, resolved or requested, and the
 * watch that reports the device's removal. Guarded by the owning id's monitor.
 */
final class CmDevice {
  /** Null until the id has an address. */
  DeviceContext verbs;
  private AutoCloseable watch;

  /**
   * Takes the context serving {@code address}; {@code onRemoval} runs (on the provider's
   * thread, holding its locks: hand the work on) if the device dies.
   */
  void attach(SoftCmSupport support, InetAddress address, Runnable onRemoval) {
    DeviceContext ctx = support.acquireContext(address);
    try {
      watch = support.onDeviceRemoval(ctx, onRemoval);
    } catch (RuntimeException e) {
      support.releaseContext(ctx);
      throw e;
    }
    verbs = ctx;
  }

  Mtu activeMtu() {
    return verbs.queryPort(1).activeMtu();
  }

  boolean portActive(SoftCmSupport support) {
    try {
      return support.portActive(verbs);
    } catch (RuntimeException e) {
      return false;
    }
  }

  /** Takes the context and watch out (the id is going); release them outside the monitor. */
  Taken take() {
    Taken t = new Taken(verbs, watch);
    verbs = null;
    watch = null;
    return t;
  }

  /** What an id held of its device, to give back once. */
  record Taken(DeviceContext context, AutoCloseable watch) {
    /** Stops the watch and gives the context back; the giving back's failure is returned. */
    RuntimeException release(SoftCmSupport support) {
      if (watch != null) {
        try {
          watch.close();
        } catch (Exception e) {
          // the device is gone; nothing left to stop
        }
      }
      try {
        if (context != null) support.releaseContext(context);
        return null;
      } catch (RuntimeException e) {
        return e;
      }
    }
  }
}

package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.DeviceAttributes;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Mtu;
import dev.pekkordma.verbs.RdmaException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.security.SecureRandom;
import java.time.Duration;

/** The software CM's checks of the application's arguments, and small helpers of its ids. */
final class CmChecks {
  private static final SecureRandom PSNS = new SecureRandom();

  private CmChecks() {}

  static void requireAddress(String verb, String what, InetSocketAddress a) {
    if (a == null) throw new RdmaException(verb, RdmaException.EINVAL, what + " is null");
    if (a.isUnresolved()) {
      throw new RdmaException(verb, RdmaException.EINVAL, what + " " + a + " is unresolved");
    }
  }

  /** EINVAL for {@code verb} unless {@code state} is one of {@code allowed}, saying what it needs. */
  static void expect(String verb, CmState state, String needed, CmState... allowed) {
    if (state == CmState.DESTROYED) {
      throw new RdmaException(verb, RdmaException.EINVAL, "the id is destroyed (state DESTROYED)");
    }
    for (CmState a : allowed) if (a == state) return;
    throw new RdmaException(verb, RdmaException.EINVAL,
        "the id is in state " + state + "; " + verb + " needs " + needed);
  }

  /** The wildcard address of {@code like}'s family, port 0: 0.0.0.0:0 or [::]:0. */
  static InetSocketAddress unspecified(InetAddress like) {
    byte[] zeros = new byte[like instanceof java.net.Inet6Address ? 16 : 4];
    try {
      return new InetSocketAddress(InetAddress.getByAddress(zeros), 0);
    } catch (java.net.UnknownHostException e) {
      throw new IllegalStateException(e); // 4 or 16 bytes are always an address
    }
  }

  static void requireTimeout(String verb, Duration timeout) {
    if (timeout == null || timeout.isNegative() || timeout.isZero()) {
      throw new RdmaException(verb, RdmaException.EINVAL, "timeout must be positive, was "
          + timeout);
    }
  }

  /**
   * Checks parameters against librdmacm's and the device's limits; returns a private copy.
   */
  static ConnectionParameters checked(String verb, ConnectionParameters p, int maxPrivateData,
      DeviceContext verbs) {
    if (p == null) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          "connection parameters are null (ConnectionParameters.defaults() has none to say)");
    }
    byte[] data = p.privateDataOrEmpty();
    if (data.length > maxPrivateData) {
      throw new RdmaException(verb, RdmaException.EINVAL, data.length
          + " bytes of private data; at most " + maxPrivateData);
    }
    DeviceAttributes dev = verbs.queryDevice();
    range(verb, "responderResources", p.responderResources(), dev.maxQpRdAtom(),
        "the device's max_qp_rd_atom");
    range(verb, "initiatorDepth", p.initiatorDepth(), dev.maxQpInitRdAtom(),
        "the device's max_qp_init_rd_atom");
    range(verb, "retryCount", p.retryCount(), 7, "3 bits");
    range(verb, "rnrRetryCount", p.rnrRetryCount(), 7, "3 bits");
    return new ConnectionParameters(data.clone(), p.responderResources(), p.initiatorDepth(),
        p.retryCount(), p.rnrRetryCount());
  }

  private static void range(String verb, String name, int value, int max, String why) {
    if (value < 0 || value > max) {
      throw new RdmaException(verb, RdmaException.EINVAL,
          name + " = " + value + " is outside [0, " + max + "] (" + why + ")");
    }
  }

  static boolean isLocal(InetAddress a) {
    if (a.isAnyLocalAddress() || a.isLoopbackAddress()) return true;
    try {
      return NetworkInterface.getByInetAddress(a) != null;
    } catch (SocketException e) {
      return false;
    }
  }

  static Mtu smaller(Mtu a, Mtu b) {
    return a.bytes <= b.bytes ? a : b;
  }

  /** A connection's initial PSN: from a cryptographic generator, so no PSN predicts the next. */
  static int newPsn() {
    return PSNS.nextInt(1 << 24);
  }

  static int errnoOf(RuntimeException e) {
    return e instanceof RdmaException && ((RdmaException) e).errno() != 0
        ? ((RdmaException) e).errno() : RdmaException.EINVAL;
  }

  static int millis(Duration d) {
    return (int) Math.max(1, Math.min(Integer.MAX_VALUE, d.toMillis()));
  }

  static Thread daemon(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    return t;
  }
}

package dev.pekkordma.soft.cm;

import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The multicast groups a datagram id joined ({@code rdma_join_multicast}), each attached to the
 * id's QP when it had one then, as librdmacm attaches it; guarded by the id's monitor. A group's
 * GID is the kernel CM's for RoCEv2: an IPv4 group a.b.c.d is ::ffff:a.b.c.d.
 */
final class CmGroups {
  /** The IPv6 hop limit of a RoCEv2 group's address vector (IPV6_DEFAULT_HOPLIMIT). */
  static final int HOP_LIMIT = 64;

  private record JoinedGroup(InetSocketAddress group, Gid mgid, QueuePair attachedTo) {}

  private final Map<InetAddress, JoinedGroup> joined = new LinkedHashMap<>();

  /**
   * Checks {@code group} for {@code verb}: EINVAL naming it unless it is an IPv4 multicast
   * address; IPv6 groups are EOPNOTSUPP (the kernel's CM has none on RoCEv2).
   */
  static Inet4Address checkGroup(String verb, InetSocketAddress group) {
    if (group == null) throw new RdmaException(verb, RdmaException.EINVAL, "the group is null");
    InetAddress a = group.getAddress();
    if (a == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "group " + group + " is unresolved");
    }
    if (!a.isMulticastAddress()) {
      throw new RdmaException(verb, RdmaException.EINVAL, "group " + a.getHostAddress()
          + " is not a multicast address (IPv4 224.0.0.0/4)");
    }
    if (a instanceof Inet6Address) {
      throw new RdmaException(verb, RdmaException.EOPNOTSUPP, "group " + a.getHostAddress()
          + " is IPv6: RoCEv2 multicast groups are IPv4 (as the kernel's CM has them)");
    }
    return (Inet4Address) a;
  }

  /**
   * Joins {@code group} (checked), attaching {@code qp} when not null: returns what
   * MULTICAST_JOIN carries. EADDRINUSE when the id joined it already; an attach that fails
   * throws, nothing joined.
   */
  UdParameters join(String verb, InetSocketAddress group, QueuePair qp, SoftCmSupport support) {
    Inet4Address a = checkGroup(verb, group);
    if (joined.containsKey(a)) {
      throw new RdmaException(verb, RdmaException.EADDRINUSE, "the id joined group "
          + a.getHostAddress() + " already");
    }
    Gid mgid = Gid.ipv4Mapped(a);
    if (qp != null) support.attachMulticast(qp, mgid);
    joined.put(a, new JoinedGroup(group, mgid, qp));
    return new UdParameters(new byte[0], new AddressVector(0, 0, 1, true, mgid, 0, HOP_LIMIT, 0,
        0), UdParameters.MULTICAST_QPN, UdParameters.UDP_QKEY);
  }

  /** Leaves {@code group}, detaching the QP it attached; EADDRNOTAVAIL naming it if not joined. */
  void leave(String verb, InetSocketAddress group, SoftCmSupport support) {
    if (group == null || group.getAddress() == null) {
      throw new RdmaException(verb, RdmaException.EINVAL, "group " + group + " is not an address");
    }
    JoinedGroup j = joined.remove(group.getAddress());
    if (j == null) {
      throw new RdmaException(verb, RdmaException.EADDRNOTAVAIL, "the id has not joined group "
          + group.getAddress().getHostAddress() + (joined.isEmpty() ? ""
              : " (it joined " + names(joined.keySet()) + ")"));
    }
    detach(j, support);
  }

  /** The groups the QP is attached to through this id (destroying it waits for their leave). */
  List<String> attached() {
    List<String> names = new ArrayList<>();
    for (JoinedGroup j : joined.values()) {
      if (j.attachedTo() != null) names.add(j.group().getAddress().getHostAddress());
    }
    return names;
  }

  /** The id is destroyed: every group is left (librdmacm's rdma_destroy_id does so). */
  void leaveAll(SoftCmSupport support) {
    for (JoinedGroup j : joined.values()) detach(j, support);
    joined.clear();
  }

  private static void detach(JoinedGroup j, SoftCmSupport support) {
    if (j.attachedTo() == null) return;
    try {
      support.detachMulticast(j.attachedTo(), j.mgid());
    } catch (RuntimeException e) {
      // the QP was destroyed directly, which detached it
    }
  }

  private static String names(Iterable<InetAddress> as) {
    List<String> n = new ArrayList<>();
    for (InetAddress a : as) n.add(a.getHostAddress());
    return String.join(", ", n);
  }
}

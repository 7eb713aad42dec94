package dev.pekkordma.soft;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.Gid;
import java.io.IOException;
import java.net.DatagramPacket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.MulticastSocket;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.security.SecureRandom;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Multicast groups of the soft fabric ({@code ibv_attach_mcast}): every UD QP attached to a
 * group's GID receives each datagram sent to that GID with QPN 0xFFFFFF, its Q_Key checked as
 * for any UD receive. QPs of this JVM get it in memory, in the sender's thread; other processes
 * get it by IP multicast: a process with a QP attached to a group whose GID maps an IPv4 address
 * (::ffff:a.b.c.d, RoCEv2's form, or ff0e::ffff:a.b.c.d, RoCEv1's) joins that IPv4 group on the
 * interface of its fabric's address with a socket bound to the group's address and the fabric's
 * multicast port (so it reads that group's datagrams only, and no unicast ones), one thread a
 * group; a send goes there as one UDP datagram ({@link MulticastWire}). A process drops its own
 * datagrams (by their origin) as its members had them already. Other multicast GIDs reach this
 * JVM's QPs only.
 *
 * <p>IP multicast carries no proof of who sent a datagram, as RoCE's does not: anyone on the
 * link may send to a group. Every datagram read is checked before anything is copied; one that
 * is malformed is dropped and logged (rate-limited), and nothing read ends the reading thread.
 */
final class SoftMulticast implements SoftPeer {
  private static final Logger LOG = LoggerFactory.getLogger(SoftMulticast.class);
  private final Map<Gid, Set<SoftQp>> members = new ConcurrentHashMap<>();
  private final long origin = new SecureRandom().nextLong();
  private final RefusalLog refusals = new RefusalLog(LOG, "soft multicast");
  private final ThreadLocal<byte[]> sendBuffers =
      ThreadLocal.withInitial(() -> new byte[MulticastWire.MAX_DATAGRAM]);
  private final ThreadLocal<MemoryPayload> payloads = ThreadLocal.withInitial(MemoryPayload::new);
  // guarded by this
  private final Map<InetAddress, GroupMembership> joined = new HashMap<>();
  private MulticastSocket sender;
  private int port;
  private InetAddress interfaceAddress;

  /** Where the transport runs: the fabric's multicast port and host (its interface). */
  synchronized void configure(int port, InetAddress fabricHost) {
    if (sender != null || !joined.isEmpty()) return; // the first provider's, as the TCP fabric's
    this.port = port;
    this.interfaceAddress = fabricHost;
  }

  // ---------------------------------------------------------------- GIDs and groups

  static boolean isMulticast(Gid g) {
    return MulticastWire.isMulticastGid(g.toBytes(), 0);
  }

  /** The IPv4 group a GID maps (RoCEv2's or RoCEv1's form), or null. */
  static InetAddress groupOf(Gid mgid) {
    byte[] g = mgid.toBytes();
    boolean v2 = (g[0] & 0xff) != 0xff;
    boolean v1 = (g[0] & 0xff) == 0xff && (g[1] & 0xff) == 0x0e;
    if (!v1 && !v2) return null;
    for (int i = 2; i < 10; i++) if (g[i] != 0) return null;
    if ((g[10] & 0xff) != 0xff || (g[11] & 0xff) != 0xff || (g[12] & 0xf0) != 0xe0) return null;
    try {
      return InetAddress.getByAddress(new byte[] {g[12], g[13], g[14], g[15]});
    } catch (UnknownHostException e) {
      return null;
    }
  }

  /**
   * Attaches {@code qp} to {@code mgid}: the first member of an IPv4 group in this process joins
   * it on the fabric's interface. Throws IOException when that join fails (nothing changed).
   */
  void attach(SoftQp qp, Gid mgid) throws IOException {
    InetAddress group = groupOf(mgid);
    synchronized (this) {
      if (group != null) {
        GroupMembership r = joined.get(group);
        if (r == null) {
          r = new GroupMembership(group);
          joined.put(group, r);
        }
        r.members++;
      }
      members.computeIfAbsent(mgid, g -> new CopyOnWriteArraySet<>()).add(qp);
    }
  }

  /** Detaches {@code qp}; the last member of an IPv4 group in this process leaves it. */
  void detach(SoftQp qp, Gid mgid) {
    InetAddress group = groupOf(mgid);
    synchronized (this) {
      Set<SoftQp> set = members.get(mgid);
      if (set == null || !set.remove(qp)) return;
      if (set.isEmpty()) members.remove(mgid, set);
      GroupMembership r = group == null ? null : joined.get(group);
      if (r == null || --r.members > 0) return;
      joined.remove(group);
      r.close();
    }
  }

  /** QPs attached to {@code mgid} in this process (for tests). */
  int members(Gid mgid) {
    Set<SoftQp> set = members.get(mgid);
    return set == null ? 0 : set.size();
  }

  private NetworkInterface networkInterface() throws SocketException {
    InetAddress a = interfaceAddress;
    if (a == null || a.isAnyLocalAddress()) return null; // the system's choice
    NetworkInterface nif = NetworkInterface.getByInetAddress(a);
    if (nif == null) throw new SocketException("no interface has the fabric's address " + a);
    return nif;
  }

  /** The socket sends go out of: any port, the fabric's interface, the link only. */
  private MulticastSocket sender() throws IOException {
    if (sender != null) return sender;
    if (port == 0) throw new SocketException("the fabric's multicast port is not configured");
    MulticastSocket s = new MulticastSocket();
    try {
      NetworkInterface nif = networkInterface();
      if (nif != null) s.setNetworkInterface(nif);
      s.setTimeToLive(1); // RoCE's groups do not leave the link
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
    sender = s;
    return s;
  }

  /** Every soft device of this JVM is gone: the sockets close. */
  synchronized void shutdown() {
    for (GroupMembership r : joined.values()) r.close();
    joined.clear();
    if (sender != null) sender.close();
    sender = null;
  }

  /** This process's membership of one IPv4 group: its socket and the thread reading it. */
  private final class GroupMembership {
    final InetAddress group;
    final MulticastSocket socket;
    int members;

    GroupMembership(InetAddress group) throws IOException {
      if (port == 0) throw new SocketException("the fabric's multicast port is not configured");
      this.group = group;
      MulticastSocket s = new MulticastSocket(null);
      try {
        s.setReuseAddress(true); // every process of the fabric on this host reads the group
        s.bind(new InetSocketAddress(group, port)); // this group's datagrams only
        NetworkInterface nif = networkInterface();
        s.joinGroup(new InetSocketAddress(group, 0), nif);
      } catch (IOException | RuntimeException e) {
        s.close();
        throw e;
      }
      socket = s;
      Thread t = new Thread(() -> readLoop(s), "soft-rdma-multicast-" + group.getHostAddress());
      t.setDaemon(true);
      t.start();
    }

    void close() {
      socket.close(); // the kernel leaves the group; the reader ends
    }
  }

  // ---------------------------------------------------------------- sending (SoftPeer)

  @Override
  public int request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
    response.psn = header.psn; // a connected QP's request to a group is lost
    response.code = Response.DROPPED;
    return SENT;
  }

  /** A UD send to the group's GID: this JVM's members at once, then the other processes. */
  @Override
  public int datagram(SoftQp requester, RequestHeader h, Segments gather) {
    if (h.destQpn != MulticastWire.MULTICAST_QPN) return SENT; // no QP answers a group's GID
    if (h.dgid == null) return SENT;
    Gid mgid = Gid.of(h.dgid);
    int outcome = SENT;
    InetAddress group = groupOf(mgid);
    if (group != null && gather.total() <= MulticastWire.MAX_PAYLOAD) {
      outcome = sendToProcesses(requester, h, gather, mgid, group);
      if (outcome != SENT) return outcome;
    }
    Set<SoftQp> set = members.get(mgid);
    if (set == null) return SENT;
    for (SoftQp qp : set) {
      MemoryPayload data = payloads.get().of(gather);
      qp.responder.handleDatagram(h, data);
      if (data.sourceGone()) return SOURCE_GONE;
    }
    return SENT;
  }

  private int sendToProcesses(SoftQp requester, RequestHeader h, Segments gather, Gid mgid,
      InetAddress group) {
    MulticastSocket s;
    synchronized (this) {
      try {
        s = sender();
      } catch (IOException e) {
        refusals.refuse("group " + group.getHostAddress(), "cannot send to other processes: "
            + e.getMessage());
        return SENT; // lost on the way, as a packet would be
      }
    }
    int length = (int) gather.total();
    byte[] b = sendBuffers.get();
    int copied = gather.transfer(0, b, MulticastWire.HEADER, length, false, null, 0);
    if (copied != Segments.COPIED) return SOURCE_GONE;
    MulticastWire.writeHeader(b, origin, mgid.toBytes(), h.srcGid, h.srcQpn, h.qkey, h.opcode,
        h.immOrRkeyBigEndian, length);
    try {
      s.send(new DatagramPacket(b, MulticastWire.HEADER + length, group, port));
    } catch (IOException e) {
      LOG.debug("soft multicast: sending to {} failed: {}", group.getHostAddress(), e.toString());
    }
    return SENT;
  }

  @Override
  public String describe(Gid gid) {
    InetAddress group = groupOf(gid);
    return "multicast group " + gid + (group != null ? " (" + group.getHostAddress() + ")" : "")
        + ", " + members(gid) + " member QP(s) in this process";
  }

  // ---------------------------------------------------------------- receiving

  private void readLoop(MulticastSocket s) {
    byte[] b = new byte[MulticastWire.MAX_DATAGRAM + 1]; // one more: too long shows
    DatagramPacket p = new DatagramPacket(b, b.length);
    MulticastWire.ParsedDatagram d = new MulticastWire.ParsedDatagram();
    RequestHeader h = new RequestHeader();
    MemoryPayload payload = new MemoryPayload();
    Segments bytes = new Segments(1);
    try (OffHeapBuffer memory = OffHeapBuffer.allocate(MulticastWire.MAX_PAYLOAD)) {
      while (!s.isClosed()) {
        try {
          p.setLength(b.length);
          s.receive(p);
        } catch (IOException e) {
          if (s.isClosed()) return;
          LOG.debug("soft multicast: receive failed: {}", e.toString());
          continue;
        }
        try {
          deliver(b, p, d, h, payload, bytes, memory);
        } catch (MulticastWire.MulticastViolation v) {
          refusals.refuse(String.valueOf(p.getSocketAddress()), v.getMessage());
        } catch (RuntimeException e) {
          LOG.error("soft multicast: delivering a datagram from {} failed", p.getSocketAddress(),
              e);
        }
      }
    }
  }

  private void deliver(
      byte[] b,
      DatagramPacket p,
      MulticastWire.ParsedDatagram d,
      RequestHeader h,
      MemoryPayload payload,
      Segments bytes,
      OffHeapBuffer memory)
      throws MulticastWire.MulticastViolation {
    MulticastWire.parse(b, p.getLength(), d);
    if (d.origin == origin) return; // ours: this JVM's members had it when it was sent
    Set<SoftQp> set = members.get(Gid.of(d.mgid));
    if (set == null || set.isEmpty()) return; // another process's group on this port
    memory.put(0, b, MulticastWire.HEADER, d.length);
    h.srcQpn = d.srcQpn;
    h.destQpn = MulticastWire.MULTICAST_QPN;
    h.qkey = d.qkey;
    h.opcode = d.opcode;
    h.immOrRkeyBigEndian = d.immediate;
    h.payloadLength = d.length;
    h.psn = 0;
    h.sendFlags = 0;
    System.arraycopy(d.srcGid, 0, h.srcGid, 0, 16);
    h.dgid = d.mgid;
    for (SoftQp qp : set) {
      if (d.length > qp.device.settings.mtu) {
        throw new MulticastWire.MulticastViolation("a datagram of " + d.length + " bytes for "
            + qp.describe() + ", over its port's MTU of " + qp.device.settings.mtu);
      }
      bytes.single(memory.address(), d.length);
      qp.responder.handleDatagram(h, payload.of(bytes));
    }
  }
}

package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.cm.SocketAddresses;
import dev.pekkordma.cm.UdParameters;
import dev.pekkordma.runtime.RdmaRuntime;
import dev.pekkordma.runtime.internal.CmDispatcher;
import dev.pekkordma.runtime.internal.CompletionHub;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.spi.Checks;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.pekko.util.ByteString;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one core of a UD datagram endpoint, under the actor and the stream stage that face
 * applications (and under a multicast member, which uses the parts without SIDR): its resources,
 * what it knows of peers (where each resolved address's datagrams go, for at most the TTL; which
 * address each sender listens on, from the SIDR hellos), the SIDR requests it answered, and the
 * rules every endpoint follows: the MTU check, answering a SIDR request, learning from a
 * resolution, sorting completions, reading a receive slot. The facade keeps what is its own:
 * messages or callbacks, timers, when to post, and what waits. Not thread-safe: the facade's
 * one thread calls it.
 */
@InternalApi
public final class UdEndpoint {
  private static final Logger log = LoggerFactory.getLogger(UdEndpoint.class);

  /** Where a facade's completions go, one at a time, as {@link #sort} finds them. */
  public interface Completions {
    /** Send slot {@code slot} completed with {@code status} (0: success). */
    void sent(int slot, int status);

    /** Receive slot {@code slot} holds a datagram; {@link #take} reads it. */
    void received(int slot, int byteLength, int flags, int sourceQp);
  }

  private final CmDispatcher cm;
  private final DatagramSettings settings;
  private final Consumer<PeerKey> learnedAddress;
  private final PeerRoutes<UdTarget> routes;
  private final Map<PeerKey, InetSocketAddress> listening;
  private final SidrAnswers answers;
  private final long[] gid = new long[2];
  private String name = "a datagram endpoint";
  private UdResources res;
  private AddressHandles handles;
  private byte[] hello;
  private int sgidIndex;
  private long malformed;
  private long lastLog;

  /**
   * An endpoint with nothing open yet. {@code learnedAddress} hears of each sender whose listening
   * address was just learned (a facade that caches senders forgets its entry).
   */
  public UdEndpoint(CmDispatcher cm, DatagramSettings settings, Consumer<PeerKey> learnedAddress) {
    this.cm = cm;
    this.settings = settings;
    this.learnedAddress = learnedAddress;
    this.routes = new PeerRoutes<>(settings.maxPeers(), settings.peerTtl());
    int max = settings.maxPeers();
    this.listening = new LinkedHashMap<>(16, 0.75f, true) {
      @Override
      protected boolean removeEldestEntry(Map.Entry<PeerKey, InetSocketAddress> eldest) {
        return size() > max;
      }
    };
    this.answers = new SidrAnswers(cm, max);
  }

  /** The device a bound id is on; a wildcard address names none, which is refused. */
  public static DeviceContext deviceOf(CmId bound) {
    DeviceContext device = bound.verbs();
    if (device == null) {
      throw new IllegalArgumentException("the address is on no RDMA device (a wildcard"
          + " address names none: bind to an address of the device)");
    }
    return device;
  }

  /**
   * Opens the resources on {@code device}'s {@code port} ({@link UdResources#open}, reserved for
   * {@code purpose}, which also names the endpoint in logs), with address handles for {@code
   * peers} destinations, and posts every receive.
   */
  public UdResources open(RdmaRuntime runtime, DeviceContext device, int port, boolean shared,
      String purpose, int peers, BiFunction<CompletionHub, Integer, CompletionQueue> makeCq,
      BiFunction<ProtectionDomain, QpInitAttributes, QueuePair> makeQp,
      Function<QueuePair, Runnable> destroyQp) {
    name = purpose;
    res = UdResources.open(runtime, device, port, settings.receiveBuffers(),
        settings.sendBuffers(), shared, purpose, settings.buffersSetting(), makeCq, makeQp,
        destroyQp);
    handles = new AddressHandles(res.pd(), peers);
    for (int i = 0; i < res.receives; i++) res.addReceive(i);
    res.flushReceives();
    return res;
  }

  /** What this endpoint says of itself in SIDR exchanges: its QP, listening on {@code port}. */
  public byte[] hello(int port) {
    hello = new SidrHello(res.qp().qpNum(), port).encode();
    return hello;
  }

  /** The resources, or null before {@link #open} (a send-only stage opens on its first peer). */
  public UdResources resources() {
    return res;
  }

  public AddressHandles handles() {
    return handles;
  }

  /** The GID index the routes learned so far go out of (0 before any). */
  public int sgidIndex() {
    return sgidIndex;
  }

  // ------------------------------------------------------------ checks

  /** Why {@code bytes} of data cannot go in one datagram, or null. */
  public String overMtu(int bytes) {
    return res == null ? null : Checks.overMtu(bytes, res.mtu);
  }

  /**
   * Why a datagram of {@code bytes} {@code to} someone (as "to ...") is refused when {@code
   * waiting} sends wait already, or null: over the MTU, or max-pending-sends reached.
   */
  public String refusal(int bytes, int waiting, String to) {
    String over = overMtu(bytes);
    if (over != null) return over + " (" + to + ")";
    if (waiting >= settings.maxPendingSends()) {
      return "a datagram " + to + " finds " + settings.maxPendingSends()
          + " sends waiting already (" + settings.setting("max-pending-sends") + ")";
    }
    return null;
  }

  /** Why sends to {@code to} fail: it did not resolve, for {@code why}. */
  public static String cannotResolve(InetSocketAddress to, String why) {
    return "cannot resolve datagram peer " + SocketAddresses.format(to) + ": " + why;
  }

  // ------------------------------------------------------------ peers

  /** The route to {@code to}, or null: never resolved, forgotten, or older than the TTL. */
  public UdTarget route(InetSocketAddress to) {
    return routes.get(to);
  }

  /** A multicast group's route, which its join made: it does not age. */
  public void routeLasting(InetSocketAddress group, UdTarget target) {
    routes.putLasting(group, target);
  }

  public int routes() {
    return routes.size();
  }

  /** The address sender {@code key} said it listens on, or null. */
  public InetSocketAddress listensAt(PeerKey key) {
    return listening.get(key);
  }

  /**
   * Learns from a resolution that succeeded: the route to its address, the GID index to send
   * from, and where the peer listens if its hello says. Returns the route.
   */
  public UdTarget learned(Resolutions.Resolved<?> o) {
    UdParameters ud = o.ud();
    AddressVector av = ud.addressVector();
    sgidIndex = av.sgidIndex();
    UdTarget t = new UdTarget(av, ud.qpNum(), ud.qkey());
    routes.put(o.to(), t);
    SidrHello h = SidrHello.parse(ud.privateData());
    if (h != null) knownAt(new PeerKey(av.dgid(), h.qpn()), o.to());
    return t;
  }

  private void knownAt(PeerKey key, InetSocketAddress at) {
    listening.put(key, at);
    learnedAddress.accept(key);
  }

  // ------------------------------------------------------------ SIDR

  /**
   * A peer resolves us ({@code e} is a CONNECT_REQUEST on our listening id): a UD QP on the
   * request's id, which the answer names with our hello. A peer that says where it listens gets
   * a route there at once: answering by address needs no resolving.
   */
  public void answerSidr(CmEvent e) {
    CmId id = e.id();
    if (id.verbs() != res.context) {
      cm.destroy(id, true);
      log.warn("{}: a SIDR request came on another device", name);
      return;
    }
    try {
      id.createQp(res.pd(), res.attributes(1));
      id.accept(ConnectionParameters.withPrivateData(hello));
    } catch (RuntimeException x) {
      cm.destroy(id, true);
      log.warn("{}: answering a SIDR request failed: {}", name, x.getMessage());
      return;
    }
    UdParameters ud = e.ud();
    SidrHello h = SidrHello.parse(ud != null && ud.privateData() != null ? ud.privateData()
        : e.privateData());
    InetSocketAddress remote = id.remoteAddress();
    PeerKey key = null;
    if (ud != null && ud.addressVector() != null) {
      AddressVector av = ud.addressVector();
      sgidIndex = av.sgidIndex();
      if (h != null && remote != null) {
        key = new PeerKey(av.dgid(), h.qpn());
        InetSocketAddress at = new InetSocketAddress(remote.getAddress(), h.port());
        knownAt(key, at);
        routes.put(at, new UdTarget(av, h.qpn(), UdParameters.UDP_QKEY));
      }
    }
    answers.accepted(id, key);
  }

  /** Whether {@code id} is one of the SIDR requests this endpoint answered. */
  public boolean answered(CmId id) {
    return answers.owns(id);
  }

  public int answers() {
    return answers.size();
  }

  // ------------------------------------------------------------ completions

  /**
   * Sorts one completion: a send's to {@code to.sent}, a good receive's to {@code to.received}.
   * Returns why the endpoint cannot go on (a send or receive completed with an error: its QP
   * is in the error state), or null.
   */
  public String sort(long wrId, int status, int byteLength, int flags, int sourceQp,
      Completions to) {
    if (wrId >= UdResources.SEND_TAG) {
      to.sent((int) (wrId - UdResources.SEND_TAG), status);
      return status == 0 ? null : "a send completed with " + WcStatus.of(status);
    }
    if (status != 0) return "a receive completed with " + WcStatus.of(status);
    if (wrId >= 0 && wrId < res.receives) to.received((int) wrId, byteLength, flags, sourceQp);
    return null;
  }

  /**
   * The datagram in receive slot {@code slot}, copied out, or null when its completion does not
   * fit the slot (dropped, counted, logged at most once a second); the sender's GID is in {@link
   * #senderHi} and {@link #senderLo} then. The slot is queued for posting again either way.
   */
  public ByteString take(int slot, int byteLength, int flags) {
    try {
      int length = DatagramFormat.dataLength(byteLength, res.receiveSize);
      DatagramFormat.sourceGid(res.receiveArea(), slot * res.receiveSize, flags, gid);
      return res.copyOut(slot, DatagramFormat.GRH_BYTES, length);
    } catch (DatagramFormat.MalformedDatagramException e) {
      malformed++;
      long now = System.nanoTime();
      if (now - lastLog > 1_000_000_000L) {
        lastLog = now;
        log.warn("{}: dropped a datagram ({} so far): {}", name, malformed, e.getMessage());
      }
      return null;
    } finally {
      res.addReceive(slot);
    }
  }

  /** The high half of the GID of the last datagram {@link #take} read (big-endian). */
  public long senderHi() {
    return gid[0];
  }

  public long senderLo() {
    return gid[1];
  }

  /** The last datagram's sender GID; {@link Gid#ZERO} when it came without a GRH. */
  public Gid senderGid() {
    return gid[0] == 0 && gid[1] == 0 ? Gid.ZERO : DatagramFormat.gid(gid[0], gid[1]);
  }

  /** Datagrams dropped because their completion did not fit their slot. */
  public long malformed() {
    return malformed;
  }

  // ------------------------------------------------------------ the end

  /**
   * Frees the SIDR answers' ids and QPs, then the resources and the address handles. The
   * facade's own ids (listening, resolving) go before.
   */
  public void close() {
    answers.closeAll();
    if (res != null) res.close(handles == null ? () -> {} : handles::closeAll);
    res = null;
  }
}

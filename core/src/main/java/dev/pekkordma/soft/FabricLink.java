package dev.pekkordma.soft;

import dev.pekkordma.verbs.WcStatus;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process's connection to another process's fabric: requests go out on it, their answers
 * come back on it. It has its own engine, so that a peer that stops reading stalls only the QPs
 * talking to it, and one reader thread. The QPs connected to devices of that process are attached
 * to it: if the peer breaks the protocol they go to ERR, naming it.
 */
final class FabricLink {
  private static final Logger LOG = LoggerFactory.getLogger(FabricLink.class);

  private final TcpFabric fabric;
  private final FabricAddress address;
  private final SoftEngine engine;
  private final Set<SoftQp> attached = ConcurrentHashMap.newKeySet();
  private final ByteBuffer header =
      ByteBuffer.allocate(FabricWire.HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
  private volatile FabricConnection connection;
  private volatile String lastFailure = "";
  private volatile boolean retired;
  /** Requests written and not yet flushed: their section flushes them as it ends. */
  private boolean unflushed; // guarded by this

  FabricLink(TcpFabric fabric, FabricAddress address) {
    this.fabric = fabric;
    this.address = address;
    this.engine = new SoftEngine("soft-rdma-link-" + address, 65536);
  }

  String name() {
    return address.toString();
  }

  SoftEngine engine() {
    return engine;
  }

  /** Why the last connection ended, for messages (empty while all is well). */
  String lastFailure() {
    return lastFailure;
  }

  /** Attaches a connected QP; false if this link was retired meanwhile (take a new one). */
  synchronized boolean attach(SoftQp qp) {
    if (retired) return false;
    attached.add(qp);
    return true;
  }

  /** The last connected QP going retires the link: its threads and connection end. */
  void detach(SoftQp qp) {
    boolean last;
    synchronized (this) {
      last = attached.remove(qp) && attached.isEmpty();
      if (last) retired = true;
    }
    if (last) {
      fabric.forget(this);
      close();
    }
  }

  /**
   * Whether {@code qp} is connected through this link. Stable while the QP's monitor is held:
   * it attaches and detaches only under it.
   */
  boolean holds(SoftQp qp) {
    return attached.contains(qp);
  }

  /** Whether any QP is connected through this link. */
  boolean holdsAny() {
    return !attached.isEmpty();
  }

  boolean retired() {
    return retired;
  }

  FabricAddress address() {
    return address;
  }

  /**
   * Sends one request or datagram to device {@code device} of the peer: SENT, SOURCE_GONE (our
   * memory was deregistered while it was read: the peer drops it), or UNREACHABLE.
   */
  synchronized int send(byte kind, SoftQp requester, int device, SoftPeer.RequestHeader h,
      Segments payload) {
    FabricConnection c;
    try {
      c = connect();
    } catch (IOException | RuntimeException e) {
      lastFailure = " (cannot connect: " + e.getMessage() + ")";
      return SoftPeer.UNREACHABLE;
    }
    try {
      FabricWire.encodeRequest(header, kind, requester.device.serial, device, h);
      c.writeHeader(header);
      int result = c.writePayload(payload, null, 0);
      if (DeferredWork.flushLater(this)) {
        unflushed = true;
      } else {
        c.flush();
      }
      return result == Segments.COPIED ? SoftPeer.SENT : SoftPeer.SOURCE_GONE;
    } catch (IOException e) {
      lost(c, "sending failed: " + e.getMessage());
      return SoftPeer.UNREACHABLE;
    } catch (FabricWire.FabricViolation v) { // its shared ring: the reader names it, failing the QPs
      lost(c, v.getMessage());
      return SoftPeer.UNREACHABLE;
    }
  }

  /**
   * Flushes what sends left written for the end of their thread's section ({@link
   * DeferredWork}): one system call, or one doorbell, for a burst of requests. A connection
   * replaced meanwhile took its unflushed bytes with it; the requests time out and are retried.
   */
  synchronized void flushDeferred() {
    FabricConnection c = connection;
    if (!unflushed || c == null) return;
    unflushed = false;
    try {
      c.flush();
    } catch (IOException e) {
      lost(c, "sending failed: " + e.getMessage());
    } catch (FabricWire.FabricViolation v) { // its shared ring: the reader names it
      lost(c, v.getMessage());
    }
  }

  private FabricConnection connect() throws IOException {
    FabricConnection c = connection;
    if (c != null) return c;
    c = fabric.connect(address);
    connection = c;
    lastFailure = "";
    FabricConnection reading = c;
    Thread t = new Thread(() -> readResponses(reading), "soft-rdma-link-in-" + address);
    t.setDaemon(true);
    t.start();
    return c;
  }

  private void readResponses(FabricConnection c) {
    FabricWire.FrameHeader f = new FabricWire.FrameHeader();
    SoftPeer.Response r = new SoftPeer.Response();
    try {
      while (true) {
        c.readHeader(f, fabric.maxMessage());
        if (f.kind != FabricWire.RESPONSE) {
          throw new FabricWire.FabricViolation(
              "a request arrived on this process's own connection");
        }
        FabricConnection.IncomingPayload data = c.payload(f.payloadLength);
        SoftDevice device = fabric.device(f.destDevice);
        SoftQp qp = device == null ? null : device.qps.get(f.destQpn);
        if (qp == null) { // a late answer for a QP gone since
          data.finish();
          continue;
        }
        f.toResponse(r);
        qp.requester.onResponse(r, data, this);
        data.finish();
      }
    } catch (FabricWire.FabricViolation v) {
      fabric.refusals().refuse(address.toString(), v.getMessage() + "; the link is dropped");
      violated(c, v.getMessage());
    } catch (IOException | UncheckedIOException e) {
      lost(c, e.getMessage());
    } catch (RuntimeException | Error e) {
      LOG.error("soft fabric: reading answers from {} failed", address, e);
      violated(c, "reading its answers failed: " + e);
    }
  }

  /** The connection broke: QPs with requests on it time out and retry on a new one. */
  private void lost(FabricConnection c, String why) {
    lastFailure = " (its connection broke: " + why + ")";
    drop(c);
  }

  /** The peer broke the protocol: every QP talking to it fails, naming it and the rule. */
  void violated(FabricConnection c, String why) {
    lastFailure = " (it broke the fabric protocol: " + why + ")";
    if (c != null) drop(c);
    for (SoftQp qp : attached) {
      qp.failByPeer(this, WcStatus.BAD_RESP_ERR, "the soft fabric peer at " + address
          + " broke the protocol (" + why + "); QP " + qp.qpn
          + " was connected to a device there");
    }
  }

  private void drop(FabricConnection c) {
    synchronized (this) {
      if (connection == c) connection = null;
    }
    c.close();
  }

  void close() {
    FabricConnection c = connection;
    if (c != null) drop(c);
    engine.stop();
  }
}

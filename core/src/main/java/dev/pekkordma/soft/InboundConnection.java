package dev.pekkordma.soft;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.QpType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one connection of a process that proved which fabric it stands for, on a thread of its
 * own: its requests, executed against our QPs and answered. A request only reaches a QP
 * connected to a device of that process; one for another QP, or for no QP, is counted in the
 * port counters and logged (at most {@link RefusalLog#PER_SECOND} lines a second). A frame that
 * breaks the protocol ends the connection, and the QPs connected to that process fail naming
 * it. A connection none of whose requests reached a QP for the idle timeout, while no QP of ours
 * is connected to its process, is closed: a process nobody talks to holds no place for ever.
 */
final class InboundConnection implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(InboundConnection.class);
  /** Refused requests on one connection before it counts as hostile and is dropped. */
  static final int MAX_REFUSED = 100;

  /** What the frames will go through, settled on the connection's own thread. */
  interface FrameEnds {
    FabricConnection.Ends settle() throws IOException;
  }

  private final TcpFabric fabric;
  private final FabricConnection.Ends tcp;
  private final FrameEnds frameEnds;
  /** Null until the frames' ends are settled. */
  private volatile FabricConnection c;
  private final FabricAddress identity;
  private final String remote;
  /** Ended by this side (replaced by a newer connection, or idle): it ends quietly. */
  private volatile boolean ended;
  private int refused;
  /** Answers written, not yet flushed: the serving loop flushes them before it waits. */
  private boolean unflushed;
  /** When a request of it last reached a QP (or it was welcomed). */
  private volatile long lastServed = System.nanoTime();

  /**
   * @param tcp the proven connection's ends
   * @param frameEnds what its frames go through: tcp, or a same-host link's rings
   */
  InboundConnection(TcpFabric fabric, FabricConnection.Ends tcp, FabricAddress identity,
      String remote, FrameEnds frameEnds) {
    this.fabric = fabric;
    this.tcp = tcp;
    this.frameEnds = frameEnds;
    this.identity = identity;
    this.remote = remote;
  }

  /** A newer connection of the same process took this one's place: it ends quietly. */
  void replaced() {
    ended = true;
    close();
  }

  /** Closes the connection, over whichever ends it has by now. */
  private void close() {
    FabricConnection now = c;
    if (now != null) {
      now.close();
      return;
    }
    try {
      tcp.closer().close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }

  /**
   * For the watch: closes the connection, saying why, if none of its requests reached a QP for
   * the idle timeout while no QP of ours is connected to its process.
   */
  void reclaimIfIdle(long now) {
    long idleNanos = fabric.limits().idle().toNanos();
    if (ended || now - lastServed < idleNanos || fabric.talksTo(identity)) return;
    ended = true;
    LOG.info("soft fabric: closing the connection of {}: none of its requests reached a QP for"
        + " {} ms and no QP of this process is connected to it"
        + " (pekko-rdma.soft.fabric.idle-timeout)", who(), idleNanos / 1_000_000);
    close();
  }

  @Override
  public void run() {
    try {
      c = new FabricConnection(frameEnds.settle(), remote, fabric.limits().frame().toNanos(),
          fabric.watch());
      if (ended) return; // replaced or reclaimed while it was settled
      serve();
    } catch (FabricWire.FabricViolation v) {
      fabric.refusals().refuse(who(), v.getMessage() + "; the connection is dropped");
      fabric.violated(identity, v.getMessage());
    } catch (java.net.SocketTimeoutException e) {
      fabric.refusals().refuse(who(), e.getMessage() + "; the connection is dropped");
    } catch (IOException | UncheckedIOException e) {
      if (e.getCause() instanceof java.net.SocketTimeoutException) {
        fabric.refusals().refuse(who(), e.getCause().getMessage() + "; the connection is dropped");
      } else if (!ended) {
        LOG.debug("soft fabric: connection from {} ended: {}", who(), e.getMessage());
      }
    } catch (RuntimeException | Error e) {
      LOG.error("soft fabric: serving {} failed", who(), e);
    } finally {
      fabric.served().ended(identity, this);
      close();
    }
  }

  private String who() {
    return "the process at " + identity + " (" + remote + ")";
  }

  private void serve() throws IOException {
    FabricWire.FrameHeader f = new FabricWire.FrameHeader();
    SoftPeer.RequestHeader h = new SoftPeer.RequestHeader();
    SoftPeer.Response r = new SoftPeer.Response();
    ByteBuffer out = ByteBuffer.allocate(FabricWire.HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    MemoryPayload datagram = new MemoryPayload();
    Segments datagramBytes = new Segments(1);
    try (OffHeapBuffer datagramMemory = OffHeapBuffer.allocate(4096)) {
      while (true) {
        // answers go out together: flushed once no more requests wait behind them
        if (unflushed && !c.moreArrived()) {
          c.flush();
          unflushed = false;
        }
        c.readHeader(f, fabric.maxMessage());
        if (f.kind == FabricWire.RESPONSE) {
          throw new FabricWire.FabricViolation(
              "a response arrived on a connection it opened to us");
        }
        FabricConnection.IncomingPayload payload = c.payload(f.payloadLength);
        SoftDevice device = fabric.device(f.destDevice);
        SoftQp qp = device == null ? null : device.qps.get(f.destQpn);
        if (device != null && f.payloadLength > device.settings.maxMsgSize) {
          throw new FabricWire.FabricViolation("a message of " + f.payloadLength + " bytes for "
              + device.info.name() + ", whose max-msg-size is " + device.settings.maxMsgSize);
        }
        f.toRequest(h);
        identity.writeGid(h.srcGid, f.srcDevice); // the source is who the handshake proved
        if (qp == null) { // destroyed, or never was: the requester's timer will tell it
          payload.finish();
          unknown(f, device);
          continue;
        }
        if (f.kind == FabricWire.DATAGRAM && qp.type == QpType.UD) {
          if (f.payloadLength > device.settings.mtu) {
            throw new FabricWire.FabricViolation("a datagram of " + f.payloadLength
                + " bytes, over the MTU of " + device.settings.mtu);
          }
          boolean whole = payload.readInto(datagramMemory);
          if (whole) {
            datagramBytes.single(datagramMemory.address(), f.payloadLength);
            qp.responder.handleDatagram(h, datagram.of(datagramBytes));
          }
          lastServed = System.nanoTime();
          continue;
        }
        if (!qp.isPeer(h.srcGid) || h.srcQpn != qp.destQpn) {
          payload.finish();
          refuse(qp, h);
          continue;
        }
        lastServed = System.nanoTime();
        if (f.kind == FabricWire.DATAGRAM) { // UC: no answer
          qp.responder.handleRequest(h, payload, r, true);
          payload.finish();
          continue;
        }
        qp.responder.handleRequest(h, payload, r, false);
        payload.finish();
        if (r.code != SoftPeer.Response.DROPPED) answer(qp, f, r, out);
      }
    }
  }

  private void answer(SoftQp qp, FabricWire.FrameHeader f, SoftPeer.Response r, ByteBuffer out)
      throws IOException {
    long data = r.code == SoftPeer.Response.ACK ? r.readLength : 0;
    FabricWire.encodeResponse(out, f.destDevice, f.srcDevice, f.srcQpn, qp.qpn, r, data);
    c.writeHeader(out);
    if (data > 0) c.writePayload(r.readSource, null, 0);
    unflushed = true;
  }

  /** A request for a QP not connected to the process this connection stands for. */
  private void refuse(SoftQp qp, SoftPeer.RequestHeader h) {
    qp.device.portTally.refusedRequests.increment();
    fabric.refusals().refuse(who(), "a request from QP " + h.srcQpn + " for QP "
            + qp.qpn + ", which is not connected to it");
    if (++refused > MAX_REFUSED) {
      throw new FabricWire.FabricViolation(refused + " requests for QPs not connected to it");
    }
  }

  /** A request for a QP (or device) we do not have: gone since, or guessed. */
  private void unknown(FabricWire.FrameHeader f, SoftDevice device) {
    if (device != null) device.portTally.unknownQpnRequests.increment();
    fabric.refusals().refuse(who(), "a request for QP " + f.destQpn + " of device "
        + f.destDevice + ", which " + (device == null ? "does not exist" : "has no such QP"));
  }
}

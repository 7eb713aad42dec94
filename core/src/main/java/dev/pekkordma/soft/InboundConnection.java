package dev.pekkordma.soft;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.QpType;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Serves one connection another process opened to this fabric, on a thread of the fabric's
 * bounded pool: the handshake that proves which process it stands for, then its requests,
 * executed against our QPs and answered. A request only reaches a QP connected to a device of
 * that process; a frame that breaks the protocol ends the connection, and the QPs connected to
 * that process fail naming it.
 */
final class InboundConnection implements Runnable {
  private static final Logger LOG = LoggerFactory.getLogger(InboundConnection.class);
  /** Refused requests on one connection before it counts as hostile and is dropped. */
  static final int MAX_REFUSED = 100;

  private final TcpFabric fabric;
  private final Socket socket;
  private final String remote;
  private FabricConnection c;
  private FabricAddress identity;
  private int refused;

  InboundConnection(TcpFabric fabric, Socket socket) {
    this.fabric = fabric;
    this.socket = socket;
    this.remote = String.valueOf(socket.getRemoteSocketAddress()).replaceFirst("^/", "");
  }

  @Override
  public void run() {
    try {
      c = fabric.serverSide(socket, remote);
      if (!handshake()) return;
      serve();
    } catch (FabricWire.Violation v) {
      fabric.refusals().refuse(who(), v.getMessage() + "; the connection is dropped");
      if (identity != null) fabric.violated(identity, v.getMessage());
    } catch (javax.net.ssl.SSLException e) {
      fabric.refusals().refuse(who(), "TLS: " + e.getMessage());
    } catch (java.net.SocketTimeoutException e) {
      fabric.refusals().refuse(who(), e.getMessage() + "; the connection is dropped");
    } catch (IOException | UncheckedIOException e) {
      if (e.getCause() instanceof java.net.SocketTimeoutException) {
        fabric.refusals().refuse(who(), e.getCause().getMessage() + "; the connection is dropped");
      } else {
        LOG.debug("soft fabric: connection from {} ended: {}", remote, e.getMessage());
      }
    } catch (RuntimeException | Error e) {
      LOG.error("soft fabric: serving {} failed", remote, e);
    } finally {
      if (c != null) c.close();
      else closeQuietly();
    }
  }

  private String who() {
    return identity != null ? "the process at " + identity + " (" + remote + ")" : remote;
  }

  /** HELLO, proven by a call back to the listener it names; or a PROVE asked of us. */
  private boolean handshake() throws IOException {
    FabricWire.Handshake h = FabricWire.Handshake.decode(c.readHandshake(), FabricWire.HELLO,
        FabricWire.PROVE);
    if (h.kind == FabricWire.PROVE) {
      FabricWire.Handshake answer = new FabricWire.Handshake();
      answer.kind = fabric.consumeNonce(h.nonce) ? FabricWire.PROVEN : FabricWire.NOT_PROVEN;
      c.writeHandshake(answer);
      return false;
    }
    FabricAddress claimed = new FabricAddress(h.address, h.port);
    FabricWire.Handshake answer = new FabricWire.Handshake();
    if (!fabric.prove(claimed, h.nonce)) {
      answer.kind = FabricWire.REFUSED;
      c.writeHandshake(answer);
      fabric.refusals().refuse(remote, "it claims to be the fabric at " + claimed
          + ", which did not confirm it");
      return false;
    }
    identity = claimed;
    answer.kind = FabricWire.WELCOME;
    c.writeHandshake(answer);
    c.established();
    return true;
  }

  private void serve() throws IOException {
    FabricWire.Frame f = new FabricWire.Frame();
    SoftPeer.RequestHeader h = new SoftPeer.RequestHeader();
    SoftPeer.Response r = new SoftPeer.Response();
    ByteBuffer out = ByteBuffer.allocate(FabricWire.HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    MemoryPayload datagram = new MemoryPayload();
    Segments datagramBytes = new Segments(1);
    try (OffHeapBuffer datagramMemory = OffHeapBuffer.allocate(4096)) {
      while (true) {
        c.readHeader(f, fabric.maxMessage());
        if (f.kind == FabricWire.RESPONSE) {
          throw new FabricWire.Violation("a response arrived on a connection it opened to us");
        }
        FabricConnection.Incoming payload = c.payload(f.payloadLength);
        SoftDevice device = fabric.device(f.destDevice);
        SoftQp qp = device == null ? null : device.qps.get(f.destQpn);
        if (device != null && f.payloadLength > device.settings.maxMsgSize) {
          throw new FabricWire.Violation("a message of " + f.payloadLength + " bytes for "
              + device.info.name() + ", whose max-msg-size is " + device.settings.maxMsgSize);
        }
        f.toRequest(h);
        identity.writeGid(h.srcGid, f.srcDevice); // the source is who the handshake proved
        if (qp == null) { // destroyed, or never was: the requester's timer will tell it
          payload.finish();
          continue;
        }
        if (f.kind == FabricWire.DATAGRAM && qp.type == QpType.UD) {
          if (f.payloadLength > device.settings.mtu) {
            throw new FabricWire.Violation("a datagram of " + f.payloadLength
                + " bytes, over the MTU of " + device.settings.mtu);
          }
          boolean whole = payload.readInto(datagramMemory);
          if (whole) {
            datagramBytes.single(datagramMemory.address(), f.payloadLength);
            qp.responder.handleDatagram(h, datagram.of(datagramBytes));
          }
          continue;
        }
        if (!qp.isPeer(h.srcGid) || h.srcQpn != qp.destQpn) {
          payload.finish();
          refuse(qp, h);
          continue;
        }
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

  private void answer(SoftQp qp, FabricWire.Frame f, SoftPeer.Response r, ByteBuffer out)
      throws IOException {
    long data = r.code == SoftPeer.Response.ACK ? r.readLength : 0;
    FabricWire.encodeResponse(out, f.destDevice, f.srcDevice, f.srcQpn, qp.qpn, r, data);
    c.writeHeader(out);
    if (data > 0) c.writePayload(r.readSource, null, 0);
    c.flush();
  }

  /** A request for a QP not connected to the process this connection stands for. */
  private void refuse(SoftQp qp, SoftPeer.RequestHeader h) {
    fabric.refusals().refuse(who(), "a request from QP " + h.srcQpn + " for QP "
            + qp.qpn + ", which is not connected to it");
    if (++refused > MAX_REFUSED) {
      throw new FabricWire.Violation(refused + " requests for QPs not connected to it");
    }
  }

  private void closeQuietly() {
    try {
      socket.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }
}

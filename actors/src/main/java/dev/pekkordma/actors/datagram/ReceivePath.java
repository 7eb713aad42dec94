package dev.pekkordma.actors.datagram;

import dev.pekkordma.runtime.internal.datagram.DatagramFormat;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.verbs.Gid;
import java.util.function.BiFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receives of one datagram actor: every slot posted at start, and each reposted once its
 * datagram was copied out. A completion's length is checked against the slot before anything
 * is read; one that does not fit is dropped, logged at most once a second.
 */
final class ReceivePath {
  private static final Logger log = LoggerFactory.getLogger(ReceivePath.class);
  private final UdResources res;
  private final BiFunction<Gid, Integer, Peer> peers;
  private final long[] gid = new long[2];
  private long malformed;
  private long lastLog;

  ReceivePath(UdResources res, BiFunction<Gid, Integer, Peer> peers) {
    this.res = res;
    this.peers = peers;
  }

  void postAll() {
    for (int i = 0; i < res.receives; i++) res.addReceive(i);
    res.flushReceives();
  }

  /** Datagrams dropped because their completion did not fit their buffer. */
  long malformed() {
    return malformed;
  }

  /**
   * The datagram in {@code slot}, or null if it does not fit; the slot is queued for posting
   * again either way ({@link UdResources#flushReceives} posts it).
   */
  ReceivedDatagram take(int slot, int byteLength, int flags, int sourceQp) {
    try {
      int length;
      try {
        length = DatagramFormat.dataLength(byteLength, res.receiveSize);
      } catch (DatagramFormat.MalformedDatagramException e) {
        dropped(e);
        return null;
      }
      Gid from = Gid.ZERO;
      try {
        DatagramFormat.sourceGid(res.receiveArea(), slot * res.receiveSize, flags, gid);
      } catch (DatagramFormat.MalformedDatagramException e) {
        dropped(e);
        return null;
      }
      if (gid[0] != 0 || gid[1] != 0) from = DatagramFormat.gid(gid[0], gid[1]);
      return new ReceivedDatagram(peers.apply(from, sourceQp),
          res.copyOut(slot, DatagramFormat.GRH_BYTES, length));
    } finally {
      res.addReceive(slot);
    }
  }

  private void dropped(DatagramFormat.MalformedDatagramException e) {
    malformed++;
    long now = System.nanoTime();
    if (now - lastLog > 1_000_000_000L) {
      lastLog = now;
      log.warn("dropped a datagram ({} so far): {}", malformed, e.getMessage());
    }
  }
}

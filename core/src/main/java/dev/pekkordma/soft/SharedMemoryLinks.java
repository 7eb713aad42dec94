package dev.pekkordma.soft;

import dev.pekkordma.soft.SharedMemoryHandshake.RingAction;
import dev.pekkordma.soft.shm.RingFile;
import dev.pekkordma.soft.shm.RingLink;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Carries out {@link SharedMemoryHandshake}'s actions on a proven connection: makes, opens and
 * unlinks the ring file, sends and reads the two messages within the handshake's deadline, logs
 * why a link stays on TCP, and hands back the ends the frames go through: the rings, or the
 * connection's own.
 */
final class SharedMemoryLinks {
  private static final Logger LOG = LoggerFactory.getLogger(SharedMemoryLinks.class);
  private static final String SPACE_SETTING = "pekko-rdma.soft.fabric.frame-timeout";

  private final TcpFabric fabric;

  SharedMemoryLinks(TcpFabric fabric) {
    this.fabric = fabric;
  }

  /**
   * The connecting side, once WELCOME came with {@code welcomeCode} on {@code s} (blocking, within
   * {@code deadline}): the ends to send frames through.
   */
  FabricConnection.Ends offer(SharedMemoryHandshake.Offering offering, short welcomeCode,
      Socket s, FabricAddress peer, byte[] binding, Deadline deadline) throws IOException {
    RingAction next = offering.welcomed(welcomeCode);
    RingFile file = null;
    try {
      if (next instanceof SharedMemoryHandshake.Create) {
        SharedMemoryConfig config = fabric.sharedMemory();
        try {
          file = RingFile.create(config.directory(), config.ring(), binding);
          next = offering.created(file.name(), file.capacity());
        } catch (IOException | RuntimeException e) {
          next = offering.notCreated("in " + config.directory() + ": " + e);
        }
      }
      if (next instanceof SharedMemoryHandshake.SendOffer o) {
        write(s.getOutputStream(), o.message());
        next = offering.answered(FabricHandshakes.read(s, deadline));
      }
      return ends(next, "the link to " + peer, file, true,
          FabricConnection.Ends.of(s), s.getInputStream(), s.getOutputStream());
    } catch (IOException | RuntimeException e) {
      if (file != null) file.close();
      throw e;
    } finally {
      if (file != null) file.unlink(); // both sides have it mapped, or never will
    }
  }

  /**
   * The accepting side, once WELCOME went out on {@code tcp}: the ends to serve frames through.
   * Blocking, within a handshake timeout of its own.
   */
  FabricConnection.Ends answer(SharedMemoryHandshake.Answering answering,
      FabricConnection.Ends tcp, String peer, byte[] binding) throws IOException {
    RingAction next = answering.welcomed();
    RingFile file = null;
    if (next instanceof SharedMemoryHandshake.AwaitOffer) {
      Deadline deadline = fabric.deadline(() -> { });
      deadline.guard(tcp.closer());
      byte[] offer;
      try {
        offer = readFully(tcp.in(), FabricWire.HANDSHAKE_BYTES);
      } catch (IOException e) {
        throw deadline.expired() ? deadline.overdue() : e;
      } finally {
        deadline.settle();
      }
      next = answering.offered(offer);
      if (next instanceof SharedMemoryHandshake.Open open) {
        try {
          file = RingFile.open(fabric.sharedMemory().directory(), open.name(), open.capacity(),
              binding);
          next = answering.opened();
        } catch (RingFile.RingFileRefused r) {
          next = answering.refused(r.reason, r.getMessage());
        }
      }
    }
    try {
      return ends(next, "the link from " + peer, file, false, tcp, tcp.in(), tcp.out());
    } catch (IOException | RuntimeException e) {
      if (file != null) file.close();
      throw e;
    }
  }

  /** Does the last action: the frames' ends, after sending what it says to send. */
  private FabricConnection.Ends ends(RingAction last, String link, RingFile file, boolean connecting,
      FabricConnection.Ends tcp, InputStream doorbellIn, OutputStream doorbellOut)
      throws IOException {
    if (last instanceof SharedMemoryHandshake.DropConnection drop) {
      throw new FabricWire.FabricViolation(drop.why());
    }
    if (last instanceof SharedMemoryHandshake.Tcp stay) {
      if (file != null) file.close(); // made, then refused: the link stays on TCP
      if (stay.message() != null) write(tcp.out(), stay.message());
      if (stay.quiet()) {
        LOG.debug("soft fabric: {} stays on TCP: {}", link, stay.why());
      } else {
        LOG.info("soft fabric: {} stays on TCP: {}", link, stay.why());
      }
      return tcp;
    }
    SharedMemoryHandshake.Rings rings = (SharedMemoryHandshake.Rings) last;
    if (rings.message() != null) write(tcp.out(), rings.message());
    LOG.debug("soft fabric: {} carries its frames through {}", link, file.name());
    return FabricConnection.Ends.of(new RingLink(file, connecting, doorbellIn, doorbellOut,
        tcp.closer(), link, fabric.limits().frame().toNanos(), SPACE_SETTING));
  }

  private static void write(OutputStream out, byte[] message) throws IOException {
    out.write(message);
    out.flush();
  }

  private static byte[] readFully(InputStream in, int n) throws IOException {
    byte[] b = new byte[n];
    int off = 0;
    while (off < n) {
      int got = in.read(b, off, n - off);
      if (got < 0) throw new EOFException("the connection closed mid-handshake");
      off += got;
    }
    return b;
  }
}

package dev.pekkordma.soft.shm;

import dev.pekkordma.annotation.InternalApi;
import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * A same-host link's two rings as a stream pair, with the link's socket kept beside them as the
 * doorbell and as the sign of life: the socket's end ends the inbound stream (after the ring's
 * bytes), and closing the link closes the socket, which wakes a reader blocked on it, from any
 * thread. The mapping itself is never unmapped here: a thread may still be copying, and the
 * buffer's cleaner unmaps it once nothing refers to it.
 */
@InternalApi
public final class RingLink implements Closeable {
  private final RingReader in;
  private final RingWriter out;
  private final Closeable socket;
  private final RingFile file;
  final long spaceTimeoutNanos;
  final String spaceTimeoutSetting;
  private volatile boolean closed;

  /**
   * @param connecting whether this is the side that created the file (it writes ring 0)
   * @param peer who is at the other end, for messages
   * @param spaceTimeoutNanos how long a full outbound ring may stay full before a write fails
   * @param spaceTimeoutSetting the setting that gave it, for the message
   */
  public RingLink(RingFile file, boolean connecting, InputStream doorbellIn,
      OutputStream doorbellOut, Closeable socket, String peer, long spaceTimeoutNanos,
      String spaceTimeoutSetting) {
    String name = "the shared-memory ring " + file.name();
    SharedRing inbound = new SharedRing(file, connecting ? 1 : 0, name + " from " + peer);
    SharedRing outbound = new SharedRing(file, connecting ? 0 : 1, name + " to " + peer);
    this.in = new RingReader(inbound, doorbellIn, this);
    this.out = new RingWriter(outbound, doorbellOut, this);
    this.socket = socket;
    this.file = file;
    this.spaceTimeoutNanos = spaceTimeoutNanos;
    this.spaceTimeoutSetting = spaceTimeoutSetting;
  }

  public InputStream in() {
    return in;
  }

  public OutputStream out() {
    return out;
  }

  void checkOpen() throws IOException {
    if (closed) throw new IOException("the shared-memory link was closed");
  }

  @Override
  public void close() {
    closed = true;
    try {
      socket.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
    file.close();
  }
}

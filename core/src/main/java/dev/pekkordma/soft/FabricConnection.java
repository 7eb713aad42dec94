package dev.pekkordma.soft;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.Socket;
import java.net.SocketTimeoutException;

/**
 * One TCP connection of the fabric (plain or TLS) with the frame-level reads and writes both
 * its ends need. Reading and writing may run in two threads; each side is one thread's at a time.
 * A frame begun must arrive whole within the frame timeout, and its payload streams through a
 * fixed buffer: nothing the peer announces sizes an allocation.
 */
final class FabricConnection implements AutoCloseable {
  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  private final String peer;
  private final int frameTimeoutMillis;
  private final byte[] inChunk = new byte[Segments.CHUNK];
  private final byte[] outChunk = new byte[Segments.CHUNK];
  private final Incoming incoming = new Incoming();
  private boolean midFrame;

  FabricConnection(Socket socket, String peer, int frameTimeoutMillis) throws IOException {
    this.socket = socket;
    this.in = new BufferedInputStream(socket.getInputStream(), 64 * 1024);
    this.out = new BufferedOutputStream(socket.getOutputStream(), 64 * 1024);
    this.peer = peer;
    this.frameTimeoutMillis = frameTimeoutMillis;
  }

  /** Who is at the other end, for messages: an address, later the process it stands for. */
  String peer() {
    return peer;
  }

  Socket socket() {
    return socket;
  }

  // ---------------------------------------------------------------- handshake

  byte[] readHandshake() throws IOException {
    byte[] b = new byte[FabricWire.HANDSHAKE_BYTES];
    readFully(b, 0, b.length);
    return b;
  }

  void writeHandshake(FabricWire.Handshake h) throws IOException {
    out.write(h.encode());
    out.flush();
  }

  /** After the handshake: waiting for the next frame may take forever, a frame may not. */
  void established() throws IOException {
    socket.setSoTimeout(0);
  }

  // ---------------------------------------------------------------- reading frames

  /** Reads the next header (waiting as long as the link is idle) and checks it. */
  void readHeader(FabricWire.Frame f, long maxMessage) throws IOException {
    int first = in.read();
    if (first < 0) throw new EOFException(peer + " closed the connection");
    socket.setSoTimeout(frameTimeoutMillis);
    midFrame = true;
    byte[] b = f.bytes.array();
    b[0] = (byte) first;
    readFully(b, 1, FabricWire.HEADER_BYTES - 1);
    f.decode(maxMessage);
  }

  /** The payload of the frame just read, to be consumed before the next header. */
  Incoming payload(long length) {
    incoming.begin(length);
    return incoming;
  }

  /** The frame just read is done (payload and trailer consumed). */
  void frameDone() throws IOException {
    if (midFrame) {
      midFrame = false;
      socket.setSoTimeout(0);
    }
  }

  private void readFully(byte[] b, int off, int len) throws IOException {
    try {
      while (len > 0) {
        int n = in.read(b, off, len);
        if (n < 0) throw new EOFException(peer + " closed the connection mid-frame");
        off += n;
        len -= n;
      }
    } catch (SocketTimeoutException e) {
      throw new SocketTimeoutException(peer + " sent part of a frame, then nothing for "
          + frameTimeoutMillis + " ms (pekko-rdma.soft.fabric.frame-timeout)");
    }
  }

  /** A frame's payload, read through {@link #inChunk}; one at a time per connection. */
  final class Incoming implements Payload {
    private long length;
    private long remaining;
    private boolean failed;
    private boolean finished;
    private boolean whole;

    void begin(long n) {
      length = n;
      remaining = n;
      failed = false;
      finished = false;
    }

    @Override
    public long length() {
      return length;
    }

    @Override
    public int copyTo(Segments dst, long dstOffset, long len, AccessFence owner, int gen) {
      if (len > remaining) throw new IllegalStateException("copy past the payload");
      int result = Segments.COPIED;
      try {
        while (len > 0) {
          int n = (int) Math.min(len, inChunk.length);
          readFully(inChunk, 0, n);
          remaining -= n;
          len -= n;
          if (result == Segments.COPIED) {
            result = dst.transfer(dstOffset, inChunk, 0, n, true, owner, gen);
            dstOffset += n;
          }
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      if (result != Segments.COPIED) failed = true;
      return result;
    }

    @Override
    public boolean finish() {
      if (finished) return whole;
      finished = true;
      try {
        while (remaining > 0) {
          int n = (int) Math.min(remaining, inChunk.length);
          readFully(inChunk, 0, n);
          remaining -= n;
        }
        if (length > 0) { // ending before the trailer is ending mid-frame, not a violation
          readFully(inChunk, 0, 1);
          int t = inChunk[0] & 0xff;
          if (t != FabricWire.TRAILER_WHOLE && t != FabricWire.TRAILER_ABORTED) {
            throw new FabricWire.Violation("trailer byte " + t + " (0 or 1 expected)");
          }
          whole = t == FabricWire.TRAILER_WHOLE;
        } else {
          whole = true;
        }
        frameDone();
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return whole;
    }

    /** Reads the whole payload into {@code into} (the caller checked it fits); true if whole. */
    boolean readInto(dev.pekkordma.memory.OffHeapBuffer into) {
      int n = (int) remaining;
      try {
        readFully(inChunk, 0, n);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      into.put(0, inChunk, 0, n);
      remaining = 0;
      return finish();
    }
  }

  // ---------------------------------------------------------------- writing frames

  void writeHeader(java.nio.ByteBuffer header) throws IOException {
    out.write(header.array(), 0, header.limit());
  }

  /**
   * Writes a payload read from {@code source} (fenced) and its trailer. If a registration of
   * the source goes away meanwhile, the rest is zeros and the trailer says so: SOURCE_GONE.
   */
  int writePayload(Segments source, AccessFence owner, int ownerGeneration) throws IOException {
    long total = source.total();
    if (total == 0) return Segments.COPIED;
    int result = Segments.COPIED;
    long done = 0;
    while (done < total) {
      int n = (int) Math.min(total - done, outChunk.length);
      if (result == Segments.COPIED) {
        result = source.transfer(done, outChunk, 0, n, false, owner, ownerGeneration);
      }
      if (result != Segments.COPIED) java.util.Arrays.fill(outChunk, 0, n, (byte) 0);
      out.write(outChunk, 0, n);
      done += n;
    }
    out.write(result == Segments.COPIED ? FabricWire.TRAILER_WHOLE : FabricWire.TRAILER_ABORTED);
    return result == Segments.COPIED ? Segments.COPIED : Segments.SOURCE_GONE;
  }

  void flush() throws IOException {
    out.flush();
  }

  @Override
  public void close() {
    try {
      socket.close();
    } catch (IOException e) {
      // closing a broken connection
    }
  }

  @Override
  public String toString() {
    return peer;
  }
}

package dev.pekkordma.soft;

import dev.pekkordma.soft.shm.RingLink;
import dev.pekkordma.soft.shm.RingViolation;
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
 * One connection of the fabric (TCP, plain or TLS, or a same-host link's shared rings beside its
 * TCP connection), after its handshake, with the frame-level
 * reads and writes both its ends need. Reading and writing may run in two threads; each side is
 * one thread's at a time. A frame begun must keep arriving: its header, and then each {@link
 * Segments#CHUNK} bytes of its payload, within the frame timeout each, however their bytes
 * trickle in (a deadline per piece, not a timeout per read, which every byte would restart). The
 * {@link ConnectionWatch} enforces it, closing a connection whose piece is overdue, so that reads
 * block plainly: a timed read costs every message a few microseconds. Its payload streams
 * through a fixed buffer: nothing the peer announces sizes an allocation. The buffers are made
 * here, so only for connections that were proven.
 */
final class FabricConnection implements AutoCloseable {
  /**
   * What a connection reads and writes through, and what closing it closes: a socket's streams
   * (plain, or the JDK's TLS socket) or streams over a TLS channel whose TCP channel is closed
   * directly (closing TLS politely would write, and the watch must never wait on a peer), each
   * buffered; or a same-host link's rings ({@link RingLink}), which batch by themselves.
   */
  record Ends(InputStream in, OutputStream out, java.io.Closeable closer) {
    private static final int BUFFER = 64 * 1024;

    static Ends of(Socket s) throws IOException {
      s.setSoTimeout(0); // the watch keeps the deadlines
      return buffered(s.getInputStream(), s.getOutputStream(), s);
    }

    /** {@code secured} over {@code raw}, both blocking: TLS on the fabric's gate. */
    static Ends of(java.nio.channels.SocketChannel raw, java.nio.channels.ByteChannel secured) {
      return buffered(java.nio.channels.Channels.newInputStream(secured),
          java.nio.channels.Channels.newOutputStream(secured), raw);
    }

    /** The rings of {@code link}, which closes its socket as well. */
    static Ends of(RingLink link) {
      return new Ends(link.in(), link.out(), link);
    }

    private static Ends buffered(InputStream in, OutputStream out, java.io.Closeable closer) {
      return new Ends(new Buffered(in, BUFFER), new BufferedOutputStream(out, BUFFER), closer);
    }
  }

  /** A buffered input that tells what it holds without asking the socket (a system call). */
  private static final class Buffered extends BufferedInputStream {
    Buffered(InputStream in, int size) {
      super(in, size);
    }

    int buffered() {
      return count - pos;
    }
  }

  private final java.io.Closeable closer;
  private final InputStream in;
  private final OutputStream out;
  private final String peer;
  private final long frameNanos;
  private final ConnectionWatch watch;
  private final byte[] inChunk = new byte[Segments.CHUNK];
  private final byte[] outChunk = new byte[Segments.CHUNK];
  private final IncomingPayload incoming = new IncomingPayload();
  /** When the piece of a frame being read (its header, a chunk) must be whole; 0 between frames. */
  private volatile long pieceDeadline;
  /** Closed by the watch because a piece was overdue. */
  private volatile boolean overdue;
  /** Closed because the peer broke a shared ring's rules: why (null while it has not). */
  private volatile String violation;

  FabricConnection(Ends ends, String peer, long frameNanos, ConnectionWatch watch) {
    this.closer = ends.closer();
    this.in = ends.in();
    this.out = ends.out();
    this.peer = peer;
    this.frameNanos = frameNanos;
    this.watch = watch;
    watch.watch(this);
  }

  /** Who is at the other end, for messages: an address, later the process it stands for. */
  String peer() {
    return peer;
  }

  // ---------------------------------------------------------------- reading frames

  /** Reads the next header (waiting as long as the link is idle) and checks it. */
  void readHeader(FabricWire.FrameHeader f, long maxMessage) throws IOException {
    int first;
    try {
      first = in.read();
    } catch (IOException e) {
      throw broken(e);
    }
    if (first < 0) throw broken(new EOFException(peer + " closed the connection"));
    pieceDeadline = System.nanoTime() + frameNanos;
    byte[] b = f.bytes.array();
    b[0] = (byte) first;
    readFully(b, 1, FabricWire.HEADER_BYTES - 1);
    f.decode(maxMessage);
  }

  /** The payload of the frame just read, to be consumed before the next header. */
  IncomingPayload payload(long length) {
    incoming.begin(length);
    return incoming;
  }

  /** Reads one piece of a payload (at most a chunk), within a frame timeout of its own. */
  private void readPiece(byte[] b, int off, int len) throws IOException {
    pieceDeadline = System.nanoTime() + frameNanos;
    readFully(b, off, len);
  }

  private void readFully(byte[] b, int off, int len) throws IOException {
    try {
      while (len > 0) {
        int n = in.read(b, off, len);
        if (n < 0) throw new EOFException(peer + " closed the connection mid-frame");
        off += n;
        len -= n;
      }
    } catch (IOException e) {
      throw broken(e);
    }
  }

  /**
   * What a failed read or write means: the peer broke a shared ring's rules (a FabricViolation, now
   * and for every later read, so that the link's reader names it whichever thread met it first),
   * a piece was overdue, or the connection ended.
   */
  private IOException broken(IOException e) {
    if (e instanceof RingViolation v && violation == null) {
      violation = v.getMessage();
      close();
    }
    String why = violation;
    if (why != null) throw new FabricWire.FabricViolation(why);
    return overdue ? timedOut() : e;
  }

  /** For the watch: closes the connection if the piece being read is overdue at {@code now}. */
  void expireOverdue(long now) {
    long d = pieceDeadline;
    if (d != 0 && now - d > 0) {
      overdue = true;
      close();
    }
  }

  private SocketTimeoutException timedOut() {
    return new SocketTimeoutException(peer + " sent part of a frame and not the rest of its"
        + " header, or of 256 KiB of its payload, within " + frameNanos / 1_000_000
        + " ms (pekko-rdma.soft.fabric.frame-timeout)");
  }

  /** A frame's payload, read through {@link #inChunk}; one at a time per connection. */
  final class IncomingPayload implements Payload {
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
          readPiece(inChunk, 0, n);
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
          readPiece(inChunk, 0, n);
          remaining -= n;
        }
        if (length > 0) { // ending before the trailer is ending mid-frame, not a violation
          readPiece(inChunk, 0, 1);
          int t = inChunk[0] & 0xff;
          if (t != FabricWire.TRAILER_WHOLE && t != FabricWire.TRAILER_ABORTED) {
            throw new FabricWire.FabricViolation("trailer byte " + t + " (0 or 1 expected)");
          }
          whole = t == FabricWire.TRAILER_WHOLE;
        } else {
          whole = true;
        }
        pieceDeadline = 0; // the frame is done: waiting for the next one takes no deadline
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      return whole;
    }

    /** Reads the whole payload into {@code into} (the caller checked it fits); true if whole. */
    boolean readInto(dev.pekkordma.memory.OffHeapBuffer into) {
      int n = (int) remaining;
      try {
        readPiece(inChunk, 0, n);
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
    try {
      out.write(header.array(), 0, header.limit());
    } catch (IOException e) {
      throw broken(e);
    }
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
      write(outChunk, n);
      done += n;
    }
    write(result == Segments.COPIED ? FabricWire.TRAILER_WHOLE : FabricWire.TRAILER_ABORTED);
    return result == Segments.COPIED ? Segments.COPIED : Segments.SOURCE_GONE;
  }

  private void write(byte[] b, int n) throws IOException {
    try {
      out.write(b, 0, n);
    } catch (IOException e) {
      throw broken(e);
    }
  }

  private void write(int b) throws IOException {
    try {
      out.write(b);
    } catch (IOException e) {
      throw broken(e);
    }
  }

  /**
   * Whether bytes of a next frame have arrived already, read into the buffer or the ring: a side
   * that answers may then leave its answers for one flush after them.
   */
  boolean moreArrived() throws IOException {
    return in instanceof Buffered b ? b.buffered() > 0 : in.available() > 0;
  }

  void flush() throws IOException {
    try {
      out.flush();
    } catch (IOException e) {
      throw broken(e);
    }
  }

  @Override
  public void close() {
    watch.forget(this);
    try {
      closer.close();
    } catch (IOException e) {
      // closing a broken connection
    }
  }

  @Override
  public String toString() {
    return peer;
  }
}

package dev.pekkordma.actors;

import dev.pekkordma.memory.OffHeapBuffer;
import java.nio.ByteBuffer;

/**
 * A registered buffer leased from a {@link BufferPool}. Give it back with {@link #release()}, or
 * hand it to a QP actor in a work request: a send or write returns it to the pool when its
 * completion arrives; a receive or read hands it back to the requester in the completion.
 */
public final class Buffer {
  private final BufferPool pool;
  final int index;
  private final OffHeapBuffer slab;
  private final int offset;
  private final int capacity;
  private final int lkey;
  private final int rkey;
  boolean leased; // guarded by pool

  Buffer(BufferPool pool, int index, OffHeapBuffer slab, int offset, int capacity, int lkey,
      int rkey) {
    this.pool = pool;
    this.index = index;
    this.slab = slab;
    this.offset = offset;
    this.capacity = capacity;
    this.lkey = lkey;
    this.rkey = rkey;
  }

  public BufferPool pool() { return pool; }

  /** The virtual address of the first byte, as an RDMA peer addresses it. */
  public long address() { return slab.address() + offset; }

  public int capacity() { return capacity; }

  public int lkey() { return lkey; }

  /** The key a peer uses to read or write this buffer (the pool's slabs allow remote access). */
  public int rkey() { return rkey; }

  public void put(int at, byte[] src, int srcOffset, int length) {
    check(at, length);
    slab.put(offset + at, src, srcOffset, length);
  }

  public void put(int at, byte[] src) {
    put(at, src, 0, src.length);
  }

  public void get(int at, byte[] dst, int dstOffset, int length) {
    check(at, length);
    slab.get(offset + at, dst, dstOffset, length);
  }

  /** A copy of {@code [0, length)}. */
  public byte[] bytes(int length) {
    byte[] b = new byte[length];
    get(0, b, 0, length);
    return b;
  }

  /** A view of {@code [at, at+length)}; valid while the pool is open. */
  public ByteBuffer view(int at, int length) {
    check(at, length);
    return slab.view(offset + at, length);
  }

  /** Returns the buffer to its pool; releasing one that is not leased fails. */
  public void release() {
    pool.release(this);
  }

  private void check(int at, int length) {
    if (at < 0 || length < 0 || at + length > capacity) {
      throw new IndexOutOfBoundsException("[" + at + ", " + (at + length) + ") outside buffer "
          + index + " of " + capacity + " bytes");
    }
  }

  @Override
  public String toString() {
    return "Buffer(" + index + " of " + pool + ")";
  }
}

package dev.pekkordma.verbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;

/**
 * A reusable batch of send work requests in off-heap memory, laid out as an array of {@code
 * struct ibv_send_wr} (128 bytes each on x86-64) followed by their {@code struct ibv_sge} lists,
 * so a provider can post the whole batch in one call without allocating. Fill it with {@link
 * #add} and the setters that follow (each applies to the request added last), post it, then
 * {@link #clear} and reuse it.
 */
public final class SendRequests implements AutoCloseable {
  // ibv_send_flags
  public static final int FENCE = 1;
  public static final int SIGNALED = 1 << 1;
  public static final int SOLICITED = 1 << 2;
  public static final int INLINE = 1 << 3;

  // struct ibv_send_wr
  public static final int WR_SIZE = 128;
  public static final int OFF_WR_ID = 0;
  public static final int OFF_NEXT = 8;
  public static final int OFF_SG_LIST = 16;
  public static final int OFF_NUM_SGE = 24;
  public static final int OFF_OPCODE = 28;
  public static final int OFF_SEND_FLAGS = 32;
  public static final int OFF_IMM_DATA = 36;
  public static final int OFF_REMOTE_ADDR = 40;
  public static final int OFF_RDMA_RKEY = 48;
  public static final int OFF_COMPARE_ADD = 48;
  public static final int OFF_SWAP = 56;
  public static final int OFF_ATOMIC_RKEY = 64;
  public static final int OFF_UD_AH = 40;
  public static final int OFF_UD_REMOTE_QPN = 48;
  public static final int OFF_UD_REMOTE_QKEY = 52;
  public static final int OFF_BIND_MW = 80;
  public static final int OFF_BIND_RKEY = 88;
  public static final int OFF_BIND_MR = 96;
  public static final int OFF_BIND_ADDR = 104;
  public static final int OFF_BIND_LENGTH = 112;
  public static final int OFF_BIND_ACCESS = 120;
  // struct ibv_sge
  public static final int SGE_SIZE = 16;

  private final OffHeapBuffer memory;
  private final long base;
  private final long sgeBase;
  private final int capacity;
  private final int maxSge;
  private int size;

  public SendRequests(int capacity, int maxSgePerRequest) {
    if (capacity <= 0) throw new IllegalArgumentException("capacity must be positive: " + capacity);
    if (maxSgePerRequest <= 0) {
      throw new IllegalArgumentException("maxSgePerRequest must be positive: " + maxSgePerRequest);
    }
    this.capacity = capacity;
    this.maxSge = maxSgePerRequest;
    this.memory = OffHeapBuffer.allocate((long) capacity * (WR_SIZE + (long) maxSge * SGE_SIZE));
    this.base = memory.address();
    this.sgeBase = base + (long) capacity * WR_SIZE;
  }

  public int capacity() { return capacity; }

  public int maxSgePerRequest() { return maxSge; }

  public int size() { return size; }

  public void clear() { size = 0; }

  /** Starts a request; the setters after it apply to it. Flags: {@link #SIGNALED} etc. */
  public SendRequests add(long wrId, WrOpcode opcode, int flags) {
    if (size == capacity) {
      throw new IllegalStateException("SendRequests is full: capacity " + capacity);
    }
    if (opcode == null) throw new IllegalArgumentException("opcode is null");
    long wr = base + (long) size * WR_SIZE;
    NativeMemory.zero(wr, WR_SIZE);
    NativeMemory.putLong(wr + OFF_WR_ID, wrId);
    NativeMemory.putLong(wr + OFF_SG_LIST, sgeBase + (long) size * maxSge * SGE_SIZE);
    NativeMemory.putInt(wr + OFF_OPCODE, opcode.code);
    NativeMemory.putInt(wr + OFF_SEND_FLAGS, flags);
    size++;
    return this;
  }

  /** Appends a gather element to the current request. */
  public SendRequests sge(long address, int length, int lkey) {
    long wr = current();
    int n = NativeMemory.getInt(wr + OFF_NUM_SGE);
    if (n == maxSge) {
      throw new IllegalStateException("request " + (size - 1) + " already has " + maxSge
          + " SGEs, the most this SendRequests holds per request");
    }
    long sge = NativeMemory.getLong(wr + OFF_SG_LIST) + (long) n * SGE_SIZE;
    NativeMemory.putLong(sge, address);
    NativeMemory.putInt(sge + 8, length);
    NativeMemory.putInt(sge + 12, lkey);
    NativeMemory.putInt(wr + OFF_NUM_SGE, n + 1);
    return this;
  }

  /** Appends {@code [offset, offset+length)} of a region. */
  public SendRequests sge(MemoryRegion mr, long offset, int length) {
    return sge(mr.address() + offset, length, mr.lkey());
  }

  /** Remote address and key for RDMA read and write. */
  public SendRequests rdma(long remoteAddress, int rkey) {
    long wr = current();
    NativeMemory.putLong(wr + OFF_REMOTE_ADDR, remoteAddress);
    NativeMemory.putInt(wr + OFF_RDMA_RKEY, rkey);
    return this;
  }

  /** Remote 8 bytes and operands for compare-and-swap (compare, swap) or fetch-and-add (add, -). */
  public SendRequests atomic(long remoteAddress, int rkey, long compareOrAdd, long swap) {
    long wr = current();
    NativeMemory.putLong(wr + OFF_REMOTE_ADDR, remoteAddress);
    NativeMemory.putLong(wr + OFF_COMPARE_ADD, compareOrAdd);
    NativeMemory.putLong(wr + OFF_SWAP, swap);
    NativeMemory.putInt(wr + OFF_ATOMIC_RKEY, rkey);
    return this;
  }

  /** Immediate data (host order here; stored big-endian as on the wire). */
  public SendRequests immediate(int imm) {
    NativeMemory.putInt(current() + OFF_IMM_DATA, Integer.reverseBytes(imm));
    return this;
  }

  /** The rkey a SEND_WITH_INV invalidates at the responder, or LOCAL_INV invalidates here. */
  public SendRequests invalidate(int rkey) {
    NativeMemory.putInt(current() + OFF_IMM_DATA, rkey);
    return this;
  }

  /** Destination of a UD send. */
  public SendRequests ud(AddressHandle ah, int remoteQpn, int remoteQkey) {
    long wr = current();
    NativeMemory.putLong(wr + OFF_UD_AH, ah.handle());
    NativeMemory.putInt(wr + OFF_UD_REMOTE_QPN, remoteQpn);
    NativeMemory.putInt(wr + OFF_UD_REMOTE_QKEY, remoteQkey);
    return this;
  }

  /** A BIND_MW request: bind type-2 window {@code mw} with {@code newRkey} to part of {@code mr}. */
  public SendRequests bindMw(MemoryWindow mw, int newRkey, MemoryRegion mr, long address,
      long length, int access) {
    long wr = current();
    NativeMemory.putLong(wr + OFF_BIND_MW, mw.handle());
    NativeMemory.putInt(wr + OFF_BIND_RKEY, newRkey);
    NativeMemory.putLong(wr + OFF_BIND_MR, mr == null ? 0 : mr.handle());
    NativeMemory.putLong(wr + OFF_BIND_ADDR, address);
    NativeMemory.putLong(wr + OFF_BIND_LENGTH, length);
    NativeMemory.putInt(wr + OFF_BIND_ACCESS, access);
    return this;
  }

  private long current() {
    if (size == 0) throw new IllegalStateException("call add(...) before setting a request's fields");
    return base + (long) (size - 1) * WR_SIZE;
  }

  /** Links the requests into the {@code next} chain and returns the first's address. */
  public long linkForPost() {
    for (int i = 0; i < size; i++) {
      long wr = base + (long) i * WR_SIZE;
      NativeMemory.putLong(wr + OFF_NEXT, i + 1 < size ? wr + WR_SIZE : 0L);
    }
    return base;
  }

  /** The address of request {@code i}'s {@code struct ibv_send_wr}. */
  public long requestAddress(int i) {
    checkIndex(i);
    return base + (long) i * WR_SIZE;
  }

  public long wrId(int i) { return NativeMemory.getLong(requestAddress(i) + OFF_WR_ID); }
  public WrOpcode opcode(int i) { return WrOpcode.of(NativeMemory.getInt(requestAddress(i) + OFF_OPCODE)); }
  public int flags(int i) { return NativeMemory.getInt(requestAddress(i) + OFF_SEND_FLAGS); }
  public int numSge(int i) { return NativeMemory.getInt(requestAddress(i) + OFF_NUM_SGE); }

  private void checkIndex(int i) {
    if (i < 0 || i >= size) throw new IndexOutOfBoundsException("request " + i + " of " + size);
  }

  @Override
  public void close() {
    memory.close();
  }
}

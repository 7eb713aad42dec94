package dev.pekkordma.verbs;

import static dev.pekkordma.verbs.abi.RequestLayout.*;

import dev.pekkordma.memory.NativeMemory;

/**
 * A reusable batch of send work requests in off-heap memory, laid out as an array of {@code
 * struct ibv_send_wr} (128 bytes each on x86-64) followed by their {@code struct ibv_sge} lists,
 * so a provider can post the whole batch in one call without allocating. Fill it with {@link
 * #add} and the setters that follow (each applies to the request added last), post it, then
 * {@link #clear} and reuse it.
 */
public final class SendRequests extends RequestBatch {
  // ibv_send_flags
  public static final int FENCE = 1;
  public static final int SIGNALED = 1 << 1;
  public static final int SOLICITED = 1 << 2;
  public static final int INLINE = 1 << 3;

  public SendRequests(int capacity, int maxSgePerRequest) {
    super("SendRequests", SEND_WR_SIZE, capacity, maxSgePerRequest);
  }

  /** Starts a request; the setters after it apply to it. Flags: {@link #SIGNALED} etc. */
  public SendRequests add(long wrId, WrOpcode opcode, int flags) {
    if (opcode == null) throw new IllegalArgumentException("opcode is null");
    long wr = startRequest(wrId);
    NativeMemory.putInt(wr + OFF_OPCODE, opcode.code);
    NativeMemory.putInt(wr + OFF_SEND_FLAGS, flags);
    return this;
  }

  /** Appends a gather element to the current request. */
  public SendRequests sge(long address, int length, int lkey) {
    appendSge(address, length, lkey);
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

  public WrOpcode opcode(int i) { return WrOpcode.of(NativeMemory.getInt(requestAddress(i) + OFF_OPCODE)); }
  public int flags(int i) { return NativeMemory.getInt(requestAddress(i) + OFF_SEND_FLAGS); }


}

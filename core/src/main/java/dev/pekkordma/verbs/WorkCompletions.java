package dev.pekkordma.verbs;

import static dev.pekkordma.verbs.abi.CompletionLayout.*;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;

/**
 * A reusable array of work completions in off-heap memory, laid out as {@code struct ibv_wc} (48
 * bytes each on x86-64), so that {@code ibv_poll_cq} can fill it directly. Read entry {@code i}
 * after a poll returned more than {@code i}.
 */
public final class WorkCompletions implements AutoCloseable {
  // ibv_wc_flags
  public static final int FLAG_GRH = 1;
  public static final int FLAG_WITH_IMM = 1 << 1;
  public static final int FLAG_WITH_INV = 1 << 3;

  private final OffHeapBuffer memory;
  private final long base;
  private final int capacity;

  public WorkCompletions(int capacity) {
    if (capacity <= 0) throw new IllegalArgumentException("capacity must be positive: " + capacity);
    this.capacity = capacity;
    this.memory = OffHeapBuffer.allocate((long) capacity * WC_SIZE);
    this.base = memory.address();
  }

  public int capacity() { return capacity; }

  public long address() { return base; }

  private long at(int i) {
    if (i < 0 || i >= capacity) throw new IndexOutOfBoundsException("completion " + i + " of " + capacity);
    return base + (long) i * WC_SIZE;
  }

  public long wrId(int i) { return NativeMemory.getLong(at(i) + OFF_WR_ID); }
  public int statusCode(int i) { return NativeMemory.getInt(at(i) + OFF_STATUS); }
  public WcStatus status(int i) { return WcStatus.of(statusCode(i)); }
  public WcOpcode opcode(int i) { return WcOpcode.of(NativeMemory.getInt(at(i) + OFF_OPCODE)); }
  public int vendorError(int i) { return NativeMemory.getInt(at(i) + OFF_VENDOR_ERR); }
  public int byteLength(int i) { return NativeMemory.getInt(at(i) + OFF_BYTE_LEN); }
  /** Immediate data in host order (valid when {@link #hasImmediate}). */
  public int immediate(int i) { return Integer.reverseBytes(NativeMemory.getInt(at(i) + OFF_IMM_DATA)); }
  public int invalidatedRkey(int i) { return NativeMemory.getInt(at(i) + OFF_IMM_DATA); }
  public int qpNum(int i) { return NativeMemory.getInt(at(i) + OFF_QP_NUM); }
  public int sourceQp(int i) { return NativeMemory.getInt(at(i) + OFF_SRC_QP); }
  public int flags(int i) { return NativeMemory.getInt(at(i) + OFF_WC_FLAGS); }
  public boolean hasImmediate(int i) { return (flags(i) & FLAG_WITH_IMM) != 0; }
  public boolean ok(int i) { return statusCode(i) == 0; }

  /**
   * For providers that produce completions in Java: writes entry {@code i}; {@code immBigEndian}
   * is as on the wire.
   */
  public void put(int i, long wrId, WcStatus status, WcOpcode opcode, int byteLen,
      int immBigEndian, int qpNum, int srcQp, int flags) {
    long wc = at(i);
    NativeMemory.putLong(wc + OFF_WR_ID, wrId);
    NativeMemory.putInt(wc + OFF_STATUS, status.code);
    NativeMemory.putInt(wc + OFF_OPCODE, opcode.code);
    NativeMemory.putInt(wc + OFF_VENDOR_ERR, 0);
    NativeMemory.putInt(wc + OFF_BYTE_LEN, byteLen);
    NativeMemory.putInt(wc + OFF_IMM_DATA, immBigEndian);
    NativeMemory.putInt(wc + OFF_QP_NUM, qpNum);
    NativeMemory.putInt(wc + OFF_SRC_QP, srcQp);
    NativeMemory.putInt(wc + OFF_WC_FLAGS, flags);
  }

  /** A readable line for entry {@code i} (allocates: for logs and tests, not the data path). */
  public String describe(int i) {
    return "wc{wr_id=" + wrId(i) + ", status=" + status(i) + ", opcode=" + opcode(i)
        + ", byte_len=" + byteLength(i) + ", qp=" + qpNum(i)
        + (hasImmediate(i) ? ", imm=" + immediate(i) : "") + "}";
  }

  @Override
  public void close() {
    memory.close();
  }
}

package dev.pekkordma.verbs.abi;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.memory.NativeMemory;

/**
 * Where libibverbs' {@code struct ibv_send_wr}, {@code ibv_recv_wr} and {@code ibv_sge} keep
 * each field on x86-64 (checked against the headers by native's LayoutTest): the batches are
 * laid out so, and the providers read them so. Not part of the API: exported to the native
 * provider only.
 */
@InternalApi
public final class RequestLayout {
  private RequestLayout() {}

  // common to both kinds of request
  public static final int OFF_WR_ID = 0;
  public static final int OFF_NEXT = 8;
  public static final int OFF_SG_LIST = 16;
  public static final int OFF_NUM_SGE = 24;
  public static final int SGE_SIZE = 16;
  // struct ibv_sge
  public static final int OFF_SGE_ADDR = 0;
  public static final int OFF_SGE_LENGTH = 8;
  public static final int OFF_SGE_LKEY = 12;

  // struct ibv_recv_wr
  public static final int RECV_WR_SIZE = 32;

  // struct ibv_send_wr
  public static final int SEND_WR_SIZE = 128;
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

  /** The address of SGE {@code k} of the list at {@code sges}. */
  public static long sgeAddress(long sges, int k) {
    return NativeMemory.getLong(sges + (long) k * SGE_SIZE + OFF_SGE_ADDR);
  }

  /** The length of SGE {@code k} (unsigned, as the C field is). */
  public static long sgeLength(long sges, int k) {
    return Integer.toUnsignedLong(NativeMemory.getInt(sges + (long) k * SGE_SIZE + OFF_SGE_LENGTH));
  }

  public static int sgeLkey(long sges, int k) {
    return NativeMemory.getInt(sges + (long) k * SGE_SIZE + OFF_SGE_LKEY);
  }

  /** The bytes {@code n} SGEs at {@code sges} gather; 0 for no list. */
  public static long gatheredLength(long sges, int n) {
    long total = 0;
    for (int k = 0; k < n && sges != 0; k++) total += sgeLength(sges, k);
    return total;
  }

  /** The bytes the request at {@code wr} (either kind) gathers or scatters: its SGEs' lengths. */
  public static long requestLength(long wr) {
    return gatheredLength(NativeMemory.getLong(wr + OFF_SG_LIST),
        NativeMemory.getInt(wr + OFF_NUM_SGE));
  }
}

package dev.pekkordma.verbs.abi;

import dev.pekkordma.annotation.InternalApi;
/**
 * Where libibverbs' {@code struct ibv_wc} keeps each field on x86-64 (checked against the
 * headers by native's LayoutTest). Not part of the API: exported to the native provider only.
 */
@InternalApi
public final class CompletionLayout {
  private CompletionLayout() {}

  public static final int WC_SIZE = 48;
  public static final int OFF_WR_ID = 0;
  public static final int OFF_STATUS = 8;
  public static final int OFF_OPCODE = 12;
  public static final int OFF_VENDOR_ERR = 16;
  public static final int OFF_BYTE_LEN = 20;
  public static final int OFF_IMM_DATA = 24;
  public static final int OFF_QP_NUM = 28;
  public static final int OFF_SRC_QP = 32;
  public static final int OFF_WC_FLAGS = 36;
  public static final int OFF_PKEY_INDEX = 40;
  public static final int OFF_SLID = 42;
  public static final int OFF_SL = 44;
  public static final int OFF_DLID_PATH_BITS = 45;
}

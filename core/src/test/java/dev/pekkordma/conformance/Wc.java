package dev.pekkordma.conformance;

import dev.pekkordma.verbs.abi.CompletionLayout;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;

/**
 * One work completion copied out of a {@link WorkCompletions} batch. The status or opcode is
 * null when the provider wrote a code the API does not know (the raw codes are kept); the opcode
 * of an error completion is not defined by verbs, so tests don't look at it.
 */
public record Wc(long wrId, int statusCode, WcStatus status, int opcodeCode, WcOpcode opcode,
    int byteLen, int imm, int flags, int qpNum, int srcQp, int invalidatedRkey) {

  static Wc read(WorkCompletions wcs, int i) {
    int statusCode = wcs.statusCode(i);
    WcStatus status;
    try {
      status = WcStatus.of(statusCode);
    } catch (IllegalArgumentException e) {
      status = null;
    }
    int opcodeCode = dev.pekkordma.memory.NativeMemory.getInt(
        wcs.address() + (long) i * CompletionLayout.WC_SIZE + CompletionLayout.OFF_OPCODE);
    WcOpcode opcode;
    try {
      opcode = WcOpcode.of(opcodeCode);
    } catch (IllegalArgumentException e) {
      opcode = null;
    }
    return new Wc(wcs.wrId(i), statusCode, status, opcodeCode, opcode, wcs.byteLength(i),
        wcs.immediate(i), wcs.flags(i), wcs.qpNum(i), wcs.sourceQp(i), wcs.invalidatedRkey(i));
  }

  public boolean ok() {
    return statusCode == 0;
  }

  public boolean hasImm() {
    return (flags & WorkCompletions.FLAG_WITH_IMM) != 0;
  }

  public boolean hasGrh() {
    return (flags & WorkCompletions.FLAG_GRH) != 0;
  }

  public boolean hasInv() {
    return (flags & WorkCompletions.FLAG_WITH_INV) != 0;
  }

  @Override
  public String toString() {
    return "wc{wr_id=" + wrId + ", status=" + (status != null ? status : "?" + statusCode)
        + ", opcode=" + (opcode != null ? opcode : "?" + opcodeCode) + ", byte_len=" + byteLen
        + ", qp=" + qpNum + (hasImm() ? ", imm=0x" + Integer.toHexString(imm) : "")
        + (srcQp != 0 ? ", src_qp=" + srcQp : "") + ", flags=0x" + Integer.toHexString(flags)
        + "}";
  }
}

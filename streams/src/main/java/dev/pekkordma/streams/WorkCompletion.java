package dev.pekkordma.streams;

import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;

/**
 * One work completion, copied out of the poller's reusable batch for a completion source.
 * {@code opcode} is null where verbs leave it undefined (error completions).
 */
public record WorkCompletion(long wrId, WcStatus status, WcOpcode opcode, int byteLength,
    boolean hasImmediate, int immediate, int qpNum, int sourceQp, int flags) {

  public boolean ok() {
    return status == WcStatus.SUCCESS;
  }

  /** Entry {@code i} of a polled batch. */
  public static WorkCompletion of(WorkCompletions wcs, int i) {
    WcStatus status = wcs.status(i);
    WcOpcode opcode = null;
    if (status == WcStatus.SUCCESS) {
      try {
        opcode = wcs.opcode(i);
      } catch (IllegalArgumentException e) {
        opcode = null;
      }
    }
    boolean imm = wcs.hasImmediate(i);
    return new WorkCompletion(wcs.wrId(i), status, opcode, wcs.byteLength(i), imm,
        imm ? wcs.immediate(i) : 0, wcs.qpNum(i), wcs.sourceQp(i), wcs.flags(i));
  }
}

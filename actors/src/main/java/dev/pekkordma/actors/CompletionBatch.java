package dev.pekkordma.actors;

import dev.pekkordma.verbs.WorkCompletions;

/** Completions copied out of a poller's reused WorkCompletions, for one owner. */
final class CompletionBatch {
  final int size;
  final long[] wrIds;
  final int[] status;
  final int[] opcodes;
  final int[] byteLengths;
  final int[] immediates;
  final boolean[] withImmediate;

  private CompletionBatch(int n) {
    size = n;
    wrIds = new long[n];
    status = new int[n];
    opcodes = new int[n];
    byteLengths = new int[n];
    immediates = new int[n];
    withImmediate = new boolean[n];
  }

  static CompletionBatch copyOf(WorkCompletions wcs, int n) {
    CompletionBatch b = new CompletionBatch(n);
    for (int i = 0; i < n; i++) {
      b.wrIds[i] = wcs.wrId(i);
      b.status[i] = wcs.statusCode(i);
      b.opcodes[i] = opcode(wcs, i);
      b.byteLengths[i] = wcs.byteLength(i);
      b.withImmediate[i] = wcs.hasImmediate(i);
      b.immediates[i] = b.withImmediate[i] ? wcs.immediate(i) : 0;
    }
    return b;
  }

  /** The opcode's code, or -1: verbs define it only for successful completions. */
  private static int opcode(WorkCompletions wcs, int i) {
    try {
      return wcs.opcode(i).code;
    } catch (IllegalArgumentException e) {
      return -1;
    }
  }
}

package dev.pekkordma.actors.datagram;

import dev.pekkordma.runtime.CompletionHandler;
import dev.pekkordma.verbs.WorkCompletions;
import java.util.function.Consumer;

/** Completions copied out of the hub's reused array, with what a datagram's needs. */
final class UdBatch {
  final int size;
  final long[] wrIds;
  final int[] status;
  final int[] byteLengths;
  final int[] flags;
  final int[] sourceQps;

  private UdBatch(int n) {
    size = n;
    wrIds = new long[n];
    status = new int[n];
    byteLengths = new int[n];
    flags = new int[n];
    sourceQps = new int[n];
  }

  static UdBatch copyOf(WorkCompletions wcs, int n) {
    UdBatch b = new UdBatch(n);
    for (int i = 0; i < n; i++) {
      b.wrIds[i] = wcs.wrId(i);
      b.status[i] = wcs.statusCode(i);
      b.byteLengths[i] = wcs.byteLength(i);
      b.flags[i] = wcs.flags(i);
      b.sourceQps[i] = wcs.sourceQp(i);
    }
    return b;
  }

  /** A CQ handler that hands each batch, or the CQ's failure, to an actor. */
  static CompletionHandler to(Consumer<UdBatch> batches, Consumer<String> failed) {
    return new CompletionHandler() {
      @Override
      public void completions(WorkCompletions wcs, int n) {
        batches.accept(copyOf(wcs, n));
      }

      @Override
      public void failed(RuntimeException cause) {
        failed.accept(String.valueOf(cause.getMessage()));
      }
    };
  }
}

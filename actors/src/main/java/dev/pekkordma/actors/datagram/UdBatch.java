package dev.pekkordma.actors.datagram;

import dev.pekkordma.runtime.internal.CompletionHandler;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.verbs.WcStatus;
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

  /**
   * Sorts the batch: each send's completion to {@code sends}, each good receive's datagram to
   * {@code deliver}. Returns why the endpoint must start again (a send or receive that completed
   * with an error; the last such), or null.
   */
  String sortInto(SendPath sends, ReceivePath receives, Consumer<ReceivedDatagram> deliver) {
    String failed = null;
    for (int i = 0; i < size; i++) {
      long wrId = wrIds[i];
      if (wrId >= UdResources.SEND_TAG) {
        if (!sends.completed((int) (wrId - UdResources.SEND_TAG), status[i])) {
          failed = "a send completed with " + WcStatus.of(status[i]);
        }
      } else if (status[i] != 0) {
        failed = "a receive completed with " + WcStatus.of(status[i]);
      } else {
        ReceivedDatagram r = receives.take((int) wrId, byteLengths[i], flags[i], sourceQps[i]);
        if (r != null) deliver.accept(r);
      }
    }
    return failed;
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

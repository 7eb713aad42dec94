package dev.pekkordma.actors.datagram;

import dev.pekkordma.runtime.internal.CompletionHandler;
import dev.pekkordma.runtime.internal.datagram.UdEndpoint;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.WorkCompletions;
import java.util.function.BiFunction;
import java.util.function.Consumer;
import org.apache.pekko.util.ByteString;

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
   * Sorts the batch by {@code core}'s rules: each send's completion to {@code sends}, each good
   * receive's datagram, from the sender {@code peers} names, to {@code deliver}. Returns why the
   * endpoint must start again (a send or receive that completed with an error; the last such),
   * or null.
   */
  String sortInto(UdEndpoint core, SendPath sends, BiFunction<Gid, Integer, Peer> peers,
      Consumer<ReceivedDatagram> deliver) {
    UdEndpoint.Completions to = new UdEndpoint.Completions() {
      @Override
      public void sent(int slot, int status) {
        sends.completed(slot, status);
      }

      @Override
      public void received(int slot, int byteLength, int flags, int sourceQp) {
        ByteString data = core.take(slot, byteLength, flags);
        if (data != null) {
          deliver.accept(new ReceivedDatagram(peers.apply(core.senderGid(), sourceQp), data));
        }
      }
    };
    String failed = null;
    for (int i = 0; i < size; i++) {
      String why = core.sort(wrIds[i], status[i], byteLengths[i], flags[i], sourceQps[i], to);
      if (why != null) failed = why;
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

package dev.pekkordma.soft;

import dev.pekkordma.verbs.PortCounters;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The soft device's port counters, counted where rxe counts its hw_counters: a packet is one
 * fabric message (a request, a datagram or a response), whatever its size. LongAdders, because
 * the engine, the fabric's readers and the timers count at once and none may wait on a lock.
 */
final class PortTally {
  final LongAdder packetsSent = new LongAdder();
  final LongAdder packetsReceived = new LongAdder();
  final LongAdder rnrNaksReceived = new LongAdder();
  final LongAdder rnrNaksSent = new LongAdder();
  final LongAdder retries = new LongAdder();
  final LongAdder retriesExceeded = new LongAdder();
  final LongAdder rnrRetriesExceeded = new LongAdder();

  /** Now's values, also under rxe's hw_counters names, so both providers read alike. */
  PortCounters snapshot() {
    long sent = packetsSent.sum();
    long received = packetsReceived.sum();
    long rnrIn = rnrNaksReceived.sum();
    long rnrOut = rnrNaksSent.sum();
    long retried = retries.sum();
    long retryExceeded = retriesExceeded.sum();
    long rnrExceeded = rnrRetriesExceeded.sum();
    return new PortCounters(sent, received, rnrIn, rnrOut, retried, retryExceeded, rnrExceeded,
        Map.of("sent_pkts", sent, "rcvd_pkts", received, "rcvd_rnr_err", rnrIn,
            "send_rnr_err", rnrOut, "completer_retry_err", retried,
            "retry_exceeded_err", retryExceeded, "retry_rnr_exceeded_err", rnrExceeded));
  }
}

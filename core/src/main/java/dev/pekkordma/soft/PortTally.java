package dev.pekkordma.soft;

import dev.pekkordma.verbs.PortCounters;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * The soft device's port counters, counted where rxe counts its hw_counters: a packet is one
 * fabric message (a request, a datagram or a response), whatever its size. LongAdders, because
 * the engine, the fabric's readers and the timers count at once and none may wait on a lock.
 * Besides rxe's counters, two of requests the fabric refused: for no such QP, and for a QP not
 * connected to the sending process.
 */
final class PortTally {
  final LongAdder packetsSent = new LongAdder();
  final LongAdder packetsReceived = new LongAdder();
  final LongAdder rnrNaksReceived = new LongAdder();
  final LongAdder rnrNaksSent = new LongAdder();
  final LongAdder retries = new LongAdder();
  final LongAdder retriesExceeded = new LongAdder();
  final LongAdder rnrRetriesExceeded = new LongAdder();
  /** Requests repeating a PSN answered already (rxe's duplicate_request). */
  final LongAdder duplicateRequests = new LongAdder();
  /** Requests ahead of the expected PSN, dropped (rxe's out_of_seq_request). */
  final LongAdder outOfSequenceRequests = new LongAdder();
  /** Requests from another process for a QP number no QP of the device has. */
  final LongAdder unknownQpnRequests = new LongAdder();
  /** Requests from another process for a QP that is not connected to that process. */
  final LongAdder refusedRequests = new LongAdder();

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
        Map.ofEntries(Map.entry("sent_pkts", sent), Map.entry("rcvd_pkts", received),
            Map.entry("rcvd_rnr_err", rnrIn), Map.entry("send_rnr_err", rnrOut),
            Map.entry("completer_retry_err", retried),
            Map.entry("retry_exceeded_err", retryExceeded),
            Map.entry("retry_rnr_exceeded_err", rnrExceeded),
            Map.entry("duplicate_request", duplicateRequests.sum()),
            Map.entry("out_of_seq_request", outOfSequenceRequests.sum()),
            Map.entry("unknown_qpn_request", unknownQpnRequests.sum()),
            Map.entry("refused_request", refusedRequests.sum())));
  }
}

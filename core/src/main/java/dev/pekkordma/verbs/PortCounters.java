package dev.pekkordma.verbs;

import java.util.Map;

/**
 * A port's traffic and error counters since the device came up (on Linux, the port's {@code
 * hw_counters} and {@code counters} in sysfs, as {@code rdma statistic} shows them), for every
 * QP on the port, ours or not. A counter the device does not keep is {@link #NOT_COUNTED}.
 *
 * @param packetsSent packets the port sent
 * @param packetsReceived packets the port received
 * @param rnrNaksReceived RNR NAKs our requests met (the peer had no receive posted): each one
 *     is a wait of the peer's min_rnr_timer and a resend
 * @param rnrNaksSent RNR NAKs the port sent (a request found no receive posted here)
 * @param retries transport retries: requests sent again after an ACK timeout or a sequence error
 * @param retriesExceeded requests that spent their retries (RETRY_EXC_ERR completions)
 * @param rnrRetriesExceeded requests that spent their RNR retries (RNR_RETRY_EXC_ERR)
 * @param all every counter the device keeps, by its own name
 */
public record PortCounters(long packetsSent, long packetsReceived, long rnrNaksReceived,
    long rnrNaksSent, long retries, long retriesExceeded, long rnrRetriesExceeded,
    Map<String, Long> all) {

  /** What a counter the device does not keep reads. */
  public static final long NOT_COUNTED = -1;

  public PortCounters {
    all = Map.copyOf(all);
  }
}

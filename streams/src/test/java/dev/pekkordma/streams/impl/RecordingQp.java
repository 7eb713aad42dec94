package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;

/** A QP that records what is posted to it (the first request of each batch), or refuses. */
final class RecordingQp extends PostOnlyQp {
  record Posted(WrOpcode opcode, boolean signaled, boolean inline) {}

  final List<Posted> sends = new ArrayList<>();
  RuntimeException refuse;

  @Override
  public void postSend(SendRequests requests) {
    if (refuse != null) throw refuse;
    int flags = requests.flags(0);
    sends.add(new Posted(requests.opcode(0), (flags & SendRequests.SIGNALED) != 0,
        (flags & SendRequests.INLINE) != 0));
  }
}

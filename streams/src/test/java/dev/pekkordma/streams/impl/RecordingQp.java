package dev.pekkordma.streams.impl;

import dev.pekkordma.verbs.MemoryRegion;
import dev.pekkordma.verbs.MemoryWindow;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpCapabilities;
import dev.pekkordma.verbs.QpState;
import dev.pekkordma.verbs.QpType;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RecvRequests;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;
import java.util.ArrayList;
import java.util.List;

/** A QP that records what is posted to it (the first request of each batch), or refuses. */
final class RecordingQp implements QueuePair {
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

  @Override
  public void postRecv(RecvRequests requests) {}

  @Override
  public ProtectionDomain pd() {
    throw new UnsupportedOperationException();
  }

  @Override
  public int qpNum() {
    return 7;
  }

  @Override
  public QpType type() {
    return QpType.RC;
  }

  @Override
  public QpState state() {
    return QpState.RTS;
  }

  @Override
  public QpCapabilities capabilities() {
    return new QpCapabilities(64, 64, 1, 1, 0);
  }

  @Override
  public QpAttributes query() {
    throw new UnsupportedOperationException();
  }

  @Override
  public void modify(QpAttributes attributes) {}

  @Override
  public int bindMemoryWindow(MemoryWindow mw, long wrId, int flags, MemoryRegion mr,
      long address, long length, int access) {
    throw new UnsupportedOperationException();
  }

  @Override
  public void close() {}
}

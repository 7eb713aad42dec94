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

/**
 * A QP the tests post to and nothing more: an RC QP in RTS whose other verbs are refused. Each
 * test's QP says what posting does.
 */
abstract class PostOnlyQp implements QueuePair {
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

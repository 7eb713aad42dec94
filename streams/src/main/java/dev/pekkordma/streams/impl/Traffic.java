package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Bytes and messages one way on one connection: counted by the stage's thread alone, read from
 * any (metrics). Opaque writes cost what plain ones do, and a reader sees each count whole and
 * soon, without a fence on the data path.
 */
@InternalApi
public final class Traffic {
  private static final VarHandle BYTES;
  private static final VarHandle MESSAGES;

  static {
    try {
      MethodHandles.Lookup l = MethodHandles.lookup();
      BYTES = l.findVarHandle(Traffic.class, "bytes", long.class);
      MESSAGES = l.findVarHandle(Traffic.class, "messages", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private long bytes;
  private long messages;

  void addBytes(long n) {
    BYTES.setOpaque(this, bytes + n);
  }

  void addMessages(long n) {
    MESSAGES.setOpaque(this, messages + n);
  }

  public long bytes() {
    return (long) BYTES.getOpaque(this);
  }

  public long messages() {
    return (long) MESSAGES.getOpaque(this);
  }
}

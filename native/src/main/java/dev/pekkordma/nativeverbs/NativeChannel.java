package dev.pekkordma.nativeverbs;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.spi.OpenChildren;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A completion channel: {@code struct ibv_comp_channel *}. Waiting blocks in poll(2) on its fd,
 * then reads the event with ibv_get_cq_event, which then does not block.
 */
final class NativeChannel extends NativeResource implements CompletionChannel {
  final NativeDeviceContext context;
  final int fd;
  final Set<NativeCq> users = ConcurrentHashMap.newKeySet();

  NativeChannel(NativeDeviceContext context, long channel) {
    super(channel, context);
    this.context = context;
    this.fd = NativeMemory.getInt(channel + Layout.COMP_CHANNEL_FD);
  }

  @Override int rank() { return 30; }
  @Override public String describe() { return "completion channel fd " + fd; }
  @Override String destroyVerb() { return "ibv_destroy_comp_channel"; }
  @Override void destroy() { Verbs.destroyCompChannel(handle); }
  @Override void forget() {}

  @Override
  void checkNotInUse() {
    users.removeIf(NativeResource::isClosed);
    if (!users.isEmpty()) {
      throw new RdmaException("ibv_destroy_comp_channel", RdmaException.EBUSY,
          describe() + " is still used by " + OpenChildren.names(users));
    }
  }

  @Override
  public CompletionQueue awaitEvent(Duration timeout) {
    checkOpen("ibv_get_cq_event");
    long deadline = timeout == null ? 0 : System.nanoTime() + Math.max(0, timeout.toNanos());
    while (true) {
      Duration left = timeout == null ? null
          : Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
      if (!Verbs.awaitReadable(fd, left)) return null;
      synchronized (this) {
        if (isClosed()) return null;
        if (Verbs.awaitReadable(fd, Duration.ZERO)) {
          long cqPtr = Verbs.getCqEvent(handle);
          NativeCq cq = context.cqsByHandle.get(cqPtr);
          if (cq == null) {
            Verbs.ackCqEvents(cqPtr, 1);
            throw new RdmaException("ibv_get_cq_event", RdmaException.EIO,
                "an event for an unknown CQ 0x" + Long.toHexString(cqPtr));
          }
          cq.unacked.incrementAndGet();
          return cq;
        }
      }
      if (timeout != null && System.nanoTime() - deadline >= 0) return null;
    }
  }

  @Override
  public void ackEvents(CompletionQueue cq, int count) {
    if (!(cq instanceof NativeCq) || ((NativeCq) cq).channel != this) {
      throw new RdmaException("ibv_ack_cq_events", RdmaException.EINVAL,
          "the CQ does not use this completion channel");
    }
    NativeCq c = (NativeCq) cq;
    if (count < 0) {
      throw new RdmaException("ibv_ack_cq_events", RdmaException.EINVAL, "count " + count + " < 0");
    }
    if (count == 0) return;
    while (true) {
      int un = c.unacked.get();
      if (count > un) {
        // acknowledging more than were read would make ibv_destroy_cq wait for ever
        throw new RdmaException("ibv_ack_cq_events", RdmaException.EINVAL,
            "acknowledging " + count + " events but only " + un + " were read and not acknowledged");
      }
      if (c.unacked.compareAndSet(un, un - count)) break;
    }
    Verbs.ackCqEvents(c.handle, count);
  }

  @Override
  public String toString() {
    return describe();
  }
}

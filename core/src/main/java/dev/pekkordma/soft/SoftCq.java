package dev.pekkordma.soft;

import dev.pekkordma.verbs.abi.CompletionLayout;
import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.AsyncEvent;
import dev.pekkordma.verbs.AsyncEventType;
import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.WcOpcode;
import dev.pekkordma.verbs.WcStatus;
import dev.pekkordma.verbs.WorkCompletions;
import java.util.concurrent.atomic.AtomicInteger;

/** A completion queue: a ring of ibv_wc entries, polled by copying whole entries out. */
final class SoftCq extends Closeable implements CompletionQueue {
  private static final int ARMED_NONE = 0;
  private static final int ARMED_ALL = 1;
  private static final int ARMED_SOLICITED = 2;

  final SoftContext context;
  final SoftCompletionChannel channel;
  final int number;
  final AtomicInteger unackedEvents = new AtomicInteger();
  final AtomicInteger users = new AtomicInteger(); // QPs and SRQs using it
  private OffHeapBuffer ring;
  private int capacity;
  private long head;
  private long tail;
  private int armed;
  private boolean overrun;

  SoftCq(SoftContext context, int cqe, SoftCompletionChannel channel, int number) {
    this.context = context;
    this.channel = channel;
    this.number = number;
    this.capacity = cqe;
    this.ring = OffHeapBuffer.allocate((long) cqe * CompletionLayout.WC_SIZE);
  }

  @Override
  public String describe() {
    return "CQ " + number + " (" + capacity + " entries)";
  }

  @Override public DeviceContext context() { return context; }
  @Override public synchronized int capacity() { return capacity; }
  @Override public CompletionChannel channel() { return channel; }

  /** Adds a completion; on overrun the CQ goes into error and CQ_ERR is raised. */
  synchronized void push(long wrId, WcStatus status, WcOpcode opcode, int byteLen, int immBigEndian,
      int qpNum, int srcQp, int flags, boolean solicited) {
    if (overrun || isClosed()) return;
    if (tail - head == capacity) {
      overrun = true;
      context.raise(AsyncEvent.ofCq(AsyncEventType.CQ_ERR, this));
      return;
    }
    long wc = ring.address() + (tail % capacity) * CompletionLayout.WC_SIZE;
    NativeMemory.putLong(wc + CompletionLayout.OFF_WR_ID, wrId);
    NativeMemory.putInt(wc + CompletionLayout.OFF_STATUS, status.code);
    NativeMemory.putInt(wc + CompletionLayout.OFF_OPCODE, opcode.code);
    NativeMemory.putInt(wc + CompletionLayout.OFF_VENDOR_ERR, 0);
    NativeMemory.putInt(wc + CompletionLayout.OFF_BYTE_LEN, byteLen);
    NativeMemory.putInt(wc + CompletionLayout.OFF_IMM_DATA, immBigEndian);
    NativeMemory.putInt(wc + CompletionLayout.OFF_QP_NUM, qpNum);
    NativeMemory.putInt(wc + CompletionLayout.OFF_SRC_QP, srcQp);
    NativeMemory.putInt(wc + CompletionLayout.OFF_WC_FLAGS, flags);
    NativeMemory.putLong(wc + CompletionLayout.OFF_PKEY_INDEX, 0L);
    tail++;
    if (armed == ARMED_ALL
        || (armed == ARMED_SOLICITED && (solicited || status != WcStatus.SUCCESS))) {
      armed = ARMED_NONE;
      if (channel != null) DeferredWork.raise(this); // after the caller's locks
    }
  }

  @Override
  public synchronized int poll(WorkCompletions completions) {
    checkOpen("ibv_poll_cq");
    if (overrun) {
      throw new RdmaException("ibv_poll_cq", RdmaException.EIO, describe()
          + " overran: more completions arrived than it holds; it is in error (CQ_ERR was raised)");
    }
    int n = (int) Math.min(completions.capacity(), tail - head);
    for (int i = 0; i < n; i++) {
      long wc = ring.address() + ((head + i) % capacity) * CompletionLayout.WC_SIZE;
      NativeMemory.copy(wc, completions.address() + (long) i * CompletionLayout.WC_SIZE,
          CompletionLayout.WC_SIZE);
    }
    head += n;
    return n;
  }

  @Override
  public synchronized void requestNotify(boolean solicitedOnly) {
    checkOpen("ibv_req_notify_cq");
    if (channel == null) {
      throw new RdmaException("ibv_req_notify_cq", RdmaException.EINVAL,
          describe() + " was created without a completion channel");
    }
    if (armed != ARMED_ALL) armed = solicitedOnly ? ARMED_SOLICITED : ARMED_ALL;
  }

  @Override
  public synchronized void resize(int cqe) {
    checkOpen("ibv_resize_cq");
    int max = context.device.settings.maxCqe;
    if (cqe < 1 || cqe > max) {
      throw new RdmaException("ibv_resize_cq", RdmaException.EINVAL,
          describe() + ": " + cqe + " entries is outside [1, " + max + "] (max_cqe)");
    }
    int used = (int) (tail - head);
    if (cqe < used) {
      throw new RdmaException("ibv_resize_cq", RdmaException.EINVAL,
          describe() + " holds " + used + " completions, more than " + cqe);
    }
    OffHeapBuffer bigger = OffHeapBuffer.allocate((long) cqe * CompletionLayout.WC_SIZE);
    for (int i = 0; i < used; i++) {
      NativeMemory.copy(ring.address() + ((head + i) % capacity) * CompletionLayout.WC_SIZE,
          bigger.address() + (long) i * CompletionLayout.WC_SIZE, CompletionLayout.WC_SIZE);
    }
    ring.close();
    ring = bigger;
    capacity = cqe;
    head = 0;
    tail = used;
  }

  @Override
  public void close() {
    if (!markClosed()) return;
    if (users.get() > 0) {
      reopen();
      throw new RdmaException("ibv_destroy_cq", RdmaException.EBUSY,
          describe() + " is still used by " + users.get() + " QPs/SRQs");
    }
    if (unackedEvents.get() > 0) {
      reopen();
      throw new RdmaException("ibv_destroy_cq", RdmaException.EBUSY, describe() + " has "
          + unackedEvents.get() + " unacknowledged channel events: ackEvents them first");
    }
    synchronized (this) {
      ring.close();
    }
    if (channel != null) {
      channel.discard(this);
      channel.cqs.decrementAndGet();
    }
    context.forget(this);
    context.device.provider.counters.cqs.decrementAndGet();
  }
}

package dev.pekkordma.streams.impl;

import dev.pekkordma.memory.NativeMemory;

/**
 * Small ByteStrings gathered in one registered send buffer, to go as one BATCH write ({@link
 * Wire}): each its length, then its bytes. A batch of one goes as the plain write it would have
 * been.
 */
final class Batch {
  private int buffer = -1; // the send buffer, or -1: no batch
  private long address;
  private int bytes;
  private int count;
  private int capacity;
  private int firstLength;

  boolean open() {
    return buffer >= 0;
  }

  /** Starts one in {@code buffer} at {@code address}, of at most {@code capacity} bytes. */
  void start(int buffer, long address, int capacity) {
    this.buffer = buffer;
    this.address = address;
    this.capacity = capacity;
    bytes = 0;
    count = 0;
  }

  /** Whether a ByteString of {@code length} bytes fits too. */
  boolean fits(int length) {
    return bytes + Wire.BATCH_HEADER + length <= capacity;
  }

  /** The bytes it holds and one of {@code length} more, with its length: what it is short of. */
  int needs(int length) {
    return bytes + Wire.BATCH_HEADER + length;
  }

  /** Appends {@code length} bytes of {@code from}; {@link #fits} said they do. */
  void add(byte[] from, int length) {
    long at = address + bytes;
    Wire.putBatchLength(at, length);
    if (length > 0) NativeMemory.copyFromArray(from, 0, at + Wire.BATCH_HEADER, length);
    if (count == 0) firstLength = length;
    bytes += Wire.BATCH_HEADER + length;
    count++;
  }

  int bytes() {
    return bytes;
  }

  /**
   * Posts it into the peer's next slot with {@code credits}, signalled, and closes it: the buffer
   * goes back with the write's completion, which also says the next batch may go.
   */
  void post(Sender sender, int lkey, int credits) {
    int b = buffer;
    buffer = -1;
    if (count == 1) {
      sender.write(address + Wire.BATCH_HEADER, firstLength, lkey, Wire.data(Wire.END, credits),
          b, Sender.WriteSource.SEND_BUFFER, Sender.Signaling.ALWAYS);
    } else {
      sender.write(address, bytes, lkey, Wire.data(Wire.BATCH, credits), b,
          Sender.WriteSource.SEND_BUFFER, Sender.Signaling.ALWAYS);
    }
  }

  int buffer() {
    return buffer;
  }

  /** Closes it unsent: its send buffer, to give back. */
  int abandon() {
    int b = buffer;
    buffer = -1;
    return b;
  }
}

package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.SendRequests;
import java.util.function.IntSupplier;
import org.apache.pekko.util.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** Coalescing, against a QP that only records: when gathered small elements go. */
class ElementWriterTest {
  static final IntSupplier NO_CREDITS = () -> 0;
  final RecordingQp qp = new RecordingQp();
  final SendRequests wr = new SendRequests(1, 1);
  final OffHeapBuffer scratch = OffHeapBuffer.allocate(64);
  final OffHeapBuffer memory = OffHeapBuffer.allocate(8 * 4096L);
  final SendBuffers buffers = new SendBuffers(
      new SendBuffers.Area(new Registered(memory, new FakeMr(memory), null), 8, 4096));
  final Sender sender = new Sender(qp, wr, 64, 8, buffers);
  final ElementWriter writer = new ElementWriter(sender, 64, scratch, 4096, buffers,
      true);

  ElementWriterTest() {
    sender.peerRing(new Wire.Ring(0x10000, 42, 16, 4096, Wire.TAKES_BATCHES));
  }

  @AfterEach
  void free() {
    wr.close();
    scratch.close();
    memory.close();
  }

  private void send(int bytes) {
    writer.take(ByteString.fromArray(new byte[bytes]));
    assertTrue(writer.writeSome(NO_CREDITS), "a small element is written or gathered at once");
  }

  /** The stage's turn after an element: the burst it began ends once the events ready are run. */
  private void burstEnds() {
    if (writer.burstBegan()) writer.burstOver();
    writer.flushIfDue(NO_CREDITS, false);
  }

  @Test
  void smallElementsGatherWhileTheBatchBeforeThemIsInFlight() {
    send(10);
    assertEquals(1, qp.sends.size(), "with the peer caught up, the first goes at once");
    send(10);
    send(10);
    assertEquals(1, qp.sends.size(), "the rest of its burst gathers");
    burstEnds();
    assertEquals(2, qp.sends.size(), "the burst over, its batch goes");
    assertTrue(qp.sends.get(1).signaled(), "a batch asks for its completion");
    long batch = sender.lastWrId();

    send(10);
    burstEnds();
    send(10);
    burstEnds();
    send(10);
    burstEnds();
    assertEquals(2, qp.sends.size(), "while the batch is in flight, what follows gathers");
    assertTrue(writer.busy());

    sender.completed(batch);
    burstEnds();
    assertEquals(3, qp.sends.size(), "its completion lets the next batch go: one write for three");
    assertFalse(writer.busy());
    assertEquals(6, writer.sent.messages());
    assertEquals(3, sender.writes(), "six messages in three writes");
  }

  @Test
  void aFullBatchGoesWithoutWaiting() {
    send(10);
    send(10);
    burstEnds();
    assertEquals(2, qp.sends.size());
    int before = qp.sends.size();
    // a batch is at most a 4 KiB slot: about 4096 / (header + 500) elements of 500 bytes fit
    for (int i = 0; i < 10; i++) send(500);
    assertTrue(qp.sends.size() > before, "a batch that filled up went, the one before in flight");
  }
}

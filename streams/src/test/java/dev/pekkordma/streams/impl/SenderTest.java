package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.memory.OffHeapBuffer;
import dev.pekkordma.verbs.SendRequests;
import dev.pekkordma.verbs.WrOpcode;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The sending bookkeeping against a QP that only records: credits, buffers, the send queue. */
class SenderTest {
  final RecordingQp qp = new RecordingQp();
  final SendRequests wr = new SendRequests(1, 1);
  final java.util.List<OffHeapBuffer> memories = new java.util.ArrayList<>();

  @AfterEach
  void free() {
    wr.close();
    memories.forEach(OffHeapBuffer::close);
  }

  private Sender sender(int sqDepth, int signalEvery, int buffers, int peerSlots) {
    OffHeapBuffer memory = OffHeapBuffer.allocate(buffers * 16L);
    memories.add(memory);
    Sender s = new Sender(qp, wr, sqDepth, signalEvery,
        new SendBuffers(new SendBuffers.Area(new Registered(memory, null, null), buffers, 16)));
    s.peerRing(new Wire.Ring(0x10000, 42, peerSlots, 4096));
    return s;
  }

  @Test
  void writesStopWhenThePeersSlotsAreUsedUpAndGoOnWhenCredited() {
    Sender s = sender(64, 8, 8, 3);
    for (int i = 0; i < 3; i++) {
      assertTrue(s.mayWrite());
      s.write(0, 10, 0, 0, -1, Sender.WriteSource.INLINE);
    }
    assertFalse(s.mayWrite(), "no credit left");
    assertEquals(0, s.credits());
    assertEquals(3, s.writes());
    s.credited(2);
    assertTrue(s.mayWrite());
    assertTrue(qp.sends.stream().allMatch(p -> p.opcode() == WrOpcode.RDMA_WRITE_WITH_IMM));
  }

  @Test
  void dataLeavesTheLastSendQueueEntriesToControlMessages() {
    Sender s = sender(4, 100, 8, 100);
    s.write(0, 1, 0, 0, -1, Sender.WriteSource.INLINE);
    s.write(0, 1, 0, 0, -1, Sender.WriteSource.INLINE);
    assertFalse(s.mayWrite(), Sender.CONTROL_RESERVE + " entries are kept for control");
    assertTrue(s.mayControl());
    s.control(0);
    s.control(0);
    assertFalse(s.mayControl(), "the send queue is full");
    assertEquals(WrOpcode.SEND_WITH_IMM, qp.sends.get(3).opcode());
    assertTrue(qp.sends.get(3).signaled(), "control messages are always signalled");
  }

  @Test
  void everyNthSendIsSignalledAndItsCompletionRetiresTheOnesBeforeIt() {
    Sender s = sender(64, 4, 8, 100);
    for (int i = 0; i < 8; i++) s.write(0, 1, 0, 0, -1, Sender.WriteSource.INLINE);
    long signalled = qp.sends.stream().filter(RecordingQp.Posted::signaled).count();
    assertEquals(2, signalled);
    assertTrue(qp.sends.get(3).signaled());
    assertEquals(8, s.outstanding());
    s.completed(3); // wr ids count from 0: the fourth send's completion
    assertEquals(4, s.outstanding());
    s.completed(7);
    assertEquals(0, s.outstanding());
  }

  @Test
  void sendBuffersComeBackWithTheCompletionOfTheWriteThatReadThem() {
    Sender s = sender(64, 100, 2, 100);
    int a = s.takeBuffer();
    int b = s.takeBuffer();
    assertEquals(-1, s.takeBuffer(), "both are taken");
    s.write(0, 100, 1, 0, a, Sender.WriteSource.SEND_BUFFER);
    s.write(0, 100, 1, 0, b, Sender.WriteSource.SEND_BUFFER);
    assertTrue(qp.sends.get(1).signaled(), "the last free buffer's write asks for a completion");
    s.completed(1);
    assertTrue(s.takeBuffer() >= 0);
    assertTrue(s.takeBuffer() >= 0);
  }

  @Test
  void aRefusedPostGivesTheBufferBackAndCountsNothing() {
    Sender s = sender(64, 1, 1, 100);
    qp.refuse = new IllegalStateException("ENOMEM");
    int buffer = s.takeBuffer();
    Sender.PostFailed e = assertThrows(Sender.PostFailed.class,
        () -> s.write(0, 100, 1, 0, buffer, Sender.WriteSource.SEND_BUFFER));
    assertTrue(e.getMessage().contains("RDMA_WRITE_WITH_IMM") && e.getMessage().contains("ENOMEM"),
        e.getMessage());
    assertEquals(buffer, s.takeBuffer(), "the buffer is free again");
    assertEquals(0, s.writes());
    assertEquals(0, s.outstanding());
    assertEquals(100, s.credits());
  }
}

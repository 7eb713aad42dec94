package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Tcp's rules for the four ends, on the state machine alone ({@link ProtocolSim}), and the
 * cases its property found.
 */
class ConnectionProtocolTest {
  /** The server reads everything the client sends, a step at a time. */
  private static void serverReads(ProtocolSim sim) {
    for (int i = 0; i < 1000 && sim.server.downstreamOpen; i++) {
      if (!sim.server.demandDue) sim.server.demand();
      sim.settle();
    }
  }

  private static int sizes(List<?> l) {
    return l.size();
  }

  @Test
  void bothHalfClosedDirectionsEndIndependently() {
    try (ProtocolSim sim = new ProtocolSim(true, true, true)) {
      sim.client.offer(10);
      sim.client.completeUpstream();
      sim.server.demand();
      sim.settle();
      sim.server.demand();
      sim.settle();
      assertTrue(sim.server.downstreamCompleted, "the client's end reached the server");
      assertTrue(sim.client.downstreamOpen, "the client still reads");
      sim.server.offer(20);
      sim.client.demand();
      sim.settle();
      sim.server.completeUpstream();
      sim.client.demand();
      sim.settle();
      assertTrue(sim.client.downstreamCompleted);
      assertEquals(1, sizes(sim.client.pushed));
      assertNotNull(sim.client.ended);
      assertNotNull(sim.server.ended);
      assertNull(sim.client.writeFailure);
      assertNull(sim.server.writeFailure);
      assertEquals(List.of(), sim.violations);
    }
  }

  @Test
  void withoutHalfCloseTheEndOfWritingCompletesReading() {
    try (ProtocolSim sim = new ProtocolSim(true, false, true)) {
      sim.server.completeUpstream();
      assertTrue(sim.server.downstreamCompleted, "Tcp's close: the server reads no more");
      sim.client.demand();
      sim.settle();
      assertTrue(sim.client.downstreamCompleted, "the client reads the server's end");
      sim.client.offer(5); // the server stopped reading: this one cannot reach it
      sim.settle();
      assertNotNull(sim.client.upstreamCancelCause);
      assertTrue(sim.client.upstreamCancelCause.getMessage().contains("the peer stopped reading"),
          sim.client.upstreamCancelCause.getMessage());
      assertNotNull(sim.client.ended, "the client's write failed, its reading ended: it ended");
      assertEquals(List.of(), sim.violations);
    }
  }

  @Test
  void withoutHalfCloseTheEndOfReadingCancelsWriting() {
    try (ProtocolSim sim = new ProtocolSim(true, false, true)) {
      sim.server.cancelDownstream();
      assertTrue(sim.server.upstreamOpen, "what its upstream pushed meanwhile goes first");
      sim.server.burstOver();
      assertTrue(sim.server.upstreamCancelled);
      assertNull(sim.server.upstreamCancelCause, "a plain cancel, as Tcp's close");
      sim.client.demand();
      sim.settle();
      assertTrue(sim.client.downstreamCompleted);
      assertTrue(sim.server.ended != null && sim.server.closed);
      assertEquals(List.of(), sim.violations);
    }
  }

  @Test
  void aReadersCancelFailsOnlyTheWritersWritingSide() {
    try (ProtocolSim sim = new ProtocolSim(true, true, true)) {
      sim.client.cancelDownstream();
      sim.settle();
      sim.server.offer(30);
      sim.settle();
      assertTrue(sim.server.upstreamCancelCause.getMessage().contains("the peer stopped reading"),
          String.valueOf(sim.server.upstreamCancelCause));
      assertTrue(sim.server.downstreamOpen, "the server still reads");
      sim.client.offer(7);
      sim.client.completeUpstream();
      sim.server.demand();
      sim.settle();
      sim.server.demand();
      sim.settle();
      assertEquals(1, sizes(sim.server.pushed));
      assertTrue(sim.server.downstreamCompleted);
      assertNotNull(sim.server.ended);
      assertNotNull(sim.server.writeFailure);
      assertNotNull(sim.client.ended);
      assertNull(sim.client.writeFailure);
      assertEquals(List.of(), sim.violations);
    }
  }

  /**
   * A reader that cancels with the peer's RING not yet taken (no demand since its last
   * element): the RING carries nothing for the application, and the writer lost nothing.
   */
  @Test
  void aRingNotYetTakenWhenTheReaderCancelsIsNoLoss() {
    try (ProtocolSim sim = new ProtocolSim(true, true, true)) {
      // enough from the client for the server's ring to grow: the server's RING goes to the
      // client, which does not read
      for (int i = 0; i < 12; i++) {
        sim.client.offer(9000);
        serverReadsOnce(sim);
      }
      assertTrue(sim.server.protocol.receiver().taken() > 0);
      sim.client.cancelDownstream();
      sim.settle();
      assertNull(sim.server.writeFailure, "the server wrote only its RING");
      assertEquals(1, sim.server.protocol.sender().writes(), "its RING");
      assertTrue(sim.server.upstreamOpen, () -> "nothing of the server's was lost, but "
          + sim.server.upstreamCancelCause);
      assertEquals(List.of(), sim.violations);
    }
  }

  private static void serverReadsOnce(ProtocolSim sim) {
    for (int i = 0; i < 20; i++) {
      if (!sim.server.demandDue && sim.server.downstreamOpen) sim.server.demand();
      sim.settle();
    }
  }
}

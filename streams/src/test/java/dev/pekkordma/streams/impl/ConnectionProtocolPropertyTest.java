package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.statistics.Statistics;
import org.apache.pekko.util.ByteString;

/**
 * The protocol's state machine alone ({@link ProtocolSim}: two machines, a simulated fabric, no
 * stage, no provider), over random sequences of every event either side may see: its
 * application's elements, ends, demand, cancels and aborts, its timers, and the fabric's
 * messages, completions and disconnects in any interleaving RC allows. After each step: credits
 * never below zero nor above the peer's ring, no write outside a live ring or into a slot not
 * yet taken, no send from memory outside a registration, no push without demand, no pull twice.
 * Then both applications end what they had not, and from whatever state the sequence left:
 * both machines reach their end, every element either side took from its upstream reached the
 * other's application in order, or its loss was reported on the side that took it, and a loss
 * is reported only when one happened. Without aborts no connection fails as a whole.
 */
class ConnectionProtocolPropertyTest {
  /** One step of a sequence: which of the steps possible then, and an element's size. */
  record Choice(int pick, int size) {}

  @Provide
  Arbitrary<List<Choice>> sequences() {
    Arbitrary<Integer> size = Arbitraries.frequencyOf(
        net.jqwik.api.Tuple.of(6, Arbitraries.integers().between(0, 200)),
        net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(200, 9000)),
        net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(9000, 40_000)));
    return Combinators.combine(Arbitraries.integers().between(0, 1 << 20), size)
        .as(Choice::new).list().ofMinSize(1).ofMaxSize(400);
  }

  @Property(tries = 400)
  void everyEventSequenceKeepsTheInvariantsAndCloses(@ForAll boolean clientHalfClose,
      @ForAll boolean serverHalfClose, @ForAll boolean coalesce, @ForAll boolean aborts,
      @ForAll boolean bulky, @ForAll("sequences") List<Choice> sequence) {
    run(clientHalfClose, serverHalfClose, coalesce, aborts, bulky, sequence);
    Statistics.label("a ring replaced").coverage(c -> c.check(true).percentage(p -> p > 2));
    Statistics.label("a write failed loudly").coverage(c -> c.check(true).percentage(p -> p > 5));
    Statistics.label("both ended gracefully")
        .coverage(c -> c.check(true).percentage(p -> p > 10));
  }

  /**
   * A sequence the property once failed on: the server's RING (a ring grown for the client's
   * bulk) was still on its way when the client, having taken every element, cancelled; the
   * server counted it as a write not taken and failed its writing, with nothing lost.
   */
  @Example
  void aRingOnItsWayWhenThePeerCancelsIsNoLoss() {
    run(true, true, true, false, true, List.of(CHOICES));
  }

  private void run(boolean clientHalfClose, boolean serverHalfClose, boolean coalesce,
      boolean aborts, boolean bulky, List<Choice> sequence) {
    try (ProtocolSim sim = new ProtocolSim(clientHalfClose, serverHalfClose, coalesce)) {
      List<String> taken = new ArrayList<>();
      for (Choice c : sequence) {
        // bulky: enough bytes to grow the rings (and shrink them on the timer's ticks)
        // a step in ten may end a side: sequences run long enough to fill, grow and wrap rings
        List<ProtocolSim.Step> steps = sim.steps(bulky ? c.size() * 8 : c.size(),
            c.pick() % 10 == 0, aborts);
        if (steps.isEmpty()) break;
        ProtocolSim.Step step = steps.get(c.pick() % steps.size());
        taken.add(step.name());
        step.run().run();
        sim.check();
        assertEquals(List.of(), sim.violations, () -> "after " + taken);
      }
      boolean idle = sim.finish(200_000);
      assertEquals(List.of(), sim.violations, () -> "while ending, after " + taken);
      assertTrue(idle, () -> "still busy after " + taken);
      // what the sequences reach, kept from shrinking away unseen
      Statistics.label("a ring replaced").collect(
          sim.client.ringsOpened + sim.server.ringsOpened > 0);
      Statistics.label("a write failed loudly").collect(
          sim.client.writeFailure != null || sim.server.writeFailure != null);
      Statistics.label("both ended gracefully").collect(sim.client.failure == null
          && sim.server.failure == null && sim.client.writeFailure == null
          && sim.server.writeFailure == null);
      for (ProtocolSim.End e : List.of(sim.client, sim.server)) {
        assertTrue(e.stopped() && e.closed, () -> e.name + " did not end: " + e.protocol
            + " after " + taken);
        if (!sim.client.aborted && !sim.server.aborted) {
          assertEquals(null, e.failure, () -> e.name + " failed, with no abort, after " + taken);
        }
        checkDelivery(e, taken);
      }
    }
  }

  /**
   * Every field a peer sends is checked before it is used: one message of the run a lie (a bit
   * of its immediate flipped, another length, a byte of its data flipped, a SEND for a WRITE),
   * and whatever the machine that hears it does (fail, or carry on), nothing escapes it as an
   * exception, and it breaks no rule of the fabric's or the stage's: it reads and writes only
   * its own live registrations, and its credits stay within the ring. (What a liar says of its
   * own ring and credits may have its own memory overwritten or its receives run out.)
   */
  @Property(tries = 400)
  void aLieInAnyMessageIsCheckedBeforeItIsUsed(@ForAll boolean clientHalfClose,
      @ForAll boolean serverHalfClose, @ForAll boolean bulky,
      @ForAll @IntRange(min = 0, max = 60) int at, @ForAll @IntRange(min = 0, max = 3) int kind,
      @ForAll int value, @ForAll("sequences") List<Choice> sequence) {
    try (ProtocolSim sim = new ProtocolSim(clientHalfClose, serverHalfClose, true)) {
      sim.lie(new ProtocolSim.Lie(at, kind, value));
      List<String> taken = new ArrayList<>();
      for (Choice c : sequence) {
        List<ProtocolSim.Step> steps = sim.steps(bulky ? c.size() * 8 : c.size(),
            c.pick() % 10 == 0, false);
        if (steps.isEmpty()) break;
        ProtocolSim.Step step = steps.get(c.pick() % steps.size());
        taken.add(step.name());
        step.run().run();
        sim.check();
      }
      sim.finish(20_000);
      // what a liar said of its ring and its credits may cost it its own memory, no more
      String liar = sim.liar;
      List<String> broken = sim.violations.stream().filter(v -> liar == null
          || !(v.contains("rings of " + liar) || v.contains("slot of " + liar)
              || v.contains("to " + liar + " with no receive"))).toList();
      assertEquals(List.of(), broken, () -> "after " + taken);
    }
  }

  /** What {@code e} took reached the peer's application in order, or its loss was reported. */
  private static void checkDelivery(ProtocolSim.End e, List<String> taken) {
    List<ByteString> got = e.peer.pushed;
    assertTrue(got.size() <= e.offered.size()
        && got.equals(e.offered.subList(0, got.size())), () -> e.peer.name + " got "
        + sizes(got) + " of " + e.name + "'s " + sizes(e.offered) + " after " + taken);
    boolean lost = got.size() < e.offered.size();
    if (lost) {
      assertTrue(e.writeFailure != null || e.failure != null, () -> e.name + " lost "
          + sizes(e.offered.subList(got.size(), e.offered.size())) + " and said nothing, after "
          + taken);
    } else if (!e.peer.aborted) { // a peer that aborts acknowledges nothing: a loss is likely
      assertEquals(null, e.writeFailure, () -> e.name + " lost nothing of " + sizes(e.offered)
          + " and said it did, after " + taken);
    }
  }

  private static final Choice[] CHOICES = {
      new Choice(1, 0), new Choice(0, 4097), new Choice(0, 0), new Choice(1, 1025),
      new Choice(1, 0), new Choice(1, 0), new Choice(1, 0), new Choice(1, 0), new Choice(3, 0),
      new Choice(2, 0), new Choice(2, 0), new Choice(3, 0), new Choice(3, 0), new Choice(1, 0),
      new Choice(3, 0), new Choice(1, 0), new Choice(1, 0), new Choice(8, 0), new Choice(8, 1033),
      new Choice(1, 0), new Choice(1, 0), new Choice(1, 0), new Choice(1, 0), new Choice(1, 0),
      new Choice(1, 0), new Choice(0, 0), new Choice(0, 0), new Choice(0, 0), new Choice(1, 0),
      new Choice(2, 0), new Choice(2, 0), new Choice(1, 0), new Choice(1, 0), new Choice(3, 0),
      new Choice(1, 0), new Choice(1, 0), new Choice(2, 0), new Choice(1670, 0), new Choice(1, 0),
      new Choice(1, 0), new Choice(1, 0), new Choice(2, 0), new Choice(0, 0), new Choice(1, 0),
      new Choice(1, 0), new Choice(1, 0), new Choice(1, 0), new Choice(2, 0), new Choice(0, 0)};

  private static List<Integer> sizes(List<ByteString> elements) {
    return elements.stream().map(ByteString::size).toList();
  }
}

package dev.pekkordma.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.streams.LifecycleScript.Action;
import dev.pekkordma.streams.LifecycleScript.Shape;
import dev.pekkordma.streams.LifecycleScript.Side;
import dev.pekkordma.streams.LifecycleScript.Step;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;
import org.apache.pekko.actor.typed.ActorSystem;

/**
 * RdmaStreams against Pekko's Tcp itself: random connection lives ({@link LifecycleScript}:
 * writes of random sizes and counts on both sides, each side's upstream completed or failed,
 * its reading cancelled or failed, at random points and in random orders; half-close on or off
 * on either side; the server a scripted application or a handler shape Tcp users write: echo,
 * never reading, writing and completing, Sink.cancelled, Source.maybe; an idle timeout on some),
 * each run on Tcp and on RDMA (software provider); per side, what its application read, how its
 * writing and reading sides ended, and the client's connection must agree, or differ only as
 * the documented differences say ({@link TcpDifferences}). Steps are timed (each
 * once what the applications see has settled), so a difference is run again twice before it
 * counts: what the transports do differently shows every time, a machine too busy to settle in
 * time does not.
 */
class TcpDifferentialPropertyTest {
  static ActorSystem<Void> system;
  static TcpLike tcp;
  static TcpLike rdma;

  @BeforeContainer
  static void start() throws Exception {
    system = StreamsTestKit.system("TcpDifferentialPropertyTest", "");
    tcp = TcpLike.tcp(system);
    rdma = TcpLike.rdma(system);
    LifecycleScript.warmUp(tcp, system);
    LifecycleScript.warmUp(rdma, system);
  }

  @AfterContainer
  static void stop() {
    system.terminate();
  }

  @Provide
  Arbitrary<LifecycleScript> scripts() {
    Arbitrary<Integer> size = Arbitraries.frequencyOf(
        Tuple.of(6, Arbitraries.integers().between(1, 300)),
        Tuple.of(3, Arbitraries.integers().between(300, 6000)),
        Tuple.of(1, Arbitraries.integers().between(6000, 40_000)));
    Arbitrary<Action> action = Arbitraries.frequencyOf(
        Tuple.of(10, Arbitraries.just(Action.WRITE)),
        Tuple.of(3, Arbitraries.just(Action.COMPLETE)),
        Tuple.of(3, Arbitraries.just(Action.CANCEL)),
        Tuple.of(1, Arbitraries.just(Action.FAIL)),
        Tuple.of(1, Arbitraries.just(Action.FAIL_READING)));
    Arbitrary<Step> step = Combinators.combine(Arbitraries.of(Side.class), action, size)
        .as(Step::new);
    return Combinators.combine(Arbitraries.of(true, false), Arbitraries.of(true, false),
        Arbitraries.of(Shape.class), Arbitraries.integers().between(0, 7).map(i -> i == 0),
        step.list().ofMaxSize(8))
        .as(LifecycleScript::new)
        // what a reader that never asks is sent stays within what both transports buffer
        .filter(LifecycleScript::withinBuffers);
  }

  @Property(tries = 200, shrinking = ShrinkingMode.BOUNDED)
  void rdmaEndsAConnectionAsTcpDoes(@ForAll("scripts") LifecycleScript script) throws Exception {
    TcpDifferences.Result r = script.compare(tcp, rdma, system);
    assertEquals(List.of(), r.unexplained());
    // how the runs agreed: to the letter, or by which rows of the table
    Statistics.label("agreed").collect(r.rows().isEmpty() ? "exactly" : r.rows().toString());
    Statistics.label("agreed exactly").collect(r.rows().isEmpty());
    Statistics.label("agreed exactly")
        .coverage(c -> c.check(true).percentage(p -> p > 50));
  }
}

package dev.pekkordma.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.pekkordma.streams.LifecycleScript.Action;
import dev.pekkordma.streams.LifecycleScript.Shape;
import dev.pekkordma.streams.LifecycleScript.Side;
import dev.pekkordma.streams.LifecycleScript.Step;
import java.util.List;
import org.apache.pekko.actor.typed.ActorSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The differential property's shrunk counterexamples ({@link TcpDifferentialPropertyTest}),
 * each a plain case: the script, run on Tcp and on RDMA, agrees but for the documented
 * differences.
 */
class TcpDifferentialCasesTest {
  static ActorSystem<Void> system;

  @BeforeAll
  static void start() throws Exception {
    system = StreamsTestKit.system("TcpDifferentialCasesTest", "");
    LifecycleScript.warmUp(TcpLike.tcp(system), system);
    LifecycleScript.warmUp(TcpLike.rdma(system), system);
  }

  @AfterAll
  static void stop() {
    system.terminate();
  }

  static void agrees(LifecycleScript script) throws Exception {
    assertEquals(List.of(), script.compare(TcpLike.tcp(system), TcpLike.rdma(system), system)
        .unexplained());
  }

  private static Step client(Action a, int size) {
    return new Step(Side.CLIENT, a, size);
  }

  private static Step server(Action a, int size) {
    return new Step(Side.SERVER, a, size);
  }

  /** The idle timeout fails the writing side of a client whose reading the server completed. */
  @Test
  void theIdleTimeoutFailsAHalfClosedClientsWriting() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.WRITE_THEN_COMPLETE, true,
        List.of(client(Action.WRITE, 1), client(Action.WRITE, 6002))));
  }

  /** The idle timeout fails the writing side of a server whose reading the client completed. */
  @Test
  void theIdleTimeoutFailsAHalfClosedServersWriting() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.SCRIPTED, true,
        List.of(client(Action.COMPLETE, 0), server(Action.WRITE, 1))));
  }

  /** A server that never reads still hears the client's end: a completion needs no demand. */
  @Test
  void aServerThatNeverReadsHearsTheClientsEnd() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.NEVER_READ, true,
        List.of(client(Action.COMPLETE, 0))));
  }

  /**
   * Both sides stopped reading, then the client aborts: the server hears an abort, not an end
   * (a connection's end always says so with a FIN, even to a peer that stopped reading).
   */
  @Test
  void anAbortAfterBothStoppedReadingIsAnAbort() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.SCRIPTED, false,
        List.of(server(Action.CANCEL, 0), client(Action.CANCEL, 0), client(Action.FAIL, 0))));
  }

  /**
   * A server without half-close that never reads closes, with the client's byte unread: Tcp's
   * reading side stays open (until the idle timeout fails it), RDMA's completes.
   */
  @Test
  void aCloseWithDataUnreadCompletesTheReadingSide() throws Exception {
    agrees(new LifecycleScript(true, false, Shape.NEVER_READ, true,
        List.of(client(Action.WRITE, 1), server(Action.COMPLETE, 0))));
  }

  /**
   * An echo server whose client stopped reading: Tcp's echoes vanish; RDMA's fail the echo's
   * upstream, and the echo carries that failure to its reading side, an abort the client sees.
   */
  @Test
  void anEchoToAClientThatStoppedReadingAborts() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.ECHO, false,
        List.of(client(Action.CANCEL, 0), client(Action.WRITE, 1))));
  }

  /**
   * A server whose write failed (its client stopped reading) then fails its upstream: Tcp's
   * connection resets, RDMA's had cancelled that upstream already.
   */
  @Test
  void aFailureOfAnUpstreamRdmaCancelledAbortsNothing() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.SCRIPTED, false,
        List.of(client(Action.CANCEL, 0), server(Action.WRITE, 1), server(Action.FAIL, 0))));
  }

  /** A client's abort after its end of data: RDMA's server hears it at once, Tcp's later. */
  @Test
  void anAbortAfterTheEndOfDataIsHeardAtOnce() throws Exception {
    agrees(new LifecycleScript(true, true, Shape.SCRIPTED, false,
        List.of(client(Action.COMPLETE, 0), server(Action.WRITE, 1),
            client(Action.FAIL_READING, 0))));
  }

  /**
   * A client without half-close whose write the server never takes, then ends its writing:
   * Tcp's close fails the server's later writes (a broken pipe); RDMA's client no longer hears
   * its application's end (its writing failed already) and reads on what the server writes.
   */
  @Test
  void aWriterWhoseWriteFailedReadsOnWhatThePeerWrites() throws Exception {
    agrees(new LifecycleScript(false, true, Shape.SINK_CANCELLED, false,
        List.of(client(Action.WRITE, 1), client(Action.COMPLETE, 0), server(Action.WRITE, 2),
            server(Action.WRITE, 40000), server(Action.WRITE, 305))));
  }
}

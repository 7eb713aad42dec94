package dev.pekkordma.streams;

import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.FlowShape;
import org.apache.pekko.stream.Inlet;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SubscriptionWithCancelException;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.stage.AbstractInHandler;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.GraphStage;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.util.ByteString;
import org.apache.pekko.util.ByteStringBuilder;

/**
 * A pass-through that records how the stream ended where it stands, and the bytes that passed:
 * before a connection's inlet it sees our writing side end (our upstream completed or failed it,
 * or the connection cancelled it, with a cause or without), after its outlet our reading side
 * (the connection completed or failed it, or our application cancelled it).
 */
final class EndProbe extends GraphStage<FlowShape<ByteString, ByteString>> {
  /** How one end ended, first come. */
  enum How { OPEN, COMPLETED, FAILED, CANCELLED, CANCELLED_WITH_FAILURE }

  /** What the probe saw: read from any thread. */
  static final class Seen {
    private How how = How.OPEN;
    private Throwable cause;
    private final ByteStringBuilder bytes = new ByteStringBuilder();

    synchronized How how() {
      return how;
    }

    synchronized Throwable cause() {
      return cause;
    }

    synchronized ByteString bytes() {
      return bytes.result();
    }

    private synchronized void ended(How h, Throwable why) {
      if (how != How.OPEN) return;
      how = h;
      cause = why;
    }

    private synchronized void passed(ByteString b) {
      bytes.append(b);
    }

    @Override
    public synchronized String toString() {
      return how + (cause == null ? "" : " (" + cause.getMessage() + ")");
    }
  }

  final Seen seen = new Seen();
  private final Inlet<ByteString> in = Inlet.create("EndProbe.in");
  private final Outlet<ByteString> out = Outlet.create("EndProbe.out");
  private final FlowShape<ByteString, ByteString> shape = FlowShape.of(in, out);

  /** A probe as a flow; its {@link #seen} says what it saw. */
  static EndProbe create() {
    return new EndProbe();
  }

  Flow<ByteString, ByteString, NotUsed> flow() {
    return Flow.fromGraph(this);
  }

  @Override
  public FlowShape<ByteString, ByteString> shape() {
    return shape;
  }

  @Override
  public GraphStageLogic createLogic(Attributes attributes) {
    return new GraphStageLogic(shape) {
      {
        setHandler(in, new AbstractInHandler() {
          @Override
          public void onPush() {
            ByteString b = grab(in);
            seen.passed(b);
            push(out, b);
          }

          @Override
          public void onUpstreamFinish() {
            seen.ended(How.COMPLETED, null);
            completeStage();
          }

          @Override
          public void onUpstreamFailure(Throwable ex) {
            seen.ended(How.FAILED, ex);
            failStage(ex);
          }
        });
        setHandler(out, new AbstractOutHandler() {
          @Override
          public void onPull() {
            pull(in);
          }

          @Override
          public void onDownstreamFinish(Throwable cause) {
            if (System.getProperty("probe.debug") != null) new Throwable("PROBE cancel " + cause).printStackTrace(System.out);
            seen.ended(cause instanceof SubscriptionWithCancelException.NonFailureCancellation
                ? How.CANCELLED : How.CANCELLED_WITH_FAILURE, cause);
            cancelStage(cause);
          }
        });
      }
    };
  }
}

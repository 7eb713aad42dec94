package dev.pekkordma.streams.impl;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.streams.RdmaStreamException;
import dev.pekkordma.streams.RdmaStreamSettings;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SourceShape;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.javadsl.Tcp.IncomingConnection;
import org.apache.pekko.stream.javadsl.Tcp.ServerBinding;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.GraphStageWithMaterializedValue;
import org.apache.pekko.util.ByteString;
import scala.Tuple2;

/**
 * A listener as a source of incoming connections, as Tcp's bind: a CM id bound and listening.
 * Each CONNECT_REQUEST is accepted as it comes, as a kernel accepts a TCP connection (up to the
 * backlog waiting for downstream; more are rejected): the client's connection is up then. Each
 * becomes an {@link IncomingConnection} when downstream asks for one; materializing its flow
 * takes the connection over, and one nobody materializes within the accept timeout is closed.
 * Cancelling, or the binding's unbind, stops listening.
 */
@InternalApi
public final class BindStage
    extends GraphStageWithMaterializedValue<SourceShape<IncomingConnection>,
        CompletionStage<ServerBinding>> {

  private final Outlet<IncomingConnection> out = Outlet.create("RdmaBind.out");
  private final SourceShape<IncomingConnection> shape = SourceShape.of(out);
  private final StreamsRuntime rt;
  private final InetSocketAddress address;
  private final RdmaStreamSettings settings;
  private final Closing closing;
  private final Framing framing;
  private final AtomicInteger unclaimed = new AtomicInteger();

  public BindStage(StreamsRuntime rt, InetSocketAddress address, RdmaStreamSettings settings,
      Closing closing, Framing framing) {
    this.rt = rt;
    this.address = address;
    this.settings = settings;
    this.closing = closing;
    this.framing = framing;
  }

  /** Connections accepted that no flow has taken and no timeout has closed yet. */
  public int offersHeld() {
    return unclaimed.get();
  }

  @Override
  public SourceShape<IncomingConnection> shape() {
    return shape;
  }

  @Override
  public Attributes initialAttributes() {
    return Attributes.name("RdmaBind");
  }

  @Override
  public Tuple2<GraphStageLogic, CompletionStage<ServerBinding>> createLogicAndMaterializedValue(
      Attributes attrs) {
    CompletableFuture<ServerBinding> binding = new CompletableFuture<>();
    return new Tuple2<>(new Logic(binding), binding);
  }

  private final class Logic extends GraphStageLogic {
    private final CompletableFuture<ServerBinding> binding;
    private final CompletableFuture<Done> unbound = new CompletableFuture<>();
    private final ArrayDeque<EarlyAccept> waiting = new ArrayDeque<>();
    private final ConnectionPlan plan = ConnectionPlan.of(rt, settings, framing, false);
    private CmId listener;
    private InetSocketAddress bound;
    private AsyncCallback<Done> unbind;

    Logic(CompletableFuture<ServerBinding> binding) {
      super(shape);
      this.binding = binding;
      setHandler(out, new AbstractOutHandler() {
        @Override
        public void onPull() {
          emitWaiting();
        }

        @Override
        public void onDownstreamFinish(Throwable cause) {
          completeStage();
        }
      });
    }

    @Override
    public void preStart() {
      AsyncCallback<CmEvent> events = createAsyncCallback(this::onCmEvent);
      AsyncCallback<RuntimeException> stopped = createAsyncCallback(why -> failStage(
          new RdmaStreamException("listening on", bound != null ? bound : address,
              "the CM event reader stopped: " + why.getMessage(), why)));
      unbind = createAsyncCallback(d -> completeStage());
      try {
        listener = rt.createId("listener " + address, events, stopped);
        listener.bind(address);
        listener.listen(settings.backlog());
        bound = listener.localAddress();
      } catch (RuntimeException e) {
        RuntimeException ex = RdmaStreamException.bindFailure(
            new RdmaStreamException("binding to", address, e.getMessage(), e), e);
        binding.completeExceptionally(ex);
        failStage(ex);
        return;
      }
      binding.complete(TcpHandles.binding(bound, () -> {
        unbind.invoke(Done.getInstance());
        return unbound;
      }, unbound));
    }

    private void onCmEvent(CmEvent e) {
      if (e.type() == CmEventType.CONNECT_REQUEST) {
        if (waiting.size() >= settings.backlog()) {
          rt.cm().destroy(e.id(), true);
          return;
        }
        waiting.add(EarlyAccept.accept(rt, e, plan, unclaimed));
        emitWaiting();
      } else if (e.type() == CmEventType.DEVICE_REMOVAL && e.id() == listener) {
        failStage(new RdmaStreamException("listening on", bound, "the RDMA device was removed"));
      }
    }

    private void emitWaiting() {
      while (isAvailable(out) && !waiting.isEmpty()) {
        push(out, incoming(waiting.poll()));
      }
    }

    private IncomingConnection incoming(EarlyAccept accepted) {
      // the offer outlives this stage (a take(1) downstream stops listening at once): its
      // timeout is the system's
      rt.system.scheduler().scheduleOnce(settings.acceptTimeout(), accepted::abandon,
          rt.system.executionContext());
      InetSocketAddress remote = accepted.remote;
      ConnectionStage.Passive passive = new ConnectionStage.Passive(accepted, bound, remote,
          settings.path() + ".accept-timeout");
      Flow<ByteString, ByteString, NotUsed> once = ConnectionStage.<ByteString>flow(
          ConnectionStage.incoming(rt, passive, settings, closing, framing))
          .mapMaterializedValue(m -> NotUsed.getInstance());
      return TcpHandles.incoming(bound, remote, once);
    }

    @Override
    public void postStop() {
      for (EarlyAccept e : waiting) e.abandon();
      waiting.clear(); // those handed out are taken by their flows, or closed by their timeouts
      if (listener != null) rt.cm().destroy(listener, false);
      unbound.complete(Done.getInstance());
      binding.completeExceptionally(new RdmaStreamException("binding to", address,
          "the stream stopped before it was bound"));
    }
  }
}

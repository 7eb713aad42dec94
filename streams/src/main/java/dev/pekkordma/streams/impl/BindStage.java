package dev.pekkordma.streams.impl;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.streams.IncomingConnection;
import dev.pekkordma.streams.RdmaStreamException;
import dev.pekkordma.streams.RdmaStreamSettings;
import dev.pekkordma.streams.ServerBinding;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.pekko.Done;
import org.apache.pekko.NotUsed;
import org.apache.pekko.stream.Attributes;
import org.apache.pekko.stream.Outlet;
import org.apache.pekko.stream.SourceShape;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.stream.stage.AbstractOutHandler;
import org.apache.pekko.stream.stage.AsyncCallback;
import org.apache.pekko.stream.stage.GraphStageLogic;
import org.apache.pekko.stream.stage.GraphStageWithMaterializedValue;
import org.apache.pekko.util.ByteString;
import scala.Tuple2;

/**
 * A listener as a source of incoming connections, as Tcp's bind: a CM id bound and listening;
 * each CONNECT_REQUEST becomes an {@link IncomingConnection} when downstream asks for one (up to
 * the backlog wait, more are rejected). Materializing the connection's flow accepts it; one
 * nobody materializes within the accept timeout is rejected. Cancelling, or the binding's
 * unbind, stops listening.
 */
public final class BindStage
    extends GraphStageWithMaterializedValue<SourceShape<IncomingConnection>,
        CompletionStage<ServerBinding>> {

  private final Outlet<IncomingConnection> out = Outlet.create("RdmaBind.out");
  private final SourceShape<IncomingConnection> shape = SourceShape.of(out);
  private final StreamsRuntime rt;
  private final InetSocketAddress address;
  private final RdmaStreamSettings settings;
  private final boolean halfClose;
  private final boolean keepBoundaries;
  private volatile int offersHeld;

  public BindStage(StreamsRuntime rt, InetSocketAddress address, RdmaStreamSettings settings,
      boolean halfClose, boolean keepBoundaries) {
    this.rt = rt;
    this.address = address;
    this.settings = settings;
    this.halfClose = halfClose;
    this.keepBoundaries = keepBoundaries;
  }

  /** Requests handed downstream that are still remembered (for tests). */
  public int offersHeld() {
    return offersHeld;
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

  /** A request handed downstream: whoever claims it first, the flow or the timeout, owns it. */
  private static final class Offer {
    final CmId id;
    final AtomicBoolean claimed = new AtomicBoolean();

    Offer(CmId id) {
      this.id = id;
    }
  }

  private final class Logic extends GraphStageLogic {
    private final CompletableFuture<ServerBinding> binding;
    private final CompletableFuture<Done> unbound = new CompletableFuture<>();
    private final ArrayDeque<CmEvent> waiting = new ArrayDeque<>();
    private final Map<CmId, Offer> offered = new HashMap<>();
    private CmId listener;
    private InetSocketAddress bound;
    private AsyncCallback<Done> unbind;
    private long offers;

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
        listener = rt.cm().createId("listener " + address, events::invoke, stopped::invoke);
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
      binding.complete(Handles.get().binding(bound, () -> {
        unbind.invoke(Done.getInstance());
        return unbound;
      }, unbound));
    }

    private void onCmEvent(CmEvent e) {
      if (e.type() == CmEventType.CONNECT_REQUEST) {
        // an offer claimed (its flow took it, or its timeout rejected it) is not ours any more:
        // kept, every connection ever made would stay in the map
        offered.values().removeIf(o -> o.claimed.get());
        offersHeld = offered.size();
        if (waiting.size() >= settings.backlog()) {
          rt.cm().destroy(e.id(), true);
          return;
        }
        waiting.add(e);
        emitWaiting();
      } else if (e.type() == CmEventType.DEVICE_REMOVAL && e.id() == listener) {
        failStage(new RdmaStreamException("listening on", bound, "the RDMA device was removed"));
      } else {
        // a request that went away before anyone took it
        Offer o = offered.remove(e.id());
        if (o != null && o.claimed.compareAndSet(false, true)) rt.cm().destroy(o.id, false);
        waiting.removeIf(w -> w.id() == e.id());
      }
    }

    private void emitWaiting() {
      while (isAvailable(out) && !waiting.isEmpty()) {
        CmEvent e = waiting.poll();
        push(out, incoming(e));
      }
    }

    private IncomingConnection incoming(CmEvent e) {
      Offer offer = new Offer(e.id());
      offered.put(e.id(), offer);
      // the offer outlives this stage (a take(1) downstream stops listening at once): its
      // timeout is the system's
      rt.system.scheduler().scheduleOnce(settings.acceptTimeout(), () -> {
        if (offer.claimed.compareAndSet(false, true)) rt.cm().destroy(offer.id, true);
      }, rt.system.executionContext());
      InetSocketAddress remote = e.id().remoteAddress();
      ConnectionStage.Passive passive = new ConnectionStage.Passive(e.id(), e.privateData(),
          bound, remote, offer.claimed, settings.path() + ".accept-timeout");
      Flow<ByteString, ByteString, NotUsed> once = ConnectionStage.<ByteString>flow(
          ConnectionStage.incoming(rt, passive, settings, halfClose, keepBoundaries))
          .mapMaterializedValue(m -> NotUsed.getInstance());
      offers++;
      offersHeld = offered.size();
      return Handles.get().incoming(bound, remote, once);
    }

    @Override
    public void postStop() {
      for (CmEvent e : waiting) rt.cm().destroy(e.id(), true);
      waiting.clear();
      offered.clear(); // handed out: each is accepted, or rejected after its timeout
      if (listener != null) rt.cm().destroy(listener, false);
      unbound.complete(Done.getInstance());
      binding.completeExceptionally(new RdmaStreamException("binding to", address,
          "the stream stopped before it was bound"));
    }
  }
}

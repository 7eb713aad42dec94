package dev.pekkordma.samples;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmEventType;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.ConnectionParameters;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * Connections through the RDMA connection manager, as librdmacm programs make them: the server
 * binds, listens and accepts CONNECT_REQUESTs; the client resolves address and route and
 * connects. The hello rides in the connect's private data, the ring in the accept's.
 */
final class CmBulkLink {
  private static final Duration RESOLVE_TIMEOUT = Duration.ofSeconds(2);
  private static final Duration EVENT_TIMEOUT = Duration.ofSeconds(10);

  private CmBulkLink() {}

  static BulkLink.Listener listen(RdmaProvider provider, InetSocketAddress bind, PrintStream log,
      boolean verbose) {
    return new CmBulkListener(provider, bind, log, verbose);
  }

  static BulkLink.Dialer connector(RdmaProvider provider) {
    return server -> {
      CmEventChannel channel = provider.createCmEventChannel();
      CmId id = null;
      try {
        id = channel.createId("bulk-client");
        id.resolveAddress(null, server, RESOLVE_TIMEOUT);
        CmEvents.expect(channel, CmEventType.ADDR_RESOLVED, EVENT_TIMEOUT, "resolving " + server);
        id.resolveRoute(RESOLVE_TIMEOUT);
        CmEvents.expect(channel, CmEventType.ROUTE_RESOLVED, EVENT_TIMEOUT,
            "resolving the route to " + server);
        return new CmOutgoing(channel, id, server);
      } catch (RuntimeException e) {
        try {
          if (id != null) id.close();
          channel.close();
        } catch (RuntimeException suppressed) {
          e.addSuppressed(suppressed);
        }
        throw e;
      }
    };
  }

  private static final class CmBulkListener implements BulkLink.Listener {
    private final CmEventChannel channel;
    private final CmId listenId;
    private final PrintStream log;
    private final boolean verbose;

    CmBulkListener(
        RdmaProvider provider, InetSocketAddress bind, PrintStream log, boolean verbose) {
      this.log = log;
      this.verbose = verbose;
      this.channel = provider.createCmEventChannel();
      CmId id = null;
      try {
        id = channel.createId("bulk-server");
        id.bind(bind);
        id.listen(4);
      } catch (RuntimeException e) {
        if (id != null) id.close();
        channel.close();
        throw e;
      }
      this.listenId = id;
    }

    @Override
    public InetSocketAddress localAddress() {
      return listenId.localAddress();
    }

    @Override
    public BulkLink.Incoming next(Duration timeout, BooleanSupplier stop) {
      while (true) {
        CmEvent ev = CmEvents.next(channel, timeout, stop);
        if (ev == null) return null;
        if (ev.type() == CmEventType.CONNECT_REQUEST) {
          CmIncoming in = new CmIncoming(channel, ev.id());
          try {
            in.hello = BulkWire.TransferPlan.decode(ev.privateData());
          } catch (BulkWire.ProtocolException e) {
            in.reject(e.getMessage());
            throw new TransferFailure("rejected a client: " + e.getMessage());
          }
          return in;
        }
        if (verbose) log.println("server: ignoring " + ev + " while waiting for a client");
      }
    }

    @Override
    public void close() {
      try {
        listenId.close();
      } finally {
        channel.close();
      }
    }
  }

  /** What both sides of a CM connection share. */
  private abstract static class CmSide implements BulkLink.Connection {
    final CmEventChannel channel;
    final CmId id;
    private boolean hasQp;
    boolean connected;

    CmSide(CmEventChannel channel, CmId id) {
      this.channel = channel;
      this.id = id;
    }

    @Override
    public DeviceContext context() {
      return id.verbs();
    }

    @Override
    public int port() {
      return id.portNum();
    }

    @Override
    public QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes) {
      QueuePair qp = id.createQp(pd, attributes);
      hasQp = true;
      return qp;
    }

    @Override
    public void destroyQp() {
      if (hasQp) {
        hasQp = false;
        id.destroyQp();
      }
    }

    @Override
    public String peer() {
      InetSocketAddress a = id.remoteAddress();
      return a == null ? "?" : BulkTransfer.format(a);
    }

    @Override
    public void disconnect() {
      if (!connected) return;
      connected = false;
      id.disconnect();
      // our own DISCONNECTED: waited for so that the id closes cleanly
      CmEvents.next(channel, Duration.ofSeconds(2), () -> false);
    }

    @Override
    public boolean awaitPeerDisconnect(Duration timeout) {
      if (!connected) return true;
      CmEvent ev = CmEvents.next(channel, timeout, () -> false);
      if (ev != null && ev.type() == CmEventType.DISCONNECTED) {
        connected = false;
        return true;
      }
      return false;
    }

    @Override
    public void close() {
      try {
        if (connected) disconnect();
      } finally {
        try {
          destroyQp();
        } finally {
          closeRest();
        }
      }
    }

    abstract void closeRest();
  }

  private static final class CmIncoming extends CmSide implements BulkLink.Incoming {
    BulkWire.TransferPlan hello;

    CmIncoming(CmEventChannel listenerChannel, CmId id) {
      super(listenerChannel, id);
    }

    @Override
    public BulkWire.TransferPlan hello() {
      return hello;
    }

    @Override
    public void reject(String reason) {
      try {
        id.reject(BulkWire.encodeReject(reason));
      } finally {
        close();
      }
    }

    @Override
    public void accept(BulkWire.RingInfo ring) {
      id.accept(ConnectionParameters.withPrivateData(ring.encode()));
      CmEvents.expect(channel, CmEventType.ESTABLISHED, EVENT_TIMEOUT, "accepting " + peer());
      connected = true;
    }

    @Override
    void closeRest() {
      id.close(); // the channel is the listener's
    }
  }

  private static final class CmOutgoing extends CmSide implements BulkLink.Outgoing {
    private final InetSocketAddress server;

    CmOutgoing(CmEventChannel channel, CmId id, InetSocketAddress server) {
      super(channel, id);
      this.server = server;
    }

    @Override
    public BulkWire.RingInfo connect(BulkWire.TransferPlan hello) {
      id.connect(ConnectionParameters.withPrivateData(hello.encode()));
      CmEvent ev = CmEvents.expect(channel, CmEventType.ESTABLISHED, EVENT_TIMEOUT,
          "connecting to " + BulkTransfer.format(server));
      connected = true;
      return BulkWire.RingInfo.decode(ev.privateData());
    }

    @Override
    void closeRest() {
      try {
        id.close();
      } finally {
        channel.close();
      }
    }
  }
}

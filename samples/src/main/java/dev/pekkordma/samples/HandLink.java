package dev.pekkordma.samples;

import dev.pekkordma.verbs.Access;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpAttributes;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

/**
 * Connections made by hand within one JVM, for a provider without a connection manager: each
 * side opens the first device, moves its QP through INIT, RTR and RTS with the other's GID and
 * QP number, and the hello and ring info are handed over in memory. Server and client of the
 * demo share one instance.
 */
final class HandLink implements BulkLink.Listener, BulkLink.Dialer {
  private static final int PORT = 1;
  private static final int QP_ACCESS = Access.LOCAL_WRITE | Access.REMOTE_WRITE;
  private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(10);

  private final RdmaProvider provider;
  private final LinkedBlockingQueue<Offer> offers = new LinkedBlockingQueue<>();

  HandLink(RdmaProvider provider) {
    this.provider = provider;
  }

  /** What the client hands the server: its hello and its QP's address. */
  private record Offer(BulkWire.TransferPlan hello, Gid gid, int qpNum, int psn,
      CompletableFuture<Answer> answer,
      CompletableFuture<Void> clientGone, CompletableFuture<Void> serverGone) {}

  /** The server's answer: its ring and QP address, or why not. */
  private record Answer(BulkWire.RingInfo ring, Gid gid, int qpNum, int psn, String rejection) {}

  @Override
  public InetSocketAddress localAddress() {
    return new InetSocketAddress("127.0.0.1", 0);
  }

  @Override
  public BulkLink.Incoming next(Duration timeout, BooleanSupplier stop) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try {
      while (!stop.getAsBoolean() && System.nanoTime() < deadline) {
        Offer o = offers.poll(100, TimeUnit.MILLISECONDS);
        if (o != null) return new HandIncoming(o);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return null;
  }

  @Override
  public BulkLink.Outgoing open(InetSocketAddress server) {
    return new HandOutgoing();
  }

  @Override
  public void close() {}

  private static void await(CompletableFuture<?> f, Duration timeout, String what) {
    try {
      f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
    } catch (ExecutionException e) {
      throw new TransferFailure(what + ": " + e.getCause().getMessage(), e.getCause());
    } catch (TimeoutException e) {
      throw new TransferFailure(what + ": no answer within " + timeout.toSeconds() + " s");
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new TransferFailure(what + ": interrupted");
    }
  }

  private abstract class HandSide implements BulkLink.Connection {
    final DeviceContext context = provider.open(provider.devices().get(0));
    /** This side's first PSN: random, so that a stray packet cannot pass for the next one. */
    final int psn = java.util.concurrent.ThreadLocalRandom.current().nextInt(1 << 24);
    QueuePair qp;

    @Override
    public DeviceContext context() {
      return context;
    }

    @Override
    public int port() {
      return PORT;
    }

    Gid gid() {
      return context.queryGid(PORT, 0);
    }

    @Override
    public QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes) {
      qp = pd.createQp(attributes);
      qp.modify(QpAttributes.toInit(PORT, QP_ACCESS));
      return qp;
    }

    /**
     * INIT to RTR to RTS, talking to {@code peerQpNum} at {@code peerGid}, which starts its
     * PSNs at {@code peerPsn}; ours start at {@link #psn}, random, as perftest picks them.
     */
    void connectTo(Gid peerGid, int peerQpNum, int peerPsn) {
      PortAttributes port = context.queryPort(PORT);
      // by GID: RoCE needs it, and InfiniBand within one subnet accepts it
      AddressVector av = AddressVector.global(peerGid, 0, PORT);
      qp.modify(QpAttributes.toRtr(av, peerQpNum, peerPsn, port.activeMtu()));
      qp.modify(QpAttributes.toRts(psn));
    }

    @Override
    public void destroyQp() {
      if (qp != null) {
        QueuePair q = qp;
        qp = null;
        q.close();
      }
    }

    @Override
    public String peer() {
      return "this JVM (QPs connected by hand)";
    }

    @Override
    public void close() {
      try {
        destroyQp();
      } finally {
        context.close();
      }
    }
  }

  private final class HandIncoming extends HandSide implements BulkLink.Incoming {
    private final Offer offer;

    HandIncoming(Offer offer) {
      this.offer = offer;
    }

    @Override
    public BulkWire.TransferPlan hello() {
      return offer.hello();
    }

    @Override
    public void reject(String reason) {
      try {
        offer.answer().complete(new Answer(null, null, 0, 0, reason));
      } finally {
        close();
      }
    }

    @Override
    public void accept(BulkWire.RingInfo ring) {
      connectTo(offer.gid(), offer.qpNum(), offer.psn());
      offer.answer().complete(new Answer(ring, gid(), qp.qpNum(), psn, null));
    }

    @Override
    public void disconnect() {
      offer.serverGone().complete(null);
    }

    @Override
    public boolean awaitPeerDisconnect(Duration timeout) {
      try {
        await(offer.clientGone(), timeout, "waiting for the client to go");
        return true;
      } catch (TransferFailure e) {
        return false;
      }
    }

    @Override
    public void close() {
      offer.serverGone().complete(null);
      super.close();
    }
  }

  private final class HandOutgoing extends HandSide implements BulkLink.Outgoing {
    private Offer offer;

    @Override
    public BulkWire.RingInfo connect(BulkWire.TransferPlan hello) {
      offer = new Offer(hello, gid(), qp.qpNum(), psn, new CompletableFuture<>(),
          new CompletableFuture<>(), new CompletableFuture<>());
      offers.add(offer);
      await(offer.answer(), ANSWER_TIMEOUT, "connecting");
      Answer a = offer.answer().join();
      if (a.rejection() != null) {
        throw new TransferFailure("connecting: REJECTED by the server: " + a.rejection());
      }
      connectTo(a.gid(), a.qpNum(), a.psn());
      return a.ring();
    }

    @Override
    public void disconnect() {
      if (offer != null) offer.clientGone().complete(null);
    }

    @Override
    public boolean awaitPeerDisconnect(Duration timeout) {
      if (offer == null) return true;
      try {
        await(offer.serverGone(), timeout, "waiting for the server to go");
        return true;
      } catch (TransferFailure e) {
        return false;
      }
    }

    @Override
    public void close() {
      disconnect();
      super.close();
    }
  }
}

package dev.pekkordma.samples;

import dev.pekkordma.verbs.DeviceContext;
import dev.pekkordma.verbs.ProtectionDomain;
import dev.pekkordma.verbs.QpInitAttributes;
import dev.pekkordma.verbs.QueuePair;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.function.BooleanSupplier;

/**
 * How one side's QP gets connected to the other's, and what the two say while connecting: the
 * client's {@link BulkWire.TransferPlan} and the server's {@link BulkWire.RingInfo}.
 * {@link CmBulkLink} does it with the connection manager; {@link HandLink} by hand within one
 * JVM, for a provider without one.
 */
interface BulkLink {
  /** One side of one connection. Closing it destroys the QP and whatever it opened. */
  interface Connection extends AutoCloseable {
    /** The device the connection goes through. */
    DeviceContext context();

    int port();

    /** The connection's QP, on {@code pd}; the link moves it through its states. */
    QueuePair createQp(ProtectionDomain pd, QpInitAttributes attributes);

    /** Destroys the QP (before its CQs and PD go). */
    void destroyQp();

    String peer();

    /** Ends the connection from this side, waiting a little for it to be done. */
    void disconnect();

    /** Waits for the peer to end the connection; false when it did not in {@code timeout}. */
    boolean awaitPeerDisconnect(Duration timeout);

    @Override
    void close();
  }

  /** A client that asked to connect, not yet answered. */
  interface Incoming extends Connection {
    BulkWire.TransferPlan hello();

    /** Refuses it with a reason the client will print, and closes it. */
    void reject(String reason);

    /** Accepts, telling the client where the ring is; returns once connected. */
    void accept(BulkWire.RingInfo ring);
  }

  /** The client's side before and after connecting. */
  interface Outgoing extends Connection {
    /** Connects, announcing {@code hello}; returns the server's ring once connected. */
    BulkWire.RingInfo connect(BulkWire.TransferPlan hello);
  }

  /** Where clients come to a server. */
  interface Listener extends AutoCloseable {
    InetSocketAddress localAddress();

    /** The next client, or null when {@code timeout} passed or {@code stop} said so. */
    Incoming next(Duration timeout, BooleanSupplier stop);

    @Override
    void close();
  }

  /** A client's way to a server: resolves it and opens what is needed to build the QP. */
  interface Dialer {
    Outgoing open(InetSocketAddress server);
  }
}

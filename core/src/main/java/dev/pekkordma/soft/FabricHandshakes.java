package dev.pekkordma.soft;

import dev.pekkordma.soft.tls.SoftTls;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Proving which process a fabric connection stands for, both ends of it (the messages are
 * {@link FabricWire}'s). The connecting side names itself and the listener it dialled in a
 * HELLO with a nonce bound to the connection ({@link ChannelBinding}); the accepting side checks
 * what it can alone ({@link #judge}), then asks the named listener whether it issued that nonce
 * for a connection bound as this one is, and only then answers WELCOME.
 *
 * <p>The accepting side's rules are {@link LinkHandshake}'s, which the gate runs without
 * blocking up to WELCOME, plain or under TLS ({@link #welcome} then serves the proven process).
 * Proofs asked of this process run here, on a lane of up to {@code max-handshakes} threads of
 * their own, which only holders of a pending nonce reach. Every step is bounded by the
 * connection's deadline; nothing is allocated for a peer's frames before WELCOME.
 *
 * <p>Our own connections (a LINK we open, a proof we answer) use the JDK's TLS sockets: each
 * is one thread's work anyway, that of the process asking or of a lane no stranger reaches.
 */
final class FabricHandshakes {
  private static final Logger LOG = LoggerFactory.getLogger(FabricHandshakes.class);

  private final TcpFabric fabric;
  private final SoftTls tls;
  private final ThreadPoolExecutor proofs;
  private final SharedMemoryLinks sharedMemory;

  FabricHandshakes(TcpFabric fabric, SoftTls tls, int maxHandshakes) {
    this.fabric = fabric;
    this.tls = tls;
    this.sharedMemory = new SharedMemoryLinks(fabric);
    this.proofs = new ThreadPoolExecutor(0, maxHandshakes, 30, TimeUnit.SECONDS,
        new SynchronousQueue<>(), daemons("soft-rdma-fabric-proof-"));
  }

  /** The proofs' lane follows {@code max-handshakes} (for tests that change the limits). */
  void resize(int maxHandshakes) {
    proofs.setMaximumPoolSize(maxHandshakes);
  }

  // ---------------------------------------------------------------- the connecting side

  /** Opens a connection to the fabric at {@code to} and proves to it who we are. */
  FabricConnection connect(FabricAddress to) throws IOException {
    FabricAddress self = fabric.address();
    // the other side may hold us in line for one handshake deadline before it starts
    Deadline deadline = fabric.deadline(2, () -> { });
    Socket plain = new Socket();
    deadline.guard(plain);
    byte[] nonce = null;
    try {
      plain.setTcpNoDelay(true);
      plain.connect(to.socketAddress(), deadline.remainingMillis());
      write(plain, FabricWire.opening(FabricWire.LINK, null));
      Socket s = tls.client(plain, "the soft fabric at " + to);
      checkClaim(s, to, "the soft fabric at " + to);
      byte[] binding = ChannelBinding.of(self, to, SoftTls.peerCertificateBytes(s),
          SoftTls.localCertificateBytes(s));
      nonce = fabric.nonces().issue(binding);
      SharedMemoryHandshake.Offering offering =
          new SharedMemoryHandshake.Offering(fabric.sharedMemory().auto());
      FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
      hello.code = offering.helloCode();
      hello.from = self;
      hello.to = to;
      System.arraycopy(nonce, 0, hello.nonce, 0, nonce.length);
      write(s, hello.encode());
      FabricWire.Handshake answer = FabricWire.Handshake.decode(read(s, deadline),
          FabricWire.WELCOME, FabricWire.REFUSED);
      if (answer.kind != FabricWire.WELCOME) {
        throw new IOException("the soft fabric at " + to + " refused this process (" + self
            + "): " + FabricWire.refusal(answer.code));
      }
      FabricConnection.Ends ends = sharedMemory.offer(offering, answer.code, s, to, binding,
          deadline);
      if (!deadline.settle()) throw deadline.overdue();
      return new FabricConnection(ends, to.toString(), fabric.limits().frame().toNanos(),
          fabric.watch());
    } catch (IOException | RuntimeException e) {
      plain.close();
      if (deadline.expired()) {
        throw new SocketTimeoutException("the soft fabric at " + to + " did not welcome this"
            + " process within twice pekko-rdma.soft.fabric.handshake-timeout");
      }
      throw e;
    } finally {
      deadline.settle();
      if (nonce != null) fabric.nonces().forget(nonce);
    }
  }

  // ---------------------------------------------------------------- the accepting side

  /**
   * Serves the proven process on {@code ends} (blocking now), or refuses it if its place went
   * meanwhile. Whether it goes on through shared memory is settled on its own thread.
   */
  boolean welcome(FabricConnection.Ends ends, FabricGate.Arrival a, LinkHandshake.Welcome proven)
      throws IOException {
    FabricAddress identity = proven.identity();
    SharedMemoryHandshake.Answering answering = new SharedMemoryHandshake.Answering(
        fabric.sharedMemory().auto(), proven.helloCode());
    InboundConnection served = new InboundConnection(fabric, ends, identity, a.remote,
        () -> sharedMemory.answer(answering, ends, "the process at " + identity + " ("
            + a.remote + ")", proven.binding()));
    if (!fabric.served().admit(identity, served)) {
      try {
        write(ends.out(), LinkHandshake.refused(FabricWire.BUSY));
      } finally {
        closeQuietly(ends.closer());
      }
      fabric.refusals().refuse(a.remote, LinkHandshake.refusal(identity,
          FabricWire.refusal(FabricWire.BUSY)));
      return false;
    }
    try {
      FabricWire.Handshake welcome = new FabricWire.Handshake(FabricWire.WELCOME);
      welcome.code = answering.welcomeCode();
      write(ends.out(), welcome.encode());
    } catch (IOException e) {
      fabric.served().ended(identity, served);
      closeQuietly(ends.closer());
      throw e;
    }
    fabric.served().start(served);
    return true;
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing is all we wanted
    }
  }

  /** The PROVE message that asks {@code ask}'s question. */
  static byte[] prove(LinkHandshake.AskProof ask) {
    FabricWire.Handshake prove = new FabricWire.Handshake(FabricWire.PROVE);
    System.arraycopy(ask.nonce(), 0, prove.nonce, 0, ask.nonce().length);
    System.arraycopy(ask.binding(), 0, prove.binding, 0, ask.binding().length);
    return prove.encode();
  }

  /** Answers a proof about {@code nonce}, which the gate let in (one connection per nonce). */
  void answerProof(FabricGate.Arrival a, byte[] nonce) {
    try {
      proofs.execute(() -> proof(a, nonce));
    } catch (RejectedExecutionException e) {
      fabric.refusals().refuse(a.remote, "more proofs at once than max-handshakes"
          + " (pekko-rdma.soft.fabric.max-handshakes)");
      fabric.gate().close(a);
    }
  }

  private void proof(FabricGate.Arrival a, byte[] nonce) {
    try {
      Socket s = tls.server(a.channel.socket(), a.remote);
      FabricWire.Handshake ask = FabricWire.Handshake.decode(read(s, a.deadline),
          FabricWire.PROVE);
      boolean proven = java.util.Arrays.equals(ask.nonce, nonce)
          && fabric.nonces().proves(nonce, ask.binding);
      if (a.deadline.settle()) {
        write(s, new FabricWire.Handshake(proven ? FabricWire.PROVEN : FabricWire.NOT_PROVEN)
            .encode());
      }
      if (!proven) {
        fabric.refusals().refuse(a.remote, "it asked about a nonce of this process for another"
            + " connection than the one it was issued on (a relayed HELLO)");
      }
      s.close();
    } catch (FabricWire.FabricViolation v) {
      fabric.refusals().refuse(a.remote, v.getMessage() + "; the connection is dropped");
    } catch (IOException e) {
      LOG.debug("soft fabric: answering a proof to {} failed: {}", a.remote, e.toString());
    } finally {
      fabric.gate().close(a);
    }
  }

  // ---------------------------------------------------------------- helpers

  /** Under TLS: the peer's certificate must be one that may claim {@code address}. */
  private void checkClaim(Socket s, FabricAddress address, String who) throws IOException {
    String refusal = tls.claimRefusal(s, address.inetAddress(), address.port());
    if (refusal != null) throw new javax.net.ssl.SSLPeerUnverifiedException(who + ": " + refusal);
  }

  private static void write(Socket s, byte[] message) throws IOException {
    write(s.getOutputStream(), message);
  }

  private static void write(OutputStream out, byte[] message) throws IOException {
    out.write(message);
    out.flush();
  }

  /** One handshake message, unbuffered (nothing read past it), by the deadline. */
  static byte[] read(Socket s, Deadline deadline) throws IOException {
    byte[] b = new byte[FabricWire.HANDSHAKE_BYTES];
    InputStream in = s.getInputStream();
    int off = 0;
    try {
      while (off < b.length) {
        s.setSoTimeout(deadline.remainingMillis());
        int n = in.read(b, off, b.length - off);
        if (n < 0) throw new EOFException("the connection closed mid-handshake");
        off += n;
      }
    } catch (SocketTimeoutException e) {
      throw deadline.overdue();
    } catch (IOException e) {
      if (deadline.expired()) throw deadline.overdue();
      throw e;
    }
    return b;
  }

  private static ThreadFactory daemons(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}

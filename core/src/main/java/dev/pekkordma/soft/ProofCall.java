package dev.pekkordma.soft;

import dev.pekkordma.soft.tls.SoftTls;
import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.function.Consumer;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tlschannel.NeedsReadException;
import tlschannel.NeedsWriteException;
import tlschannel.TlsChannel;
import tlschannel.WouldBlockException;

/**
 * The call back to the listener a HELLO claims, made by the gate's thread without blocking:
 * connect, send the PROOF opening, under TLS make the TLS handshake (the listener's certificate
 * must be one that may claim its address), send the PROVE, read the 72-byte answer. It holds a
 * socket and a few buffers, no thread; the connection's deadline closes it if the listener never
 * answers. The answer's bytes, or null when there were none, go to {@code answered}, once.
 */
final class ProofCall implements FabricGate.Ready {
  private static final Logger LOG = LoggerFactory.getLogger(ProofCall.class);

  private final LinkHandshake.AskProof ask;
  private final SoftTls tls;
  private final ByteBuffer opening;
  private final ByteBuffer question;
  private final ByteBuffer answer = ByteBuffer.allocate(FabricWire.HANDSHAKE_BYTES);
  private final Consumer<byte[]> answered;
  private SocketChannel channel;
  /** What the PROVE and its answer go through: the channel, or TLS over it once it is made. */
  private ByteChannel talk;
  private TlsChannel secured;

  /** @param tls the fabric's TLS; a disabled one calls back in the clear */
  ProofCall(LinkHandshake.AskProof ask, SoftTls tls, Consumer<byte[]> answered) {
    this.ask = ask;
    this.tls = tls;
    this.answered = answered;
    this.opening = ByteBuffer.wrap(FabricWire.opening(FabricWire.PROOF, ask.nonce()));
    this.question = ByteBuffer.wrap(FabricHandshakes.prove(ask));
  }

  /** Starts the call; {@code deadline} closes it when the handshake's time runs out. */
  void start(Selector selector, Deadline deadline) {
    try {
      channel = SocketChannel.open();
      talk = channel;
      deadline.guard(channel);
      channel.configureBlocking(false);
      channel.socket().setTcpNoDelay(true);
      boolean connected = channel.connect(ask.claimed().socketAddress());
      channel.register(selector, connected ? SelectionKey.OP_WRITE : SelectionKey.OP_CONNECT,
          this);
    } catch (IOException | RuntimeException e) { // refused at once, closed by the deadline
      failed(e);
    }
  }

  @Override
  public void ready(SelectionKey k) {
    try {
      if (!advance()) return;
      channel.close();
    } catch (WouldBlockException e) {
      FabricGate.awaitTls(k, e);
      return;
    } catch (IOException | RuntimeException e) {
      failed(e);
      return;
    }
    answered.accept(answer.array());
  }

  /**
   * Takes every step the channel lets it take now; true once the answer is whole. A step that
   * must wait throws NeedsRead/NeedsWrite (TLS's, or ours for the plain steps alike), or returns
   * false while the connect is under way.
   */
  private boolean advance() throws IOException {
    if (!channel.finishConnect()) return false;
    if (opening.hasRemaining()) {
      channel.write(opening);
      if (opening.hasRemaining()) throw new NeedsWriteException();
    }
    if (tls.enabled() && secured == null) {
      secured = tls.clientChannel(channel, ask.claimed().socketAddress());
      talk = secured;
    }
    if (secured != null && question.position() == 0) {
      secured.handshake();
      String refusal = tls.claimRefusal(secured.getSslEngine().getSession(),
          ask.claimed().inetAddress(), ask.claimed().port());
      if (refusal != null) {
        throw new SSLPeerUnverifiedException("the soft fabric at " + ask.claimed() + ": "
            + refusal);
      }
    }
    while (question.hasRemaining()) {
      if (talk.write(question) == 0) throw new NeedsWriteException();
    }
    while (answer.hasRemaining()) {
      int n = talk.read(answer);
      if (n < 0) throw new EOFException("closed before it answered");
      if (n == 0) throw new NeedsReadException();
    }
    return true;
  }

  /** Ends the call unanswered, for a connection that went meanwhile: nothing is told. */
  void abandon() {
    closeQuietly();
  }

  private void failed(Exception e) {
    LOG.debug("soft fabric: cannot confirm the fabric at {}: {}", ask.claimed(), e.toString());
    closeQuietly();
    answered.accept(null);
  }

  private void closeQuietly() {
    try {
      if (channel != null) channel.close();
    } catch (IOException closing) {
      // closing is all we wanted
    }
  }
}

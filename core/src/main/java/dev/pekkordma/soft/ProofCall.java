package dev.pekkordma.soft;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The call back to the listener a plain HELLO claims, made by the gate's thread without
 * blocking: connect, send the PROOF opening and the PROVE, read the 72-byte answer. It holds a
 * socket and 168 bytes, no thread; the connection's deadline closes it if the listener never
 * answers. The answer's bytes, or null when there were none, go to {@code answered}, once.
 */
final class ProofCall implements FabricGate.Ready {
  private static final Logger LOG = LoggerFactory.getLogger(ProofCall.class);

  private final LinkHandshake.AskProof ask;
  private final ByteBuffer question;
  private final ByteBuffer answer = ByteBuffer.allocate(FabricWire.HANDSHAKE_BYTES);
  private final Consumer<byte[]> answered;
  private SocketChannel channel;

  ProofCall(LinkHandshake.AskProof ask, Consumer<byte[]> answered) {
    this.ask = ask;
    this.answered = answered;
    byte[] opening = FabricWire.opening(FabricWire.PROOF, ask.nonce());
    this.question = ByteBuffer.allocate(opening.length + FabricWire.HANDSHAKE_BYTES)
        .put(opening).put(FabricHandshakes.prove(ask)).flip();
  }

  /** Starts the call; {@code deadline} closes it when the handshake's time runs out. */
  void start(Selector selector, Deadline deadline) {
    try {
      channel = SocketChannel.open();
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
      if (k.isConnectable() && !channel.finishConnect()) return;
      if (question.hasRemaining()) {
        channel.write(question);
        k.interestOps(question.hasRemaining() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
        return;
      }
      if (channel.read(answer) < 0) throw new IOException("closed before it answered");
      if (answer.hasRemaining()) return;
      channel.close();
    } catch (IOException | RuntimeException e) {
      failed(e);
      return;
    }
    answered.accept(answer.array());
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

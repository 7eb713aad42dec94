package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.security.SecureRandom;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A fabric peer we do not control, written from the wire format alone: it listens like a
 * process's fabric (answering the PROVE calls that vouch for its HELLOs, for the connection they
 * were bound to), connects to ours, and sends whatever frames a test builds, well-formed or not.
 * Connections our fabric opens to it are welcomed and queued for the test to answer as it likes.
 */
final class RawFabricPeer implements AutoCloseable {
  private static final SecureRandom RANDOM = new SecureRandom();
  private final ServerSocket listener;
  private final FabricAddress address;
  /** Each nonce it issued, and the binding of the connection it was issued for. */
  private final Map<ByteBuffer, byte[]> nonces = new ConcurrentHashMap<>();
  private final BlockingQueue<Conn> inbound = new LinkedBlockingQueue<>();
  private final BlockingQueue<Captured> captured = new LinkedBlockingQueue<>();
  private final Thread acceptor;
  /** How it answers the HELLOs of connections our fabric opens to it. */
  private volatile short answer = WELCOMES;

  /** {@link #answerHellos}: welcome them (the default). */
  static final short WELCOMES = 0;
  /** {@link #answerHellos}: answer none, keeping them for the test ({@link #awaitHello}). */
  static final short HOLDS = -1;

  /** A HELLO our fabric sent, and the connection it came on (unanswered). */
  record Captured(FabricWire.Handshake hello, Conn conn) {}

  RawFabricPeer() throws IOException {
    listener = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
    address = new FabricAddress(new byte[] {127, 0, 0, 1}, listener.getLocalPort());
    acceptor = new Thread(this::acceptLoop, "raw-fabric-peer-" + address);
    acceptor.setDaemon(true);
    acceptor.start();
  }

  FabricAddress address() {
    return address;
  }

  /** The GID of this peer's device {@code serial}, as our fabric routes it. */
  Gid gid(int serial) {
    return Gid.of(address.gid(serial));
  }

  /** Our fabric's address (the soft provider must have started it). */
  static FabricAddress ours() {
    return SoftFabric.get().tcp().address();
  }

  /**
   * How to answer the HELLOs our fabric sends this peer: {@link #WELCOMES}, {@link #HOLDS}, or a
   * refusal code (FabricWire.RELAYED, ...).
   */
  void answerHellos(short how) {
    answer = how;
  }

  /** The next HELLO our fabric sent while this peer {@link #HOLDS} them. */
  Captured awaitHello(long millis) throws InterruptedException {
    Captured c = captured.poll(millis, TimeUnit.MILLISECONDS);
    if (c == null) throw new AssertionError("our fabric sent no HELLO to " + address);
    return c;
  }

  /**
   * Asks our fabric, as a listener called back would be asked, whether it issued {@code nonce}
   * for a connection with {@code binding}: PROVEN, NOT_PROVEN, or -1 when it closed the
   * connection without an answer.
   */
  static int prove(byte[] nonce, byte[] binding) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(ours().socketAddress(), 5000);
      s.setSoTimeout(10_000);
      Conn c = new Conn(s);
      FabricWire.Handshake ask = new FabricWire.Handshake(FabricWire.PROVE);
      System.arraycopy(nonce, 0, ask.nonce, 0, nonce.length);
      System.arraycopy(binding, 0, ask.binding, 0, binding.length);
      c.out.write(FabricWire.opening(FabricWire.PROOF, nonce));
      c.out.write(ask.encode());
      c.out.flush();
      byte[] answer = new byte[FabricWire.HANDSHAKE_BYTES];
      try {
        c.in.readFully(answer);
      } catch (EOFException | java.net.SocketException closed) {
        return -1;
      }
      return FabricWire.Handshake.decode(answer, FabricWire.PROVEN, FabricWire.NOT_PROVEN).kind;
    }
  }

  /** A connection to our fabric, proven as this peer's. */
  Conn connect() throws IOException {
    return connectClaiming(address, true);
  }

  /**
   * A connection whose HELLO claims {@code claimed}; {@code issued}: whether this peer can
   * confirm the nonce (false: a forger's). Returns the connection after WELCOME; throws if
   * refused, with the refusal's code.
   */
  Conn connectClaiming(FabricAddress claimed, boolean issued) throws IOException {
    return connectAs(claimed, ours(), issued);
  }

  /**
   * A connection to our fabric whose HELLO claims {@code claimed} and names {@code to} as the
   * listener it was sent to (ours, unless the test lies about it).
   */
  Conn connectAs(FabricAddress claimed, FabricAddress to, boolean issued) throws IOException {
    return send(hello(claimed, to, issued));
  }

  /** Sends {@code hello} to our fabric as a LINK; the connection after WELCOME, or Refused. */
  static Conn send(FabricWire.Handshake hello) throws IOException {
    Socket s = new Socket();
    s.connect(ours().socketAddress(), 5000);
    s.setSoTimeout(10_000);
    Conn c = new Conn(s);
    c.out.write(FabricWire.opening(FabricWire.LINK, null));
    c.out.write(hello.encode());
    c.out.flush();
    byte[] answer = new byte[FabricWire.HANDSHAKE_BYTES];
    c.in.readFully(answer);
    FabricWire.Handshake h = FabricWire.Handshake.decode(answer, FabricWire.WELCOME,
        FabricWire.REFUSED);
    if (h.kind != FabricWire.WELCOME) {
      c.close();
      throw new Refused(h.code);
    }
    return c;
  }

  /** A HELLO as a process at {@code claimed} sends it to {@code to}, plain (no TLS). */
  FabricWire.Handshake hello(FabricAddress claimed, FabricAddress to, boolean issued) {
    FabricWire.Handshake hello = new FabricWire.Handshake(FabricWire.HELLO);
    hello.from = claimed;
    hello.to = to;
    RANDOM.nextBytes(hello.nonce);
    if (issued) {
      nonces.put(ByteBuffer.wrap(hello.nonce.clone()),
          ChannelBinding.of(claimed, to, new byte[0], new byte[0]));
    }
    return hello;
  }

  /** Our fabric refused a HELLO: {@link #code} says why. */
  static final class Refused extends IOException {
    final short code;

    Refused(short code) {
      super("refused: " + FabricWire.refusal(code));
      this.code = code;
    }
  }

  /** The next connection our fabric opened to this peer (after its HELLO was welcomed). */
  Conn awaitInbound(long millis) throws InterruptedException {
    Conn c = inbound.poll(millis, TimeUnit.MILLISECONDS);
    if (c == null) throw new AssertionError("our fabric did not connect to " + address);
    return c;
  }

  private void acceptLoop() {
    while (!listener.isClosed()) {
      try {
        Socket s = listener.accept();
        Thread t = new Thread(() -> serve(s), "raw-fabric-peer-in");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try {
      Conn c = new Conn(s);
      s.setSoTimeout(10_000);
      byte[] opening = new byte[FabricWire.OPENING_BYTES];
      c.in.readFully(opening);
      byte purpose = FabricWire.purpose(ByteBuffer.wrap(opening));
      byte[] first = new byte[FabricWire.HANDSHAKE_BYTES];
      c.in.readFully(first);
      FabricWire.Handshake h = FabricWire.Handshake.decode(first,
          purpose == FabricWire.LINK ? FabricWire.HELLO : FabricWire.PROVE);
      if (h.kind == FabricWire.PROVE) {
        byte[] binding = nonces.remove(ByteBuffer.wrap(h.nonce));
        boolean proven = binding != null && java.util.Arrays.equals(binding, h.binding);
        c.out.write(new FabricWire.Handshake(proven ? FabricWire.PROVEN
            : FabricWire.NOT_PROVEN).encode());
        c.out.flush();
        s.close();
        return;
      }
      short how = answer;
      if (how == HOLDS) {
        s.setSoTimeout(0);
        captured.add(new Captured(h, c));
        return;
      }
      FabricWire.Handshake reply = new FabricWire.Handshake(how == WELCOMES
          ? FabricWire.WELCOME : FabricWire.REFUSED); // it believes anyone, unless told not to
      reply.code = how == WELCOMES ? 0 : how;
      c.out.write(reply.encode());
      c.out.flush();
      if (how != WELCOMES) {
        s.close();
        return;
      }
      s.setSoTimeout(0);
      inbound.add(c);
    } catch (IOException | RuntimeException e) {
      try {
        s.close();
      } catch (IOException ignored) {
        // gone
      }
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
    for (Conn c : inbound) c.close();
    for (Captured c : captured) c.conn().close();
  }

  /** One TCP connection, with frame builders and readers. */
  static final class Conn implements AutoCloseable {
    final Socket socket;
    final DataInputStream in;
    final OutputStream out;

    Conn(Socket socket) throws IOException {
      this.socket = socket;
      this.in = new DataInputStream(socket.getInputStream());
      this.out = socket.getOutputStream();
    }

    void send(byte[] bytes) throws IOException {
      out.write(bytes);
      out.flush();
    }

    /** Reads one frame header (80 bytes); null when the connection ended. */
    Frame readFrame(int timeoutMillis) throws IOException {
      socket.setSoTimeout(timeoutMillis);
      byte[] b = new byte[FabricWire.HEADER_BYTES];
      try {
        in.readFully(b);
      } catch (EOFException e) {
        return null;
      }
      return Frame.parse(b);
    }

    /** Whether our side closed the connection (reads end) within {@code millis}. */
    boolean closedWithin(int millis) throws IOException {
      socket.setSoTimeout(millis);
      try {
        byte[] sink = new byte[8192];
        while (true) {
          if (in.read(sink) < 0) return true;
        }
      } catch (java.net.SocketTimeoutException e) {
        return false;
      } catch (IOException e) {
        return true; // reset
      }
    }

    @Override
    public void close() {
      try {
        socket.close();
      } catch (IOException e) {
        // gone
      }
    }
  }

  /** A frame as built or read by tests: every header field, little-endian, 80 bytes. */
  static final class Frame {
    byte kind = FabricWire.REQUEST;
    int srcDevice = 1;
    int destDevice;
    int destQpn;
    int srcQpn;
    int psn;
    int opcodeOrCode;
    int flagsOrRnr;
    int imm;
    int rkey;
    int qkey;
    long readLength;
    long payloadLength;
    long remoteAddress;
    long compareAddOrAtomic;
    long swap;

    byte[] header() {
      ByteBuffer b = ByteBuffer.allocate(FabricWire.HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      b.put(kind).put((byte) 0).putShort((short) srcDevice).putShort((short) destDevice)
          .putShort((short) 0).putInt(destQpn).putInt(srcQpn).putInt(psn).putInt(opcodeOrCode)
          .putInt(flagsOrRnr).putInt(imm).putInt(rkey).putInt(qkey).putLong(readLength)
          .putLong(payloadLength).putLong(remoteAddress).putLong(compareAddOrAtomic).putLong(swap);
      return b.array();
    }

    /** Header, payload and (with a payload) the trailer: a well-formed frame's bytes. */
    byte[] withPayload(byte[] payload, byte trailer) {
      byte[] h = header();
      int extra = payload.length > 0 ? payload.length + 1 : 0;
      byte[] all = java.util.Arrays.copyOf(h, h.length + extra);
      System.arraycopy(payload, 0, all, h.length, payload.length);
      if (payload.length > 0) all[all.length - 1] = trailer;
      return all;
    }

    static Frame parse(byte[] b) {
      ByteBuffer v = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
      Frame f = new Frame();
      f.kind = v.get();
      v.get();
      f.srcDevice = v.getShort() & 0xffff;
      f.destDevice = v.getShort() & 0xffff;
      v.getShort();
      f.destQpn = v.getInt();
      f.srcQpn = v.getInt();
      f.psn = v.getInt();
      f.opcodeOrCode = v.getInt();
      f.flagsOrRnr = v.getInt();
      f.imm = v.getInt();
      f.rkey = v.getInt();
      f.qkey = v.getInt();
      f.readLength = v.getLong();
      f.payloadLength = v.getLong();
      f.remoteAddress = v.getLong();
      f.compareAddOrAtomic = v.getLong();
      f.swap = v.getLong();
      return f;
    }
  }

  static InetSocketAddress loopback(int port) {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
  }
}

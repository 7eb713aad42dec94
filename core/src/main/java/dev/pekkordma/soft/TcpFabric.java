package dev.pekkordma.soft;

import dev.pekkordma.memory.NativeMemory;
import dev.pekkordma.verbs.Gid;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The fabric between processes: each process listens on one TCP port; a requester's device opens
 * one link per remote process, sends its requests on it and reads the answers back. The remote
 * side executes requests against its own memory in the link's reader thread: one-sided
 * operations still need no code of the target application.
 */
final class TcpFabric {
  private static final byte REQUEST = 1;
  private static final byte DATAGRAM = 2;
  private static final byte RESPONSE = 3;
  private static final int HEADER_BYTES = 1 + 4 * 10 + 8 * 3 + 16 + 16 + 4;
  private static final int RESPONSE_BYTES = 1 + 16 + 4 * 5 + 8;

  private final SoftFabric fabric;
  private final ServerSocketChannel server;
  private final InetSocketAddress address;
  private final Map<String, Link> links = new ConcurrentHashMap<>();

  private TcpFabric(SoftFabric fabric, ServerSocketChannel server, InetSocketAddress address) {
    this.fabric = fabric;
    this.server = server;
    this.address = address;
  }

  static TcpFabric start(String host, int port, SoftFabric fabric) {
    try {
      InetAddress ip = InetAddress.getByName(host);
      if (ip.getAddress().length != 4) {
        throw new IllegalArgumentException("pekko-rdma.soft.fabric.host must be an IPv4 address, was " + host);
      }
      ServerSocketChannel s = ServerSocketChannel.open();
      s.bind(new InetSocketAddress(ip, port));
      InetSocketAddress bound = (InetSocketAddress) s.getLocalAddress();
      TcpFabric f = new TcpFabric(fabric, s, bound);
      Thread t = new Thread(f::acceptLoop, "soft-rdma-fabric-accept-" + bound.getPort());
      t.setDaemon(true);
      t.start();
      return f;
    } catch (IOException e) {
      throw new UncheckedIOException("soft fabric cannot listen on " + host + ":" + port
          + " (pekko-rdma.soft.fabric.host/port)", e);
    }
  }

  InetSocketAddress address() {
    return address;
  }

  SoftPeer peer(Gid gid) {
    byte[] ip = {gid.byteAt(8), gid.byteAt(9), gid.byteAt(10), gid.byteAt(11)};
    int port = ((gid.byteAt(12) & 0xff) << 8) | (gid.byteAt(13) & 0xff);
    String key;
    try {
      key = InetAddress.getByAddress(ip).getHostAddress() + ":" + port;
    } catch (IOException e) {
      return UnreachablePeer.INSTANCE;
    }
    Link link = links.computeIfAbsent(key, k -> new Link(k, ip, port));
    return new RemotePeer(link, gid);
  }

  // ------------------------------------------------------------------ inbound

  private void acceptLoop() {
    while (server.isOpen()) {
      try {
        SocketChannel c = server.accept();
        c.setOption(StandardSocketOptions.TCP_NODELAY, true);
        Thread t = new Thread(() -> serve(c), "soft-rdma-fabric-in-" + c.getRemoteAddress());
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        if (!server.isOpen()) return;
      }
    }
  }

  /** Executes the requests arriving on one inbound connection and answers them. */
  private void serve(SocketChannel c) {
    ByteBuffer in = ByteBuffer.allocateDirect(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer out = ByteBuffer.allocateDirect(RESPONSE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    ByteBuffer payload = ByteBuffer.allocateDirect(64 * 1024);
    SoftPeer.RequestHeader h = new SoftPeer.RequestHeader();
    SoftPeer.Response r = new SoftPeer.Response();
    Segments segments = new Segments(1);
    byte[] destGid = new byte[16];
    try (c) {
      while (true) {
        in.clear();
        readFully(c, in);
        in.flip();
        byte kind = in.get();
        h.destQpn = in.getInt();
        h.srcQpn = in.getInt();
        h.psn = in.getInt();
        h.opcode = in.getInt();
        h.sendFlags = in.getInt();
        h.immOrRkeyBigEndian = in.getInt();
        h.rkey = in.getInt();
        h.readLength = in.getInt();
        h.qkey = in.getInt();
        int payloadLength = in.getInt();
        h.remoteAddress = in.getLong();
        h.compareAdd = in.getLong();
        h.swap = in.getLong();
        in.get(h.srcGid);
        in.get(destGid);
        in.getInt();
        if (payload.capacity() < payloadLength) payload = ByteBuffer.allocateDirect(payloadLength);
        payload.clear().limit(payloadLength);
        readFully(c, payload);
        segments.clear();
        if (payloadLength > 0) segments.add(NativeMemory.addressOf(payload), payloadLength);
        SoftDevice device = fabric.localDevice(Gid.of(destGid));
        SoftQp qp = device == null ? null : device.qps.get(h.destQpn);
        if (kind == DATAGRAM) {
          if (qp != null) qp.handleDatagram(h, segments);
          continue;
        }
        r.psn = h.psn;
        r.code = SoftPeer.Response.DROPPED;
        r.readLength = 0;
        if (qp != null) qp.handleRequest(h, segments, r);
        int readLength = r.code == SoftPeer.Response.ACK ? r.readLength : 0;
        out.clear();
        out.put(RESPONSE);
        out.put(h.srcGid);
        out.putInt(h.srcQpn).putInt(r.psn).putInt(r.code).putInt(r.rnrTimer).putInt(readLength);
        out.putLong(r.atomicValue);
        out.flip();
        writeFully(c, out);
        if (readLength > 0) writeMemory(c, r.readAddress, readLength);
      }
    } catch (IOException e) {
      // the peer process went away: nothing to answer any more
    }
  }

  // ------------------------------------------------------------------ outbound

  /** This process's connection to another process's fabric. */
  final class Link {
    private final String name;
    private final byte[] ip;
    private final int port;
    private final ByteBuffer out = ByteBuffer.allocateDirect(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private final Set<SoftQp> requesters = ConcurrentHashMap.newKeySet();
    private volatile SocketChannel channel;

    Link(String name, byte[] ip, int port) {
      this.name = name;
      this.ip = ip;
      this.port = port;
    }

    private SocketChannel connect() throws IOException {
      SocketChannel c = channel;
      if (c != null && c.isOpen()) return c;
      c = SocketChannel.open(new InetSocketAddress(InetAddress.getByAddress(ip), port));
      c.setOption(StandardSocketOptions.TCP_NODELAY, true);
      channel = c;
      SocketChannel reading = c;
      Thread t = new Thread(() -> readResponses(reading), "soft-rdma-fabric-out-" + name);
      t.setDaemon(true);
      t.start();
      return c;
    }

    /** Sends one request; false when the remote process cannot be reached. */
    synchronized boolean send(byte kind, SoftQp requester, SoftPeer.RequestHeader h, Gid dest,
        Segments payload) {
      try {
        SocketChannel c = connect();
        if (kind == REQUEST) requesters.add(requester);
        out.clear();
        out.put(kind);
        out.putInt(h.destQpn).putInt(h.srcQpn).putInt(h.psn).putInt(h.opcode).putInt(h.sendFlags)
            .putInt(h.immOrRkeyBigEndian).putInt(h.rkey).putInt(h.readLength).putInt(h.qkey)
            .putInt((int) payload.total());
        out.putLong(h.remoteAddress).putLong(h.compareAdd).putLong(h.swap);
        out.put(h.srcGid);
        for (int i = 0; i < 16; i++) out.put(dest.byteAt(i));
        out.putInt(0);
        out.flip();
        writeFully(c, out);
        for (int i = 0; i < payload.count(); i++) {
          writeMemory(c, payload.address(i), payload.length(i));
        }
        return true;
      } catch (IOException e) {
        lost();
        return false;
      }
    }

    private void readResponses(SocketChannel c) {
      ByteBuffer in = ByteBuffer.allocateDirect(RESPONSE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
      ByteBuffer data = ByteBuffer.allocateDirect(64 * 1024);
      SoftPeer.Response r = new SoftPeer.Response();
      byte[] gid = new byte[16];
      try {
        while (true) {
          in.clear();
          readFully(c, in);
          in.flip();
          in.get();
          in.get(gid);
          int qpn = in.getInt();
          r.psn = in.getInt();
          r.code = in.getInt();
          r.rnrTimer = in.getInt();
          r.readLength = in.getInt();
          r.atomicValue = in.getLong();
          if (r.readLength > 0) {
            if (data.capacity() < r.readLength) data = ByteBuffer.allocateDirect(r.readLength);
            data.clear().limit(r.readLength);
            readFully(c, data);
            r.readAddress = NativeMemory.addressOf(data);
          }
          SoftDevice device = fabric.localDevice(Gid.of(gid));
          SoftQp qp = device == null ? null : device.qps.get(qpn);
          if (qp != null) qp.onResponse(r);
        }
      } catch (IOException e) {
        lost();
      }
    }

    private void lost() {
      SocketChannel c = channel;
      channel = null;
      if (c != null) {
        try {
          c.close();
        } catch (IOException ignored) {
          // closing a broken connection
        }
      }
      for (SoftQp qp : requesters) qp.peerLost();
      requesters.clear();
    }
  }

  /** A device in another process, reached through a link. */
  static final class RemotePeer implements SoftPeer {
    private final Link link;
    private final Gid gid;

    RemotePeer(Link link, Gid gid) {
      this.link = link;
      this.gid = gid;
    }

    @Override
    public boolean synchronous() {
      return false;
    }

    @Override
    public void request(SoftQp requester, RequestHeader header, Segments payload, Response response) {
      if (!link.send(REQUEST, requester, header, gid, payload)) requester.peerLost();
    }

    @Override
    public void datagram(SoftQp requester, RequestHeader header, Segments payload) {
      link.send(DATAGRAM, requester, header, gid, payload);
    }
  }

  // ------------------------------------------------------------------ io

  private static void readFully(SocketChannel c, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) {
      if (c.read(b) < 0) throw new EOFException("fabric peer closed the connection");
    }
  }

  private static void writeFully(SocketChannel c, ByteBuffer b) throws IOException {
    while (b.hasRemaining()) c.write(b);
  }

  private static final ThreadLocal<ByteBuffer> STAGING =
      ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(256 * 1024));

  /** Writes native memory to the socket through a reused direct staging buffer. */
  private static void writeMemory(SocketChannel c, long address, int length) throws IOException {
    ByteBuffer staging = STAGING.get();
    long base = NativeMemory.addressOf(staging);
    int done = 0;
    while (done < length) {
      int n = Math.min(staging.capacity(), length - done);
      NativeMemory.copy(address + done, base, n);
      staging.clear().limit(n);
      writeFully(c, staging);
      done += n;
    }
  }
}

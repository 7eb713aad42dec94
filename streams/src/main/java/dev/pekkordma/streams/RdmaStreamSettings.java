package dev.pekkordma.streams;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigException;
import java.time.Duration;
import java.util.Optional;

/**
 * How a connection is sized and behaves: read from {@code pekko-rdma.streams} (or its {@code
 * bulk} section) and changed per call with the {@code with...} methods. Every value is checked
 * when read or set; a wrong one fails naming its setting. Immutable.
 */
public final class RdmaStreamSettings {
  public static final String ROOT = "pekko-rdma.streams";
  /** The largest ring or queue this layer asks for; the device may allow less. */
  static final int MAX_QUEUE = 1 << 16;
  /** The longest message: a ByteString put together in one array. */
  static final int MAX_MESSAGE = Integer.MAX_VALUE - 8;

  /** What happens to a ByteString longer than the buffer size. */
  public enum Oversize {
    /** Sent as several writes, put together again at the receiver. */
    SPLIT,
    /** The stream fails, naming the setting. */
    FAIL
  }

  private final String path;
  private final int bufferSize;
  private final int receiveBuffers;
  private final int sendBuffers;
  private final int sendQueueDepth;
  private final int inlineThreshold;
  private final int signalEvery;
  private final Oversize oversize;
  private final Duration idleTimeout; // null: infinite
  private final Duration connectTimeout;
  private final Duration acceptTimeout;
  private final int backlog;
  private final int maxMessageSize;

  private RdmaStreamSettings(String path, int bufferSize, int receiveBuffers, int sendBuffers,
      int sendQueueDepth, int inlineThreshold, int signalEvery, Oversize oversize,
      Duration idleTimeout, Duration connectTimeout, Duration acceptTimeout, int backlog,
      int maxMessageSize) {
    this.path = path;
    this.bufferSize = bufferSize;
    this.receiveBuffers = receiveBuffers;
    this.sendBuffers = sendBuffers;
    this.sendQueueDepth = sendQueueDepth;
    this.inlineThreshold = inlineThreshold;
    this.signalEvery = signalEvery;
    this.oversize = oversize;
    this.idleTimeout = idleTimeout;
    this.connectTimeout = connectTimeout;
    this.acceptTimeout = acceptTimeout;
    this.backlog = backlog;
    this.maxMessageSize = maxMessageSize;
    check();
  }

  /** The message connections' settings, {@code pekko-rdma.streams}, from a full config. */
  public static RdmaStreamSettings create(Config config) {
    return read(config, ROOT, ROOT);
  }

  /** The bulk sink and source's settings: {@code pekko-rdma.streams.bulk} over the rest. */
  public static RdmaStreamSettings bulk(Config config) {
    return read(config, ROOT + ".bulk", ROOT);
  }

  private static RdmaStreamSettings read(Config c, String section, String base) {
    try {
      String p = section + ".";
      String b = base + ".";
      long size = c.getBytes(first(c, p, b, "buffer-size"));
      if (size < 1 || size > (1 << 30)) {
        throw new ConfigException.BadValue(first(c, p, b, "buffer-size"),
            "must be in [1 B, 1 GiB], was " + size);
      }
      String over = c.getString(first(c, p, b, "oversize-chunks"));
      Oversize oversize;
      if (over.equals("split")) {
        oversize = Oversize.SPLIT;
      } else if (over.equals("fail")) {
        oversize = Oversize.FAIL;
      } else {
        throw new ConfigException.BadValue(first(c, p, b, "oversize-chunks"),
            "must be split or fail, was '" + over + "'");
      }
      String idleKey = first(c, p, b, "idle-timeout");
      Duration idle = c.getString(idleKey).equals("infinite") ? null : c.getDuration(idleKey);
      return new RdmaStreamSettings(section, (int) size,
          c.getInt(first(c, p, b, "receive-buffers")), c.getInt(first(c, p, b, "send-buffers")),
          c.getInt(first(c, p, b, "send-queue-depth")),
          c.getInt(first(c, p, b, "inline-threshold")), c.getInt(first(c, p, b, "signal-every")),
          oversize, idle, c.getDuration(first(c, p, b, "connect-timeout")),
          c.getDuration(first(c, p, b, "accept-timeout")), c.getInt(first(c, p, b, "backlog")),
          bytes(c, first(c, p, b, "max-message-size"), MAX_MESSAGE));
    } catch (IllegalArgumentException e) {
      // the constructor's checks name the setting; as config errors they name its full path
      throw new ConfigException.Generic(e.getMessage(), e);
    }
  }

  /** A size of at most {@code max} bytes, else fails naming its key. */
  private static int bytes(Config c, String key, long max) {
    long v = c.getBytes(key);
    if (v < 1 || v > max) {
      throw new ConfigException.BadValue(key, "must be in [1 B, " + max + " B], was " + v);
    }
    return (int) v;
  }

  /** The key under the section if it is set there, else under the base. */
  private static String first(Config c, String section, String base, String key) {
    return c.hasPath(section + key) ? section + key : base + key;
  }

  private void check() {
    range("buffer-size", bufferSize, 1, 1 << 30);
    range("receive-buffers", receiveBuffers, 1, MAX_QUEUE);
    range("send-buffers", sendBuffers, 1, MAX_QUEUE);
    range("send-queue-depth", sendQueueDepth, 4, MAX_QUEUE);
    range("inline-threshold", inlineThreshold, 0, 1 << 16);
    range("signal-every", signalEvery, 1, sendQueueDepth);
    if (oversize == null) throw new IllegalArgumentException(key("oversize-chunks") + " is null");
    if (idleTimeout != null && (idleTimeout.isNegative() || idleTimeout.isZero())) {
      throw new IllegalArgumentException(key("idle-timeout") + " must be positive or infinite, was "
          + idleTimeout);
    }
    positive("connect-timeout", connectTimeout);
    positive("accept-timeout", acceptTimeout);
    range("backlog", backlog, 1, MAX_QUEUE);
    range("max-message-size", maxMessageSize, 1, MAX_MESSAGE);
  }

  private String key(String name) {
    return path + "." + name;
  }

  private void range(String name, long v, long min, long max) {
    if (v < min || v > max) {
      throw new IllegalArgumentException(key(name) + " must be in [" + min + ", " + max
          + "], was " + v);
    }
  }

  private void positive(String name, Duration d) {
    if (d == null || d.isNegative() || d.isZero()) {
      throw new IllegalArgumentException(key(name) + " must be positive, was " + d);
    }
  }

  /** The config path these settings name in their messages. */
  public String path() { return path; }

  public int bufferSize() { return bufferSize; }

  public int receiveBuffers() { return receiveBuffers; }

  public int sendBuffers() { return sendBuffers; }

  public int sendQueueDepth() { return sendQueueDepth; }

  public int inlineThreshold() { return inlineThreshold; }

  public int signalEvery() { return signalEvery; }

  public Oversize oversize() { return oversize; }

  /** Empty: no idle timeout. */
  public Optional<Duration> idleTimeout() { return Optional.ofNullable(idleTimeout); }

  public Duration connectTimeout() { return connectTimeout; }

  public Duration acceptTimeout() { return acceptTimeout; }

  public int backlog() { return backlog; }

  /**
   * The longest message (ByteString) a peer may send where writes are put together again; a
   * longer one fails the connection naming this setting.
   */
  public int maxMessageSize() { return maxMessageSize; }

  private RdmaStreamSettings copy(int bufferSize, int receiveBuffers, int sendBuffers,
      int sendQueueDepth, int inlineThreshold, int signalEvery, Oversize oversize,
      Duration idleTimeout, Duration connectTimeout, Duration acceptTimeout, int backlog) {
    return new RdmaStreamSettings(path, bufferSize, receiveBuffers, sendBuffers, sendQueueDepth,
        inlineThreshold, signalEvery, oversize, idleTimeout, connectTimeout, acceptTimeout,
        backlog, maxMessageSize);
  }

  public RdmaStreamSettings withBufferSize(int bytes) {
    return copy(bytes, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold, signalEvery,
        oversize, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withReceiveBuffers(int n) {
    return copy(bufferSize, n, sendBuffers, sendQueueDepth, inlineThreshold, signalEvery,
        oversize, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withSendBuffers(int n) {
    return copy(bufferSize, receiveBuffers, n, sendQueueDepth, inlineThreshold, signalEvery,
        oversize, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withSendQueueDepth(int n) {
    return copy(bufferSize, receiveBuffers, sendBuffers, n, inlineThreshold,
        Math.min(signalEvery, n), oversize, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withInlineThreshold(int bytes) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, bytes, signalEvery,
        oversize, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withSignalEvery(int n) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold, n,
        oversize, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withOversize(Oversize o) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold,
        signalEvery, o, idleTimeout, connectTimeout, acceptTimeout, backlog);
  }

  /** Empty for none. */
  public RdmaStreamSettings withIdleTimeout(Optional<Duration> timeout) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold,
        signalEvery, oversize, timeout.orElse(null), connectTimeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withIdleTimeout(Duration timeout) {
    return withIdleTimeout(Optional.of(timeout));
  }

  public RdmaStreamSettings withConnectTimeout(Duration timeout) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold,
        signalEvery, oversize, idleTimeout, timeout, acceptTimeout, backlog);
  }

  public RdmaStreamSettings withAcceptTimeout(Duration timeout) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold,
        signalEvery, oversize, idleTimeout, connectTimeout, timeout, backlog);
  }

  public RdmaStreamSettings withBacklog(int n) {
    return copy(bufferSize, receiveBuffers, sendBuffers, sendQueueDepth, inlineThreshold,
        signalEvery, oversize, idleTimeout, connectTimeout, acceptTimeout, n);
  }

  public RdmaStreamSettings withMaxMessageSize(int bytes) {
    return new RdmaStreamSettings(path, bufferSize, receiveBuffers, sendBuffers, sendQueueDepth,
        inlineThreshold, signalEvery, oversize, idleTimeout, connectTimeout, acceptTimeout,
        backlog, bytes);
  }

  @Override
  public String toString() {
    return "RdmaStreamSettings(" + path + ": buffer-size=" + bufferSize + ", receive-buffers="
        + receiveBuffers + ", send-buffers=" + sendBuffers + ", send-queue-depth="
        + sendQueueDepth + ", inline-threshold=" + inlineThreshold + ", signal-every="
        + signalEvery + ", oversize-chunks=" + oversize.name().toLowerCase()
        + ", idle-timeout=" + (idleTimeout == null ? "infinite" : idleTimeout)
        + ", connect-timeout=" + connectTimeout + ", accept-timeout=" + acceptTimeout
        + ", backlog=" + backlog + ", max-message-size=" + maxMessageSize + ")";
  }
}

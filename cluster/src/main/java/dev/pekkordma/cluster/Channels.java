package dev.pekkordma.cluster;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.function.Function;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.stream.javadsl.Flow;
import org.apache.pekko.util.ByteString;

/**
 * The channels open in this member and who listens on each. A frame names its channel by the
 * name's hash (String.hashCode is the same in every JVM), so two names with one hash are refused
 * when the second is opened. Links deliver through it from their own threads.
 */
final class Channels {
  static final class OpenChannel {
    final String name;
    final Codec<?> codec;
    final Set<ActorRef<?>> subscribers = new CopyOnWriteArraySet<>();
    /** Makes the flow each incoming stream runs through; null: to the subscribers. */
    volatile Function<Address, ? extends Flow<?, ?, ?>> streamHandler;

    OpenChannel(String name, Codec<?> codec) {
      this.name = name;
      this.codec = codec;
    }
  }

  private final Map<Integer, OpenChannel> byId = new ConcurrentHashMap<>();

  /** Opens {@code name}, or finds it open with the same codec; fails otherwise. */
  synchronized int open(String name, Codec<?> codec) {
    if (name == null || name.isEmpty()) {
      throw new IllegalArgumentException("a channel needs a name");
    }
    if (codec == null) throw new IllegalArgumentException("channel '" + name + "' needs a codec");
    int id = name.hashCode();
    OpenChannel e = byId.get(id);
    if (e == null) {
      byId.put(id, new OpenChannel(name, codec));
    } else if (!e.name.equals(name)) {
      throw new IllegalArgumentException("channel '" + name + "' has the wire id of channel '"
          + e.name + "' (" + id + "); pick another name");
    } else if (!e.codec.equals(codec)) {
      throw new IllegalArgumentException("channel '" + name + "' is open with another codec ("
          + e.codec + ")");
    }
    return id;
  }

  OpenChannel entry(int id) {
    return byId.get(id);
  }

  void subscribe(int id, ActorRef<?> subscriber) {
    byId.get(id).subscribers.add(subscriber);
  }

  /** Removes the subscriber from every channel. */
  void unsubscribe(ActorRef<?> subscriber) {
    for (OpenChannel e : byId.values()) e.subscribers.remove(subscriber);
  }

  void unsubscribe(int id, ActorRef<?> subscriber) {
    OpenChannel e = byId.get(id);
    if (e != null) e.subscribers.remove(subscriber);
  }

  /**
   * Decodes and hands the message to the channel's subscribers; returns null, or why it could
   * not (naming the member and the channel).
   */
  String deliver(int id, Address from, ByteString bytes) {
    OpenChannel e = byId.get(id);
    if (e == null) {
      return "a message of " + bytes.size() + " bytes from " + from + " for channel id " + id
          + ", which is not open here";
    }
    if (e.subscribers.isEmpty()) {
      return "a message of " + bytes.size() + " bytes from " + from + " on channel '" + e.name
          + "', which has no subscriber";
    }
    Object message;
    try {
      message = e.codec.decode(bytes);
    } catch (RuntimeException | StackOverflowError ex) { // the codec runs on a peer's bytes
      return "a message of " + bytes.size() + " bytes from " + from + " on channel '" + e.name
          + "' does not decode with " + e.codec + ": " + ex;
    }
    deliver(e, from, message);
    return null;
  }

  /** Hands a decoded message to the channel's subscribers. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  static void deliver(OpenChannel e, Address from, Object message) {
    Received<?> r = new Received<>(from, message);
    for (ActorRef s : e.subscribers) s.tell(r);
  }
}

package dev.pekkordma.cluster;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;
import java.net.MalformedURLException;
import org.apache.pekko.actor.ActorPaths;
import org.apache.pekko.actor.Address;
import org.apache.pekko.actor.AddressFromURIString;
import org.apache.pekko.actor.ExtendedActorSystem;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.actor.typed.ActorRefResolver;
import org.apache.pekko.actor.typed.javadsl.Adapter;
import org.apache.pekko.serialization.SerializerWithStringManifest;

/** Binary form of the coordinators' messages: a manifest letter, then the fields in order. */
public final class ProtocolSerializer extends SerializerWithStringManifest {
  static final int IDENTIFIER = 7317;
  private final ExtendedActorSystem system;
  private volatile ActorRefResolver resolver; // an extension: not yet there while remoting starts

  public ProtocolSerializer(ExtendedActorSystem system) {
    this.system = system;
  }

  @Override
  public int identifier() {
    return IDENTIFIER;
  }

  @Override
  public String manifest(Object o) {
    if (o instanceof Protocol.Describe) return "D";
    if (o instanceof Protocol.ConnectToMe) return "C";
    if (o instanceof Endpoint) return "E";
    throw new IllegalArgumentException("not a pekko-rdma cluster message: " + o.getClass());
  }

  @Override
  public byte[] toBinary(Object o) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream(128);
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      if (o instanceof Protocol.Describe d) {
        out.writeUTF(resolver().toSerializationFormat(d.replyTo()));
      } else if (o instanceof Protocol.ConnectToMe c) {
        out.writeLong(c.uid());
      } else if (o instanceof Endpoint e) {
        out.writeInt(e.version()); // first, so that another version still reads this far
        out.writeUTF(e.member().toString());
        out.writeLong(e.uid());
        out.writeUTF(e.host());
        out.writeInt(e.port());
        out.writeInt(e.streamPort());
        out.writeUTF(e.provider());
        out.writeUTF(e.transport());
        out.writeUTF(e.linkLayer());
        out.writeInt(e.maxQpWr());
        out.writeInt(e.maxMessage());
      } else {
        throw new IllegalArgumentException("not a pekko-rdma cluster message: " + o.getClass());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  /**
   * Every byte is another member's: a message decodes only if its fields take exactly the bytes
   * given, and a Describe only if its reply-to is an actor of another system. Anything else fails
   * with a NotSerializableException naming the manifest and what is wrong, which remoting logs
   * with the sender before dropping the message.
   */
  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
    Object message;
    try {
      switch (manifest) {
        case "D":
          message = new Protocol.Describe(replyTo(in.readUTF(), manifest));
          break;
        case "C":
          message = new Protocol.ConnectToMe(in.readLong());
          break;
        case "E": {
          int version = in.readInt();
          message = new Endpoint(AddressFromURIString.parse(in.readUTF()), in.readLong(),
              in.readUTF(), in.readInt(), in.readInt(), in.readUTF(), in.readUTF(), in.readUTF(),
              in.readInt(), in.readInt(), version);
          break;
        }
        default:
          throw refused(manifest, "unknown manifest", null);
      }
      if (in.available() > 0) {
        throw refused(manifest, in.available() + " of its " + bytes.length
            + " bytes are after its fields", null);
      }
    } catch (NotSerializableException e) {
      throw e;
    } catch (EOFException e) {
      throw refused(manifest, "truncated: its " + bytes.length + " bytes end inside its fields",
          e);
    } catch (IOException | RuntimeException e) { // a bad UTF-8 string, address or path
      throw refused(manifest, "malformed: " + e, e);
    }
    return message;
  }

  /** A reply-to must be remote: a path of this system would have it message its own actors. */
  private ActorRef<Endpoint> replyTo(String path, String manifest)
      throws NotSerializableException, MalformedURLException {
    Address at = ActorPaths.fromString(path).address();
    if (!at.hasGlobalScope() || at.equals(system.provider().getDefaultAddress())) {
      throw refused(manifest, "its reply-to " + path + " is not an actor of another member",
          null);
    }
    return resolver().resolveActorRef(path);
  }

  private static NotSerializableException refused(String manifest, String why, Throwable cause) {
    NotSerializableException e = new NotSerializableException("pekko-rdma cluster message '"
        + manifest + "' refused: " + why);
    if (cause != null) e.initCause(cause);
    return e;
  }

  private ActorRefResolver resolver() {
    ActorRefResolver r = resolver;
    if (r == null) {
      r = ActorRefResolver.get(Adapter.toTyped(system));
      resolver = r;
    }
    return r;
  }
}

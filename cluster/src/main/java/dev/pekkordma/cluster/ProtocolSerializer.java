package dev.pekkordma.cluster;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.NotSerializableException;
import java.io.UncheckedIOException;
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

  @Override
  public Object fromBinary(byte[] bytes, String manifest) throws NotSerializableException {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
      switch (manifest) {
        case "D": {
          ActorRef<Endpoint> replyTo = resolver().resolveActorRef(in.readUTF());
          return new Protocol.Describe(replyTo);
        }
        case "C":
          return new Protocol.ConnectToMe(in.readLong());
        case "E": {
          int version = in.readInt();
          return new Endpoint(AddressFromURIString.parse(in.readUTF()), in.readLong(),
              in.readUTF(), in.readInt(), in.readInt(), in.readUTF(), in.readUTF(), in.readUTF(),
              in.readInt(), in.readInt(), version);
        }
        default:
          throw new NotSerializableException("unknown pekko-rdma cluster manifest '" + manifest
              + "'");
      }
    } catch (IOException e) {
      NotSerializableException n = new NotSerializableException("pekko-rdma cluster message '"
          + manifest + "': " + e.getMessage());
      n.initCause(e);
      throw n;
    }
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

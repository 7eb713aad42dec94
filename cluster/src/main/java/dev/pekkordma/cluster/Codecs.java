package dev.pekkordma.cluster;

import java.nio.charset.StandardCharsets;
import org.apache.pekko.util.ByteString;

/** The built-in codecs: one instance each, so that reopening a channel with one matches. */
final class Codecs {
  private Codecs() {}

  static final Codec<ByteString> BYTES = new Codec<>() {
    @Override
    public ByteString encode(ByteString message) {
      return message;
    }

    @Override
    public ByteString decode(ByteString bytes) {
      return bytes;
    }

    @Override
    public String toString() {
      return "Codec.bytes()";
    }
  };

  static final Codec<String> UTF8 = new Codec<>() {
    @Override
    public ByteString encode(String message) {
      return ByteString.fromString(message, StandardCharsets.UTF_8);
    }

    @Override
    public String decode(ByteString bytes) {
      return bytes.decodeString(StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
      return "Codec.utf8()";
    }
  };
}

package dev.pekkordma.samples;

import java.util.ArrayList;
import java.util.List;

/** Compares what the client says it sent with what the server received. */
public final class ChecksumVerifier {
  private ChecksumVerifier() {}

  /** The outcome: {@code ok}, or the list of what differs. */
  public record ChecksumReport(boolean ok, List<String> problems) {
    public String describe() {
      return ok ? "checksum OK" : "MISMATCH: " + String.join("; ", problems);
    }
  }

  public static ChecksumReport verify(long sentBytes, long sentChunks, int sentCrc,
      long receivedBytes, long receivedChunks, int receivedCrc) {
    List<String> problems = new ArrayList<>();
    if (sentBytes != receivedBytes) {
      problems.add("client sent " + sentBytes + " bytes, server received " + receivedBytes);
    }
    if (sentChunks != receivedChunks) {
      problems.add("client sent " + sentChunks + " chunks, server received " + receivedChunks);
    }
    if (sentCrc != receivedCrc) {
      problems.add("CRC32C of the bytes sent " + hex(sentCrc) + " != of the bytes received "
          + hex(receivedCrc));
    }
    return new ChecksumReport(problems.isEmpty(), List.copyOf(problems));
  }

  public static String hex(int crc) {
    return String.format("%08x", crc);
  }
}

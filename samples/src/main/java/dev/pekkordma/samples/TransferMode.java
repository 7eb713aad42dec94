package dev.pekkordma.samples;

/** How the client moves each chunk. */
public enum TransferMode {
  /** RDMA WRITE WITH IMMEDIATE into the server's registered ring; the immediate names the chunk. */
  WRITE,
  /** SEND WITH IMMEDIATE into a receive the server posted on a ring slot. */
  SEND;

  public static TransferMode parse(String s) {
    for (TransferMode m : values()) {
      if (m.name().equalsIgnoreCase(s)) return m;
    }
    throw new IllegalArgumentException("'" + s + "' is not a mode; use write or send");
  }
}

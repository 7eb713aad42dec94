package dev.pekkordma.samples.perf;

import dev.pekkordma.verbs.WrOpcode;
import java.util.Locale;

/** The six tests, named as perftest's programs are (without the {@code ib_}). */
public enum PerfTest {
  SEND_BW(Verb.SEND, true),
  WRITE_BW(Verb.WRITE, true),
  READ_BW(Verb.READ, true),
  SEND_LAT(Verb.SEND, false),
  WRITE_LAT(Verb.WRITE, false),
  READ_LAT(Verb.READ, false);

  /** The operation a test measures. */
  public enum Verb {
    SEND(WrOpcode.SEND, "Send"),
    WRITE(WrOpcode.RDMA_WRITE, "RDMA_Write"),
    READ(WrOpcode.RDMA_READ, "RDMA_Read");

    public final WrOpcode opcode;
    final String title;

    Verb(WrOpcode opcode, String title) {
      this.opcode = opcode;
      this.title = title;
    }
  }

  private final Verb verb;
  private final boolean bandwidth;

  PerfTest(Verb verb, boolean bandwidth) {
    this.verb = verb;
    this.bandwidth = bandwidth;
  }

  public Verb verb() {
    return verb;
  }

  /** A bandwidth test; else a latency test. */
  public boolean bandwidth() {
    return bandwidth;
  }

  /** {@code write_bw}: as typed on the command line. */
  public String label() {
    return name().toLowerCase(Locale.ROOT);
  }

  /** perftest's banner title, e.g. {@code RDMA_Write BW Test}. */
  public String title() {
    return title(false);
  }

  /** perftest's banner title, {@code RDMA_Write Bidirectional BW Test} if both sides send. */
  public String title(boolean bidirectional) {
    return verb.title + (bandwidth ? (bidirectional ? " Bidirectional" : "") + " BW Test"
        : " Latency Test");
  }
}

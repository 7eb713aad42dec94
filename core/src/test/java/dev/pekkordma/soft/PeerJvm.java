package dev.pekkordma.soft;

import dev.pekkordma.conformance.PeerProcess;
import dev.pekkordma.verbs.Gid;
import java.io.IOException;
import java.time.Duration;

/** A {@link SoftPeerMain} process, and what it said about itself. */
final class PeerJvm implements AutoCloseable {
  static final Duration STARTUP = Duration.ofSeconds(120);
  final PeerProcess process;
  final Gid gid;
  final int qpn;
  final long address;
  final int rkey;

  private PeerJvm(PeerProcess process) {
    this.process = process;
    String[] w = process.awaitLine("PEER ", STARTUP).split(" ");
    gid = Gid.parse(w[0]);
    qpn = Integer.parseInt(w[1]);
    address = Long.parseLong(w[2]);
    rkey = Integer.parseInt(w[3]);
  }

  /** Starts one with {@code config} (HOCON) added to the soft provider's. */
  static PeerJvm start(String config) throws IOException {
    return start(PeerProcess.TEST_JVM, config);
  }

  static PeerJvm start(java.util.List<String> jvmOptions, String config) throws IOException {
    PeerProcess p = PeerProcess.start(jvmOptions, SoftPeerMain.class, config);
    try {
      return new PeerJvm(p);
    } catch (RuntimeException | Error e) {
      p.close();
      throw e;
    }
  }

  /** Where its fabric answers, from its GID. */
  FabricAddress fabric() {
    byte[] g = gid.toBytes();
    return new FabricAddress(new byte[] {g[8], g[9], g[10], g[11]},
        ((g[12] & 0xff) << 8) | (g[13] & 0xff));
  }

  void connect(Gid to, int qpn, int timeout, int retry) {
    process.send("CONNECT " + to + " " + qpn + " " + timeout + " " + retry);
    process.awaitLine("CONNECTED", Duration.ofSeconds(30));
  }

  /** A command, and the rest of the line starting with {@code answer}. */
  String ask(String command, String answer, Duration within) {
    process.send(command);
    return process.awaitLine(answer, within);
  }

  @Override
  public void close() {
    process.close();
  }
}

package dev.pekkordma.samples;

import dev.pekkordma.samples.cluster.ClusterTransfer;
import dev.pekkordma.samples.doctor.Doctor;
import dev.pekkordma.samples.echo.EchoMain;
import dev.pekkordma.samples.interop.RcPingPong;
import dev.pekkordma.samples.interop.Rping;
import dev.pekkordma.samples.perf.RdmaPerf;
import dev.pekkordma.samples.streams.StreamEcho;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Unmatched;

/**
 * {@code pekko-rdma}: the one command in front of every program, {@code pekko-rdma COMMAND
 * [ARG...]}, each command with its own options and {@code --help}. {@code mvn install} builds it
 * into {@code samples/target/pekko-rdma} (bin/pekko-rdma and its lib).
 */
@Command(name = "pekko-rdma", mixinStandardHelpOptions = true,
    description = "pekko-rdma's programs. COMMAND --help for each one's options.",
    footer = {"", "Commands:",
        "  doctor        which provider serves here and why; devices, GIDs, problems",
        "  transfer      move data over RDMA, checksum verified (demo, server, client)",
        "  perf          perftest's bandwidth and latency tests (write_bw, send_lat, ...)",
        "  pingpong      ibv_rc_pingpong's counterpart, wire-compatible with it",
        "  rping         rping's counterpart over the RDMA CM, wire-compatible with it",
        "  echo          the CM echo server and client on the actors",
        "  stream-echo   an echo over RdmaStreams between two JVMs (server, client)",
        "  cluster-demo  a cluster member that streams chunks to the others over RDMA",
        "", "Each command exits as the table below says."})
public final class Launcher implements Callable<Integer> {
  /** A program's entry: its arguments in, its exit code out. */
  interface Program {
    int run(String[] args, PrintStream out, PrintStream err);
  }

  static final Map<String, Program> PROGRAMS = new LinkedHashMap<>();

  static {
    PROGRAMS.put("doctor", Doctor::run);
    PROGRAMS.put("transfer", BulkTransfer::execute);
    PROGRAMS.put("perf", RdmaPerf::execute);
    PROGRAMS.put("pingpong", RcPingPong::execute);
    PROGRAMS.put("rping", Rping::execute);
    PROGRAMS.put("echo", EchoMain::run);
    PROGRAMS.put("stream-echo", StreamEcho::run);
    PROGRAMS.put("cluster-demo", ClusterTransfer::run);
  }

  private final PrintStream out;
  private final PrintStream err;

  @Parameters(index = "0", paramLabel = "COMMAND", description = "One of: ${COMPLETION-CANDIDATES}",
      completionCandidates = Names.class)
  String command;

  @Unmatched
  List<String> rest = new ArrayList<>();

  Launcher(PrintStream out, PrintStream err) {
    this.out = out;
    this.err = err;
  }

  static final class Names extends ArrayList<String> {
    Names() {
      super(PROGRAMS.keySet());
    }
  }

  public static void main(String[] args) {
    System.exit(execute(args, System.out, System.err));
  }

  public static int execute(String[] args, PrintStream out, PrintStream err) {
    CommandLine cl = new CommandLine(new Launcher(out, err));
    cl.setStopAtPositional(true); // what follows COMMAND is the command's
    SampleCommandLine.conventions(cl, out, err);
    return cl.execute(args);
  }

  @Override
  public Integer call() {
    Program p = PROGRAMS.get(command);
    if (p == null) {
      err.println("pekko-rdma: unknown command '" + command + "'; commands: "
          + String.join(", ", PROGRAMS.keySet()));
      err.println("Try 'pekko-rdma --help' for more information.");
      return 2;
    }
    return p.run(rest.toArray(new String[0]), out, err);
  }
}

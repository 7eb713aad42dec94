package dev.pekkordma.samples.perf;

import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.QueuePair;
import dev.pekkordma.verbs.RdmaProvider;
import java.io.PrintStream;
import java.util.Locale;

/** The lines before the results, laid out as perftest's, with what this run is made of. */
final class Banner {
  static final String RULE =
      "---------------------------------------------------------------------------------------";

  private Banner() {}

  static void print(PrintStream out, RdmaProvider provider, String device, PerfRun.Settings s,
      PortAttributes port, Gid gid, String connection, PerfSide local, QueuePair localQp,
      QueuePair remoteQp) {
    PerfSpec spec = s.spec();
    PerfTest t = spec.test();
    out.println(RULE);
    out.println("                    " + t.title());
    out.printf(Locale.ROOT, " Provider        : %s%n", provider.name());
    out.printf(Locale.ROOT, " Device          : %s%n", device);
    out.printf(Locale.ROOT, " Connection      : %s%n", connection);
    out.println(" Number of qps   : 1\t\tTransport type : IB");
    out.println(" Connection type : RC\t\tUsing SRQ      : OFF");
    if (t.bandwidth()) {
      out.printf(Locale.ROOT, " TX depth        : %d%n", spec.txDepth());
    }
    if (t.verb() == PerfTest.Verb.SEND) {
      out.printf(Locale.ROOT, " RX depth        : %d%n", spec.rxDepth());
    }
    out.printf(Locale.ROOT, " CQ Moderation   : %d%n", spec.cqModeration());
    if (t.verb() == PerfTest.Verb.READ) {
      out.printf(Locale.ROOT, " Outstand reads  : %d%n", localQp.query().maxRdAtomic());
    }
    out.printf(Locale.ROOT, " Mtu             : %d[B]%n", port.activeMtu().bytes);
    out.printf(Locale.ROOT, " Link type       : %s%n", port.linkLayer());
    if (gid != null) {
      out.printf(Locale.ROOT, " GID index       : %d (%s)%n", s.gidIndex(), gid);
    }
    out.printf(Locale.ROOT, " Max inline data : %d[B]%n", spec.inlineSize());
    out.printf(Locale.ROOT, " Iterations      : %d per size, after %s%n", spec.iterations(),
        spec.warmup() == PerfSpec.AUTO_WARMUP ? "a warm-up (--warmup)"
            : spec.warmup() + " warm-up");
    out.println(RULE);
    out.printf(Locale.ROOT, " local address: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x%n",
        localQp.qpNum(), 0, local.mr.rkey(), local.mr.address());
    if (local.remote != null) {
      int remoteQpn = remoteQp != null ? remoteQp.qpNum() : localQp.query().destQpNum();
      out.printf(Locale.ROOT, " remote address: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x%n",
          remoteQpn, 0, local.remote.rkey(), local.remote.address());
    }
    out.println(RULE);
    out.flush();
  }
}

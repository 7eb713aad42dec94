package dev.pekkordma.samples.perf;

import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.PortAttributes;
import dev.pekkordma.verbs.RdmaProvider;
import java.io.PrintStream;
import java.util.Locale;

/** The lines before the results, laid out as perftest's, with what this run is made of. */
final class Banner {
  static final String RULE =
      "---------------------------------------------------------------------------------------";

  private Banner() {}

  /** {@code local}: the measuring side, its QPs connected, its peer's QP numbers known. */
  static void print(PrintStream out, RdmaProvider provider, String device, PerfRun.PerfSettings s,
      PortAttributes port, Gid gid, String connection, PerfSide local) {
    PerfSpec spec = s.spec();
    PerfTest t = spec.test();
    out.println(RULE);
    out.println("                    " + t.title(spec.bidirectional()));
    out.printf(Locale.ROOT, " Provider        : %s%n", provider.name());
    out.printf(Locale.ROOT, " Device          : %s%n", device);
    out.printf(Locale.ROOT, " Connection      : %s%n", connection);
    out.printf(Locale.ROOT, " Number of qps   : %d\t\tTransport type : IB%n", spec.qps());
    out.printf(Locale.ROOT, " Connection type : %s\t\tUsing SRQ      : OFF%n", spec.connection());
    if (t.bandwidth()) {
      out.printf(Locale.ROOT, " TX depth        : %d%n", spec.txDepth());
    }
    if (t.verb() == PerfTest.Verb.SEND) {
      out.printf(Locale.ROOT, " RX depth        : %d%n", spec.rxDepth());
    }
    out.printf(Locale.ROOT, " CQ Moderation   : %d%n", spec.cqModeration());
    if (t.verb() == PerfTest.Verb.READ) {
      out.printf(Locale.ROOT, " Outstand reads  : %d%n", local.qp.query().maxRdAtomic());
    }
    out.printf(Locale.ROOT, " Mtu             : %d[B]%n", port.activeMtu().bytes);
    out.printf(Locale.ROOT, " Link type       : %s%n", port.linkLayer());
    if (gid != null) {
      out.printf(Locale.ROOT, " GID index       : %d (%s)%n", s.gidIndex(), gid);
    }
    out.printf(Locale.ROOT, " Max inline data : %d[B]%n", spec.inlineSize());
    if (spec.timed()) {
      out.printf(Locale.ROOT, " Duration        : %d[sec] per size, measured from %d[sec] to"
          + " %d[sec] (margin %d[sec])%n", spec.duration(), spec.margin(),
          spec.duration() - spec.margin(), spec.margin());
      out.println(" WARNING: BW peak won't be measured in this run.");
    } else {
      out.printf(Locale.ROOT, " Iterations      : %d per size%s, after %s%n", spec.iterations(),
          spec.qps() > 1 ? " and QP" : "", spec.warmup() == PerfSpec.AUTO_WARMUP
              ? "a warm-up (--warmup)" : spec.warmup() + " warm-up");
    }
    out.println(RULE);
    for (int k = 0; k < spec.qps(); k++) {
      out.printf(Locale.ROOT, " local address: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x%n",
          local.qps[k].qpNum(), 0, local.mr.rkey(), local.mr.address());
    }
    if (local.remote != null) {
      for (int k = 0; k < spec.qps(); k++) {
        int remoteQpn = local.remoteQpns[k] != 0 ? local.remoteQpns[k]
            : local.qps[k].query().destQpNum();
        out.printf(Locale.ROOT,
            " remote address: QPN 0x%04x PSN 0x%06x RKey 0x%08x VAddr 0x%016x%n", remoteQpn, 0,
            local.remote.rkey(), local.remote.address());
      }
    }
    out.println(RULE);
    out.flush();
  }
}

package dev.pekkordma.samples.cluster;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A member stopped (SIGSTOP) while data flows to it: the RDMA connection to it fails within its
 * QPs' transport timeout, and the member sending to it reports the disconnection naming the
 * member and why (no answer from it), before the cluster's downing removes it.
 */
class StoppedMemberTest {
  static final Duration WAIT = Duration.ofSeconds(60);

  @Test
  void theConnectionToAStoppedMemberEndsNamingItAndWhy() throws Exception {
    Assumptions.assumeFalse("native".equals(System.getProperty("pekko-rdma.provider")),
        "the error cause is the soft provider's");
    // the downing waits long enough for the transport timeout to speak first
    List<String> slowDowning = List.of("-Dpekko.cluster.split-brain-resolver.stable-after=30s");
    try (MemberProcess p1 = MemberProcess.start(slowDowning, "p1", "--port", "0")) {
      String a1 = address(p1.await("UP ", WAIT));
      try (MemberProcess p2 = MemberProcess.start(slowDowning, "p2", "--port", "0", "--seed",
          a1.substring(a1.indexOf('@') + 1))) {
        String a2 = address(p2.await("UP ", WAIT));
        p1.await("EVENT Connected member=" + a2, WAIT);
        p1.await("chunks from " + a2, l -> l.startsWith("STATS ") && l.contains(a2), WAIT);
        p2.signal("STOP");
        try {
          String line = p1.await("EVENT Disconnected member=" + a2,
              l -> l.startsWith("EVENT Disconnected member=" + a2), WAIT);
          assertTrue(line.contains("no answer") && line.contains("RETRY_EXC_ERR"), line);
        } finally {
          p2.signal("CONT");
        }
      }
    }
  }

  private static String address(String upLine) {
    java.util.regex.Matcher m = java.util.regex.Pattern.compile("UP address=(\\S+)")
        .matcher(upLine);
    assertTrue(m.find(), upLine);
    return m.group(1);
  }
}

package dev.pekkordma.samples.cluster;

import static org.junit.jupiter.api.Assertions.*;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The sample as three JVM processes on one machine, each step building on the one before: they
 * join and move data; one is killed (SIGKILL) and the others free what they had for it, every
 * chunk they sent it accounted for; it comes back on its address and is connected again; one
 * leaves and is removed.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ProcessesTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  static MemberProcess p1;
  static MemberProcess p2;
  static MemberProcess p3;
  static String a1;
  static String a2;
  static String a3;
  /** p1's and p2's resources with one peer connected. */
  static String onePeer1;
  static String onePeer2;
  /** The steps done so far: a step runs only on the state the ones before it made. */
  static int done;

  private static void after(int step) {
    Assumptions.assumeTrue(done == step, "step " + (done + 1) + " failed");
  }

  @AfterAll
  static void stop() throws InterruptedException {
    for (MemberProcess p : new MemberProcess[] {p3, p2, p1}) {
      if (p != null) p.close();
    }
  }

  private static String address(String upLine) {
    Matcher m = Pattern.compile("UP address=(\\S+)").matcher(upLine);
    assertTrue(m.find(), upLine);
    return m.group(1);
  }

  private static String seed(String address) {
    return address.substring(address.indexOf('@') + 1);
  }

  private static void connected(MemberProcess p, String member) {
    p.await("EVENT Connected member=" + member, WAIT);
  }

  /** Waits for a STATS line saying chunks came from every one of {@code members}. */
  private static void receiving(MemberProcess p, String... members) {
    p.await("chunks from " + String.join(", ", members), l -> {
      if (!l.startsWith("STATS ")) return false;
      assertTrue(l.contains(" bad=0 "), p.name + ": " + l);
      for (String m : members) if (!l.contains(m)) return false;
      return true;
    }, WAIT);
  }

  @Test
  @Order(1)
  void membersJoinAndMoveData() throws Exception {
    after(0);
    p1 = MemberProcess.start("p1", "--port", "0");
    a1 = address(p1.await("UP ", WAIT));
    p2 = MemberProcess.start("p2", "--port", "0", "--seed", seed(a1));
    a2 = address(p2.await("UP ", WAIT));
    connected(p1, a2);
    connected(p2, a1);
    onePeer1 = p1.resources(WAIT);
    onePeer2 = p2.resources(WAIT);

    p3 = MemberProcess.start("p3", "--port", "0", "--seed", seed(a1));
    a3 = address(p3.await("UP ", WAIT));
    connected(p1, a3);
    connected(p2, a3);
    connected(p3, a1);
    connected(p3, a2);
    receiving(p1, a2, a3);
    receiving(p2, a1, a3);
    receiving(p3, a1, a2);
    done = 1;
  }

  @Test
  @Order(2)
  void aKilledMemberIsRemovedAndEveryChunkSentToItIsAccountedFor() throws Exception {
    after(1);
    p3.kill();
    for (MemberProcess p : new MemberProcess[] {p1, p2}) {
      p.await("EVENT Removed member=" + a3, WAIT);
      String sender = p.await("SENDER to=" + a3, WAIT);
      Matcher m = Pattern.compile("ok=(\\d+) failed=(\\d+) pending=(\\d+)").matcher(sender);
      assertTrue(m.find(), sender);
      assertTrue(Long.parseLong(m.group(1)) > 0, p.name + " delivered some: " + sender);
      assertTrue(Long.parseLong(m.group(2)) > 0, p.name + " saw failures: " + sender);
      assertEquals("0", m.group(3), p.name + " left nothing unreported: " + sender);
    }
    assertEquals(onePeer1, p1.awaitResources(onePeer1, WAIT), "p1 freed what it had for p3");
    assertEquals(onePeer2, p2.awaitResources(onePeer2, WAIT), "p2 freed what it had for p3");
    done = 2;
  }

  @Test
  @Order(3)
  void aRestartedMemberIsConnectedAgain() throws Exception {
    after(2);
    p3 = MemberProcess.start("p3-again", "--port", a3.substring(a3.lastIndexOf(':') + 1),
        "--seed", seed(a1));
    assertEquals(a3, address(p3.await("UP ", WAIT)), "the same address, a new incarnation");
    connected(p1, a3);
    connected(p2, a3);
    receiving(p3, a1, a2);
    receiving(p1, a2, a3);
    done = 3;
  }

  @Test
  @Order(4)
  void aLeavingMemberIsRemoved() throws Exception {
    after(3);
    p2.command("leave");
    assertEquals(0, p2.awaitExit(WAIT), "a member that left exits cleanly");
    for (MemberProcess p : new MemberProcess[] {p1, p3}) {
      p.await("EVENT Removed member=" + a2, WAIT);
      String sender = p.await("SENDER to=" + a2, WAIT);
      assertTrue(sender.endsWith("pending=0"), sender);
    }
    // one peer left each: the same resources as with one peer before
    assertEquals(onePeer1, p1.awaitResources(onePeer1, WAIT));
    done = 4;
  }
}

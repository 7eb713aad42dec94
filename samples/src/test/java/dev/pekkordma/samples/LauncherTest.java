package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The one command: each program behind its name, their exit codes passed on. */
class LauncherTest {
  record Run(int exit, String out, String err) {}

  private static Run launch(String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    int exit = Launcher.execute(args, new PrintStream(out, true, StandardCharsets.UTF_8),
        new PrintStream(err, true, StandardCharsets.UTF_8));
    return new Run(exit, out.toString(StandardCharsets.UTF_8),
        err.toString(StandardCharsets.UTF_8));
  }

  @Test
  void helpListsEveryCommand() {
    Run r = launch("--help");
    assertEquals(0, r.exit());
    for (String c : Launcher.PROGRAMS.keySet()) assertTrue(r.out().contains(c), c + ":\n" + r.out());
  }

  @Test
  void everyCommandAnswersItsOwnHelp() {
    for (String c : Launcher.PROGRAMS.keySet()) {
      Run r = launch(c, "--help");
      assertEquals(0, r.exit(), c + ": " + r.err());
      assertTrue(r.out().startsWith("Usage: pekko-rdma " + c + " "), c + ":\n" + r.out());
      assertTrue(r.out().contains("Exit status:") && r.out().contains("2   bad input"),
          c + ":\n" + r.out());
    }
  }

  @Test
  void everyCommandAndTheLauncherSayTheBuildsVersion() {
    String version = BuildVersion.version();
    assertTrue(version.matches("\\d+\\.\\d+\\.\\d+.*"), version);
    assertEquals("pekko-rdma " + version, launch("--version").out().trim());
    for (String c : Launcher.PROGRAMS.keySet()) {
      Run r = launch(c, "--version");
      assertEquals(0, r.exit(), c + ": " + r.err());
      assertEquals("pekko-rdma " + version, r.out().trim(), c);
    }
  }

  @Test
  void aParseErrorIsOneLineAndAHint() {
    for (String c : Launcher.PROGRAMS.keySet()) {
      Run r = launch(c, "--no-such-option");
      assertEquals(2, r.exit(), c + ": " + r.err());
      assertEquals(List.of("pekko-rdma " + c + ": Unknown option: '--no-such-option'",
          "Try 'pekko-rdma " + c + " --help' for more information."), r.err().lines().toList(), c);
      assertEquals("", r.out(), c);
    }
  }

  @Test
  void aHostThatDoesNotResolveIsAFailureAtRunTime() {
    Run r = launch("transfer", "client", "--provider", "soft", "--connect",
        "no-such-host.invalid:18515");
    assertEquals(1, r.exit(), r.err());
    assertTrue(r.err().contains("--connect: unknown host 'no-such-host.invalid'"), r.err());
  }

  @Test
  void aBadSettingIsBadInput() {
    String before = System.getProperty("pekko-rdma.provider");
    System.setProperty("pekko-rdma.provider", "fast");
    com.typesafe.config.ConfigFactory.invalidateCaches();
    try {
      Run r = launch("doctor");
      assertEquals(2, r.exit(), r.err());
      assertTrue(r.err().contains("pekko-rdma.provider"), r.err());
    } finally {
      if (before == null) System.clearProperty("pekko-rdma.provider");
      else System.setProperty("pekko-rdma.provider", before);
      com.typesafe.config.ConfigFactory.invalidateCaches();
    }
  }

  @Test
  void aCommandsExitCodeIsTheLaunchers() {
    assertEquals(0, launch("doctor", "--provider", "soft").exit());
    assertEquals(2, launch("doctor", "--provider", "bogus").exit());
    assertEquals(0, launch("echo", "-n", "20", "--provider", "soft").exit());
  }

  @Test
  void anUnknownOrMissingCommandIsBadInput() {
    Run unknown = launch("nope");
    assertEquals(2, unknown.exit());
    assertTrue(unknown.err().contains("unknown command 'nope'"), unknown.err());
    assertEquals(2, launch().exit());
  }
}

package dev.pekkordma.samples;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
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
      assertTrue(r.out().startsWith("Usage: "), c + ":\n" + r.out());
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

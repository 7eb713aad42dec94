package dev.pekkordma.samples;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The sample programs' command line, shared so that they all fail alike: a {@link BadOption}
 * prints "NAME: message" and a hint, exit code 2; any other failure prints "NAME: FAILED: " and
 * the program's own description of it (with the stack trace when the command is {@link
 * Verbose}), exit code 1. Host names and HOST:PORT values are read here too.
 */
public final class SampleCommandLine {
  private SampleCommandLine() {}

  /** Asks for stack traces: implemented by a command or by one of its mixins. */
  public interface Verbose {
    boolean verbose();
  }

  /**
   * Runs {@code args} on {@code command} (its {@code @Command} name is the program's name) with
   * {@code subcommands} added under their own names, and returns the exit code.
   */
  public static int execute(String[] args, PrintStream out, PrintStream err,
      Function<Throwable, String> describe, Object command, Object... subcommands) {
    CommandLine cl = new CommandLine(command);
    for (Object subcommand : subcommands) cl.addSubcommand(subcommand);
    String name = cl.getCommandName();
    cl.setCaseInsensitiveEnumValuesAllowed(true);
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    cl.setExecutionExceptionHandler((e, cmd, parsed) -> {
      if (e instanceof BadOption) {
        err.println(name + ": " + e.getMessage());
        err.println("Try '" + cmd.getCommandSpec().qualifiedName() + " --help' for more information.");
        return 2;
      }
      err.println(name + ": FAILED: " + describe.apply(e));
      if (verbose(cmd.getCommandSpec())) e.printStackTrace(err);
      return 1;
    });
    return cl.execute(args);
  }

  private static boolean verbose(CommandSpec spec) {
    if (spec.userObject() instanceof Verbose v) return v.verbose();
    // the subcommands share their options through mixins
    for (CommandSpec mixin : spec.mixins().values()) {
      if (mixin.userObject() instanceof Verbose v) return v.verbose();
    }
    return false;
  }

  /** A failure the program did not expect: its class too, since the message may not say much. */
  public static String withClassName(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null ? "" : ": " + m);
  }

  /** {@code host}, named in the message by {@code option} when it is not a known host. */
  public static InetAddress resolve(String host, String option) {
    try {
      return InetAddress.getByName(host);
    } catch (UnknownHostException e) {
      throw new BadOption(option + ": unknown host '" + host + "'");
    }
  }

  /** {@code host:port} or {@code [v6]:port}. */
  public static final class HostPort implements CommandLine.ITypeConverter<InetSocketAddress> {
    @Override
    public InetSocketAddress convert(String value) {
      int colon = value.lastIndexOf(':');
      if (colon <= 0 || colon == value.length() - 1) {
        throw new CommandLine.TypeConversionException("'" + value + "' is not HOST:PORT");
      }
      String host = value.substring(0, colon);
      if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
      int port;
      try {
        port = Integer.parseInt(value.substring(colon + 1));
      } catch (NumberFormatException e) {
        throw new CommandLine.TypeConversionException("'" + value + "': the port is not a number");
      }
      if (port < 0 || port > 65535) {
        throw new CommandLine.TypeConversionException("'" + value + "': port out of range");
      }
      InetSocketAddress a = new InetSocketAddress(host, port);
      if (a.isUnresolved()) {
        throw new CommandLine.TypeConversionException("'" + value + "': unknown host " + host);
      }
      return a;
    }
  }
}

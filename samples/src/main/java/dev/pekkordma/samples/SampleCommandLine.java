package dev.pekkordma.samples;

import com.typesafe.config.ConfigException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The programs' command line, shared so that they all behave alike: each is named as it is typed
 * ({@code pekko-rdma transfer}), answers {@code --version} with the build's version, and says in
 * its {@code --help} the one table of exit codes ({@link #EXIT_CODES}). Bad input (a parse error,
 * a {@link BadOption}, a bad setting) prints "NAME: message" and a hint, exit code 2; any other
 * failure, an unknown host among them, prints "NAME: FAILED: " and the program's own description
 * of it with its causes (the stack trace too when the command is {@link Verbose}), exit code 1.
 * Host names and HOST:PORT values are read here too.
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
    conventions(cl, out, err);
    cl.setExecutionExceptionHandler((thrown, cmd, parsed) -> {
      Throwable e = unwrapped(thrown);
      Throwable badInput = badInput(e);
      if (badInput != null) return badInput(err, cmd, badInput.getMessage());
      err.println(name + ": FAILED: " + (e instanceof RunFailure ? e.getMessage()
          : describe.apply(e) + causes(e)));
      if (verbose(cmd.getCommandSpec())) e.printStackTrace(err);
      return 1;
    });
    return cl.execute(args);
  }

  /** What a future's get() wrapped: the failure itself says more than "ExecutionException". */
  private static Throwable unwrapped(Throwable e) {
    while ((e instanceof java.util.concurrent.ExecutionException
        || e instanceof java.util.concurrent.CompletionException) && e.getCause() != null) {
      e = e.getCause();
    }
    return e;
  }

  /** The exit codes of every program, stated in each one's --help. */
  public static final Map<String, String> EXIT_CODES = exitCodes();

  private static Map<String, String> exitCodes() {
    Map<String, String> m = new LinkedHashMap<>();
    m.put("0", "done, all well");
    m.put("1", "failed at run time (a host that does not resolve, a peer, a device, a check)");
    m.put("2", "bad input (an option, an argument or a setting)");
    return Collections.unmodifiableMap(m);
  }

  /**
   * What every program shares, applied to {@code cl} and its subcommands: the build's version,
   * the exit codes in --help, and a parse error as one line and a hint (exit code 2).
   */
  static void conventions(CommandLine cl, PrintStream out, PrintStream err) {
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    cl.setParameterExceptionHandler((e, args) -> badInput(err, e.getCommandLine(), e.getMessage()));
    describeAlike(cl);
  }

  private static void describeAlike(CommandLine cl) {
    CommandSpec spec = cl.getCommandSpec();
    spec.versionProvider(BuildVersion.INSTANCE);
    spec.usageMessage().exitCodeListHeading("%nExit status:%n").exitCodeList(EXIT_CODES);
    for (CommandLine sub : cl.getSubcommands().values()) describeAlike(sub);
  }

  private static int badInput(PrintStream err, CommandLine cmd, String message) {
    String name = cmd.getCommandSpec().qualifiedName();
    err.println(name + ": " + message);
    err.println("Try '" + name + " --help' for more information.");
    return 2;
  }

  /** The bad input behind {@code e} (a BadOption or a setting that is wrong), or null. */
  private static Throwable badInput(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (t instanceof BadOption || t instanceof ConfigException) return t;
    }
    return null;
  }

  /** "; caused by X: why" for each cause whose message {@code e}'s does not already carry. */
  static String causes(Throwable e) {
    StringBuilder b = new StringBuilder();
    String said = String.valueOf(e.getMessage());
    for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      String m = c.getMessage();
      if (m != null && said.contains(m)) continue;
      b.append("; caused by ").append(withClassName(c));
      said += " " + m;
    }
    return b.toString();
  }

  /**
   * A failure at run time whose message says it all (exit code 1, printed as it is): a host that
   * does not resolve, say.
   */
  public static final class RunFailure extends RuntimeException {
    public RunFailure(String message) {
      super(message);
    }
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

  /**
   * {@code host}, named in the message by {@code option} when it does not resolve: a failure at
   * run time (DNS may answer differently a moment later), not bad input.
   */
  public static InetAddress resolve(String host, String option) {
    try {
      return InetAddress.getByName(host);
    } catch (UnknownHostException e) {
      throw new RunFailure(option + ": unknown host '" + host + "'");
    }
  }

  /** {@code address} resolved, or a {@link RunFailure} naming {@code option}. */
  public static InetSocketAddress resolve(InetSocketAddress address, String option) {
    if (!address.isUnresolved()) return address;
    return new InetSocketAddress(resolve(address.getHostString(), option), address.getPort());
  }

  /**
   * {@code host:port} or {@code [v6]:port}; a name is resolved when the program uses it ({@link
   * #resolve(InetSocketAddress, String)}), so that one that does not resolve is a failure at run
   * time.
   */
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
      return InetSocketAddress.createUnresolved(host, port);
    }
  }
}

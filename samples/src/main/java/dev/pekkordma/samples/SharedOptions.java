package dev.pekkordma.samples;

import dev.pekkordma.verbs.RdmaProvider;
import java.net.InetSocketAddress;
import java.time.Duration;
import picocli.CommandLine.Option;

/** The option blocks several sample programs share, each written once, as picocli mixins. */
public final class SharedOptions {
  /** Where a server listens and a client connects unless told otherwise. */
  public static final String DEFAULT_ADDRESS = "127.0.0.1:18515";

  private SharedOptions() {}

  /** {@code --provider}: auto, soft or native over the configured default. */
  public static final class ProviderChoice {
    @Option(names = "--provider", paramLabel = "NAME",
        description = "auto, soft or native: overrides pekko-rdma.provider from the config.")
    String name;

    /** Fails naming the option when the name is none of them. */
    public void check() {
      Providers.check(name);
    }

    public RdmaProvider load() {
      return Providers.load(name);
    }
  }

  /** A server's {@code --bind} and {@code --accept-timeout}. */
  public static final class Listen {
    @Option(names = "--bind", paramLabel = "HOST:PORT", defaultValue = DEFAULT_ADDRESS,
        converter = SampleCommandLine.HostPort.class,
        description = "Address to listen on (default: ${DEFAULT-VALUE}).")
    InetSocketAddress bind;

    @Option(names = "--accept-timeout", paramLabel = "SECONDS", defaultValue = "300",
        description = "Give up when no client came in this long (default: ${DEFAULT-VALUE}).")
    int acceptTimeoutSeconds;

    /** The address, resolved (a name that does not resolve fails the run, naming --bind). */
    public InetSocketAddress address() {
      return SampleCommandLine.resolve(bind, "--bind");
    }

    /** The accept timeout, which must be positive. */
    public Duration acceptTimeout() {
      if (acceptTimeoutSeconds <= 0) throw new BadOption("--accept-timeout must be positive");
      return Duration.ofSeconds(acceptTimeoutSeconds);
    }
  }

  /** A client's {@code --connect}. */
  public static final class ConnectTarget {
    @Option(names = "--connect", paramLabel = "HOST:PORT", defaultValue = DEFAULT_ADDRESS,
        converter = SampleCommandLine.HostPort.class,
        description = "The server's address (default: ${DEFAULT-VALUE}).")
    InetSocketAddress connect;

    /** The address, resolved (a name that does not resolve fails the run, naming --connect). */
    public InetSocketAddress address() {
      return SampleCommandLine.resolve(connect, "--connect");
    }
  }
}

package dev.pekkordma.samples;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviders;
import java.util.Map;

/** The samples' {@code --provider} option: auto, soft or native over the configured default. */
public final class Providers {
  private Providers() {}

  /** Fails naming the option unless {@code name} is null (the config decides) or a provider. */
  public static void check(String name) {
    if (name != null && !name.equals("auto") && !name.equals("soft") && !name.equals("native")) {
      throw new BadOption("--provider must be auto, soft or native, was '" + name + "'");
    }
  }

  /** The provider {@code name} picks, or the config's ({@code pekko-rdma.provider}) for null. */
  public static RdmaProvider load(String name) {
    check(name);
    Config config = ConfigFactory.load();
    if (name != null) {
      config = ConfigFactory.parseMap(Map.of("pekko-rdma.provider", name)).withFallback(config);
    }
    return RdmaProviders.load(config);
  }
}

package dev.pekkordma.verbs;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/** Picks and creates the provider named by {@code pekko-rdma.provider}: auto, native or soft. */
public final class RdmaProviders {
  private RdmaProviders() {}

  /** From the default config (application.conf over the jars' reference.conf). */
  public static RdmaProvider load() {
    return load(ConfigFactory.load());
  }

  public static RdmaProvider load(Config config) {
    RdmaSettings settings = RdmaSettings.from(config);
    Config lib = config.getConfig(RdmaSettings.ROOT);
    List<RdmaProviderFactory> factories = new ArrayList<>();
    ServiceLoader.load(RdmaProviderFactory.class).forEach(factories::add);
    switch (settings.provider()) {
      case "soft":
        return find(factories, "soft").create(lib);
      case "native": {
        RdmaProviderFactory f = find(factories, "native");
        if (!f.devicesPresent()) {
          throw new RdmaException("ibv_get_device_list", RdmaException.ENODEV,
              RdmaSettings.ROOT + ".provider = native, but " + f.whyUnavailable());
        }
        return f.create(lib);
      }
      default: { // auto
        for (RdmaProviderFactory f : factories) {
          if (f.name().equals("native") && f.devicesPresent()) return f.create(lib);
        }
        return find(factories, "soft").create(lib);
      }
    }
  }

  private static RdmaProviderFactory find(List<RdmaProviderFactory> factories, String name) {
    for (RdmaProviderFactory f : factories) {
      if (f.name().equals(name)) return f;
    }
    throw new RdmaException("provider", RdmaException.ENOENT, "no '" + name
        + "' provider on the class path (add pekko-rdma-" + name + " to the dependencies)");
  }
}

package dev.pekkordma.verbs;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.config.RdmaSettings;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Picks and creates the provider named by {@code pekko-rdma.provider}: auto, native or soft; the
 * choice and why is logged once at INFO, so that nobody runs on the emulation unawares.
 */
public final class RdmaProviders {
  private static final Logger log = LoggerFactory.getLogger(RdmaProviders.class);

  private RdmaProviders() {}

  /** From the default config (application.conf over the jars' reference.conf). */
  public static RdmaProvider load() {
    return load(ConfigFactory.load());
  }

  public static RdmaProvider load(Config config) {
    Choice c = choose(config);
    if (c.factory() == null) {
      throw new RdmaException("ibv_get_device_list", RdmaException.ENODEV, c.why()
          + " (pekko-rdma.provider = auto or soft runs without a device)");
    }
    return chosen(c.factory().create(config.getConfig(RdmaSettings.ROOT)), c.why());
  }

  /**
   * Which provider {@code config} would get, and why, without opening it: {@code factory} is
   * null when the choice cannot be served (native asked for, and no device), and {@code why}
   * then says what is missing.
   */
  public record Choice(String provider, String why, RdmaProviderFactory factory) {}

  public static Choice choose(Config config) {
    RdmaSettings settings = RdmaSettings.from(config);
    List<RdmaProviderFactory> factories = new ArrayList<>();
    ServiceLoader.load(RdmaProviderFactory.class).forEach(factories::add);
    String key = RdmaSettings.ROOT + ".provider = " + settings.provider();
    switch (settings.provider()) {
      case "soft":
        return new Choice("soft", key, find(factories, "soft"));
      case "native": {
        RdmaProviderFactory f = find(factories, "native");
        if (!f.devicesPresent()) {
          return new Choice("native", key + ", but " + f.whyUnavailable(), null);
        }
        return new Choice("native", key, f);
      }
      default: { // auto
        String why = "pekko-rdma-native is not on the class path";
        for (RdmaProviderFactory f : factories) {
          if (!f.name().equals("native")) continue;
          if (f.devicesPresent()) return new Choice("native", key, f);
          why = f.whyUnavailable();
        }
        return new Choice("soft", key + "; " + why, find(factories, "soft"));
      }
    }
  }

  /**
   * Logs which provider serves and why ("the native provider, 2 device(s) [mlx5_0, rxe0] (...)"),
   * and returns it saying the same when printed.
   */
  private static RdmaProvider chosen(RdmaProvider p, String why) {
    RdmaProvider chosen = new ChosenProvider(p, why);
    if (log.isInfoEnabled()) log.info("pekko-rdma: {}", chosen);
    return chosen;
  }

  private static RdmaProviderFactory find(List<RdmaProviderFactory> factories, String name) {
    for (RdmaProviderFactory f : factories) {
      if (f.name().equals(name)) return f;
    }
    throw new RdmaException("provider", RdmaException.ENOENT, "no '" + name
        + "' provider on the class path (add pekko-rdma-" + name + " to the dependencies)");
  }
}

package dev.pekkordma.soft;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.config.RdmaSettings;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviderFactory;

/** Registers the software provider with {@link dev.pekkordma.verbs.RdmaProviders}. */
@InternalApi
public final class SoftProviderFactory implements RdmaProviderFactory {
  @Override
  public String name() {
    return "soft";
  }

  @Override
  public boolean devicesPresent() {
    return true;
  }

  @Override
  public String whyUnavailable() {
    return "";
  }

  @Override
  public RdmaProvider create(Config libraryConfig) {
    Config full = ConfigFactory.empty().withValue(RdmaSettings.ROOT, libraryConfig.root());
    return new SoftProvider(RdmaSettings.from(full));
  }
}

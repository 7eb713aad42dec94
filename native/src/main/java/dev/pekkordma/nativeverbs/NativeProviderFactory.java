package dev.pekkordma.nativeverbs;

import com.typesafe.config.Config;
import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.RdmaProvider;
import dev.pekkordma.verbs.RdmaProviderFactory;

/** Registers the native provider with {@link java.util.ServiceLoader} (see META-INF/services). */
@InternalApi
public final class NativeProviderFactory implements RdmaProviderFactory {
  private static final String MAP_RESERVE = "native.map-reserve";

  @Override
  public String name() {
    return "native";
  }

  @Override
  public boolean devicesPresent() {
    return whyUnavailable() == null;
  }

  /** Null when a device serves; the kernel's view is asked first, the library only after. */
  @Override
  public String whyUnavailable() {
    try {
      return DeviceProbe.local().whyNot();
    } catch (RuntimeException | LinkageError e) {
      return "the native provider cannot load: " + e;
    }
  }

  @Override
  public RdmaProvider create(Config libraryConfig) {
    long reserve = libraryConfig.hasPath(MAP_RESERVE) ? libraryConfig.getLong(MAP_RESERVE)
        : MapHeadroom.DEFAULT_RESERVE;
    return new NativeProvider(MapHeadroom.ofProcess(reserve));
  }
}

package dev.pekkordma.samples;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/** Every program's {@code --version}: the build's, which Maven writes into version.properties. */
public final class BuildVersion implements IVersionProvider {
  static final BuildVersion INSTANCE = new BuildVersion();

  /** The project's version, as the artifacts carry it (0.1.0-SNAPSHOT, say). */
  public static String version() {
    try (InputStream in = BuildVersion.class.getResourceAsStream("version.properties")) {
      if (in == null) throw new IllegalStateException("version.properties is not on the class path");
      Properties p = new Properties();
      p.load(in);
      return p.getProperty("version");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  public String[] getVersion() {
    return new String[] {"pekko-rdma " + version()};
  }
}

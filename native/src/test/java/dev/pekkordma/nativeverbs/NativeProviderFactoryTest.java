package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.typesafe.config.ConfigFactory;
import dev.pekkordma.verbs.RdmaException;
import dev.pekkordma.verbs.RdmaProviderFactory;
import dev.pekkordma.verbs.RdmaProviders;
import java.util.ServiceLoader;
import org.junit.jupiter.api.Test;

/** Runs everywhere: registration, and the diagnosis on a machine without RDMA devices. */
class NativeProviderFactoryTest {
  private static RdmaProviderFactory nativeFactory() {
    for (RdmaProviderFactory f : ServiceLoader.load(RdmaProviderFactory.class)) {
      if (f.name().equals("native")) return f;
    }
    throw new AssertionError("no 'native' RdmaProviderFactory registered");
  }

  @Test
  void isRegisteredWithServiceLoader() {
    assertTrue(nativeFactory() instanceof NativeProviderFactory);
  }

  @Test
  void withoutDevicesSaysWhyInOneLineWithTheRemedy() {
    RdmaProviderFactory f = nativeFactory();
    assumeFalse(f.devicesPresent(), "this machine has RDMA devices");
    String why = f.whyUnavailable();
    assertFalse(why.contains("\n"), why);
    assertTrue(why.length() < 200, why);
    if (!new java.io.File("/sys/class/infiniband").isDirectory()) {
      assertTrue(why.startsWith("no RDMA device (/sys/class/infiniband is missing)"), why);
      assertTrue(why.contains("rdma link add rxe0 type rxe netdev"), why);
    }
  }

  @Test
  void requiringNativeWithoutDevicesFailsWithTheDiagnosis() {
    assumeFalse(nativeFactory().devicesPresent(), "this machine has RDMA devices");
    RdmaException e = assertThrows(RdmaException.class, () -> RdmaProviders.load(
        ConfigFactory.parseString("pekko-rdma.provider = native")));
    assertEquals(RdmaException.ENODEV, e.errno());
    assertTrue(e.getMessage().contains("pekko-rdma.provider = native"), e.getMessage());
    assertTrue(e.getMessage().contains("RDMA device") || e.getMessage().contains("libibverbs1"),
        e.getMessage());
    assertTrue(e.getMessage().contains("auto or soft runs without a device"), e.getMessage());
  }

  @Test
  void libibverbsLoadsWhereItIsInstalled() {
    boolean installed = new java.io.File("/usr/lib/x86_64-linux-gnu/libibverbs.so.1").exists();
    assumeFalse(!installed, "libibverbs.so.1 is not installed here");
    assertTrue(Verbs.available(), String.valueOf(Verbs.loadError()));
    assertFalse(Verbs.strerror(22).isEmpty());
  }
}

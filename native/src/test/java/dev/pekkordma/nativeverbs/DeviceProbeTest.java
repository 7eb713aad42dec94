package dev.pekkordma.nativeverbs;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The probe's one reason for each way a machine can lack a device, from fake sysfs and /dev
 * trees, and that the library is asked only where the kernel has a usable device (loading it is
 * what made {@code auto} cost a second).
 */
class DeviceProbeTest {
  @TempDir Path root;

  private final AtomicInteger libraryAsked = new AtomicInteger();

  private DeviceProbe probe(String loadError, int devices) {
    return new DeviceProbe(root.resolve("sys"), root.resolve("dev"), () -> {
      libraryAsked.incrementAndGet();
      return new DeviceProbe.Library() {
        @Override
        public String loadError() {
          return loadError;
        }

        @Override
        public int deviceCount() {
          return devices;
        }
      };
    });
  }

  private void kernelDevice(String name) throws IOException {
    Files.createDirectories(root.resolve("sys").resolve(name));
  }

  private void uverbs(String name) throws IOException {
    Files.createDirectories(root.resolve("dev"));
    Files.createFile(root.resolve("dev").resolve(name));
  }

  private static void oneLine(String why) {
    assertFalse(why.contains("\n"), why);
    assertTrue(why.length() < 200, why);
  }

  @Test
  void noKernelDeviceNeverLoadsTheLibrary() throws IOException {
    String missing = probe(null, 1).whyNot();
    oneLine(missing);
    assertTrue(missing.startsWith("no RDMA device (") && missing.contains("is missing"), missing);
    assertTrue(missing.contains("modprobe rdma_rxe"), missing);
    Files.createDirectories(root.resolve("sys"));
    String empty = probe(null, 1).whyNot();
    assertTrue(empty.contains("is empty"), empty);
    assertEquals(0, libraryAsked.get());
  }

  @Test
  void aKernelDeviceWithoutUverbsAsksForTheModule() throws IOException {
    kernelDevice("rxe0");
    String why = probe(null, 1).whyNot();
    oneLine(why);
    assertTrue(why.contains("[rxe0]") && why.contains("modprobe ib_uverbs"), why);
    assertEquals(0, libraryAsked.get());
  }

  @Test
  void aMissingLibraryIsNamedWithItsPackages() throws IOException {
    kernelDevice("mlx5_0");
    uverbs("uverbs0");
    String why = probe("libibverbs.so.1: cannot open shared object file\nsearch path: a, b, c", 1)
        .whyNot();
    oneLine(why);
    assertTrue(why.startsWith("libibverbs.so.1 not found (libibverbs.so.1: cannot open"), why);
    assertTrue(why.endsWith("apt-get install libibverbs1 ibverbs-providers"), why);
    assertFalse(why.contains("search path"), why);
  }

  @Test
  void aLibraryWithoutTheDriverAsksForTheProviders() throws IOException {
    kernelDevice("rxe0");
    uverbs("uverbs0");
    String why = probe(null, 0).whyNot();
    oneLine(why);
    assertTrue(why.contains("[rxe0]") && why.contains("ibverbs-providers"), why);
  }

  @Test
  void aDeviceTheLibraryListsServes() throws IOException {
    kernelDevice("rxe0");
    uverbs("uverbs0");
    assertNull(probe(null, 1).whyNot());
    assertEquals(1, libraryAsked.get());
  }
}

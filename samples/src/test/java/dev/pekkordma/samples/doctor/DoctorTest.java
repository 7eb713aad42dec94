package dev.pekkordma.samples.doctor;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.pekkordma.samples.SampleCommandLine;
import dev.pekkordma.verbs.Gid;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The doctor on this machine: on the software provider it finds all well; asked for the native
 * provider where there is no device it says so with the remedy and exits 1; in the Soft-RoCE VM
 * (-Dpekko-rdma.provider=native) it lists the rxe devices with their GIDs' types and netdevs and
 * the address a server binds. Its exit status always matches its verdict.
 */
class DoctorTest {
  static final boolean NATIVE = "native".equals(System.getProperty("pekko-rdma.provider"));

  record Run(int exit, String out, String err) {}

  private static Run doctor(Environment env, String... args) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteArrayOutputStream err = new ByteArrayOutputStream();
    PrintStream o = new PrintStream(out, true, StandardCharsets.UTF_8);
    PrintStream e = new PrintStream(err, true, StandardCharsets.UTF_8);
    int exit = SampleCommandLine.execute(args, o, e, SampleCommandLine::withClassName,
        new Doctor(o, env));
    Run r = new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    assertEquals(r.out().contains("all well") ? 0 : r.exit() == 2 ? 2 : 1, r.exit(),
        "the exit status is the verdict's:\n" + r.out() + r.err());
    return r;
  }

  private static Run doctor(String... args) {
    return doctor(Environment.LOCAL, args);
  }

  @Test
  void onTheSoftwareProviderAllIsWell() {
    Run r = doctor("--provider", "soft");
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().contains("would use: soft (pekko-rdma.provider = soft)"), r.out());
    assertTrue(r.out().contains("soft0: transport"), r.out());
    assertTrue(r.out().contains("port 1: ACTIVE, MTU 4096"), r.out());
    assertTrue(r.out().contains("GID[0]"), r.out());
    assertTrue(r.out().contains("counters: packets sent "), r.out());
    assertTrue(r.out().contains("a server can bind 127.0.0.1"), r.out());
  }

  @Test
  void theNativeProviderWithoutADeviceIsAProblemWithItsRemedy() {
    assumeFalse(NATIVE, "the VM has devices");
    Run r = doctor("--provider", "native");
    assertEquals(1, r.exit(), r.out());
    assertTrue(r.out().contains("would use: none"), r.out());
    assertTrue(r.out().contains("cannot serve"), r.out());
    assertTrue(r.out().contains("rdma_rxe") || r.out().contains("libibverbs"), r.out());
  }

  @Test
  void autoWithoutADeviceIsWellWithANoteSaidOnce() {
    assumeFalse(NATIVE, "the VM has devices");
    Run r = doctor("--provider", "auto");
    assertEquals(0, r.exit(), r.out());
    assertTrue(r.out().contains("note: no RDMA device: the software provider serves; fine for"
        + " development and tests"), r.out());
    String reason = r.out().lines().filter(l -> l.contains("would use: soft")).findFirst()
        .orElseThrow();
    String said = reason.substring(reason.indexOf("auto; ") + 6, reason.length() - 1);
    assertEquals(1, r.out().split(java.util.regex.Pattern.quote(said), -1).length - 1,
        "the reason once:\n" + r.out());
  }

  @Test
  void requireDeviceMakesTheMissingDeviceAProblem() {
    assumeFalse(NATIVE, "the VM has devices");
    Run r = doctor("--provider", "auto", "--require-device");
    assertEquals(1, r.exit(), r.out());
    assertTrue(r.out().contains("no RDMA device, and --require-device asks for one"), r.out());
  }

  /** In the Soft-RoCE VM: what ibv_devinfo and rdma link would say, and where a server binds. */
  @Test
  void inTheVmItListsTheRxeDevicesGidsAndTheCmAddress() {
    assumeTrue(NATIVE, "needs the Soft-RoCE VM (-Dpekko-rdma.provider=native)");
    Run r = doctor();
    assertTrue(r.out().contains("would use: native"), r.out());
    assertTrue(r.out().contains("rxe0: transport"), r.out());
    assertTrue(r.out().contains("RoCE v2"), r.out());
    assertTrue(r.out().contains("netdev "), r.out());
    assertTrue(r.out().contains("a server can bind 192.0.2.1"), r.out());
    assertTrue(r.out().contains("max locked memory (ulimit -l): unlimited"), r.out());
  }

  @Test
  void aLowMemlockMattersOnlyWhereRegisteredMemoryIsPinned() {
    Environment tight = new Environment() {
      @Override
      public String kernel() {
        return "test";
      }

      @Override
      public String library(String soname) {
        return "/usr/lib/" + soname;
      }

      @Override
      public long memlockLimit() {
        return 64 << 10;
      }

      @Override
      public List<InetAddress> localAddresses() {
        return Environment.LOCAL.localAddresses();
      }

      @Override
      public String gidType(String device, int port, int index) {
        return null;
      }

      @Override
      public String gidNetdev(String device, int port, int index) {
        return null;
      }
    };
    Run soft = doctor(tight, "--provider", "soft");
    assertTrue(soft.out().contains("max locked memory (ulimit -l): 64 KiB"), soft.out());
    assertFalse(soft.out().contains("locked-memory limit is"), "the software provider pins"
        + " nothing:\n" + soft.out());
    if (NATIVE) {
      Run nat = doctor(tight, "--provider", "native");
      assertTrue(nat.out().contains("the locked-memory limit is 64 KiB"), nat.out());
      assertEquals(1, nat.exit());
    }
  }

  @Test
  void aBadOptionExits2() {
    Run r = doctor("--provider", "bogus");
    assertEquals(2, r.exit());
    assertTrue(r.err().contains("--provider must be auto, soft or native"), r.err());
  }

  @Test
  void anIpv4MappedGidIsTheAddressTheCmBinds() throws Exception {
    assertEquals(InetAddress.getByName("192.0.2.1"), Doctor.ipv4Of(Gid.parse("192.0.2.1")));
    assertEquals(null, Doctor.ipv4Of(Gid.parse("fe80::1")));
  }
}

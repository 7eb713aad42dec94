package dev.pekkordma.soft.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the accepting side checks before it maps an offered file, and how files are made. */
class RingFileTest {
  private static final int CAPACITY = RingFile.MIN_CAPACITY;
  private static final byte[] BINDING = new byte[RingFile.BINDING_BYTES];
  @TempDir Path dir;

  @Test
  void aFileIsMadeOwnerOnlyUnderAnUnguessableNameAndUnlinked() throws Exception {
    RingFile a = RingFile.create(dir, CAPACITY, BINDING);
    RingFile b = RingFile.create(dir, CAPACITY, BINDING);
    Path p = dir.resolve(a.name());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(p)));
    assertEquals(RingFile.size(CAPACITY), Files.size(p));
    assertTrue(RingFile.validName(a.name()) && !a.name().equals(b.name()), a.name());
    a.unlink();
    b.unlink();
    assertTrue(!Files.exists(p));
  }

  @Test
  void namesOtherThanARingFilesAreRefusedBeforeAnythingIsOpened() {
    for (String name : new String[] {"../etc/passwd", RingFile.PREFIX + "0".repeat(31),
        RingFile.PREFIX + "0".repeat(33), RingFile.PREFIX + "0".repeat(31) + "G",
        RingFile.PREFIX + "0".repeat(30) + "/x", "/dev/shm/" + RingFile.PREFIX + "0".repeat(32),
        RingFile.PREFIX.toUpperCase() + "0".repeat(32), ""}) {
      assertEquals(RingFile.RingRefusal.BAD_NAME, refusal(name, CAPACITY, BINDING), name);
    }
  }

  @Test
  void aMissingFileIsNotFound() {
    assertEquals(RingFile.RingRefusal.NOT_FOUND,
        refusal(RingFile.PREFIX + "0".repeat(32), CAPACITY, BINDING));
  }

  @Test
  void aFileOfAnotherCapacityOrSizeIsRefused() throws Exception {
    RingFile f = RingFile.create(dir, CAPACITY, BINDING);
    assertEquals(RingFile.RingRefusal.WRONG_SIZE, refusal(f.name(), 2 * CAPACITY, BINDING));
    assertEquals(RingFile.RingRefusal.BAD_CAPACITY, refusal(f.name(), CAPACITY + 1, BINDING));
    Files.write(dir.resolve(f.name()), new byte[] {1}, java.nio.file.StandardOpenOption.APPEND);
    assertEquals(RingFile.RingRefusal.WRONG_SIZE, refusal(f.name(), CAPACITY, BINDING));
  }

  @Test
  void aFileForAnotherConnectionIsRefused() throws Exception {
    byte[] other = BINDING.clone();
    other[31] = 1;
    RingFile f = RingFile.create(dir, CAPACITY, other);
    assertEquals(RingFile.RingRefusal.OTHER_CONNECTION, refusal(f.name(), CAPACITY, BINDING));
  }

  @Test
  void aFileOthersMayWriteIsRefused() throws Exception {
    RingFile f = RingFile.create(dir, CAPACITY, BINDING);
    Files.setPosixFilePermissions(dir.resolve(f.name()),
        PosixFilePermissions.fromString("rw-rw-rw-"));
    assertEquals(RingFile.RingRefusal.NOT_OURS, refusal(f.name(), CAPACITY, BINDING));
  }

  @Test
  void aSymbolicLinkOrADirectoryIsNotFollowed() throws Exception {
    RingFile f = RingFile.create(dir, CAPACITY, BINDING);
    String link = RingFile.PREFIX + "1".repeat(32);
    Files.createSymbolicLink(dir.resolve(link), dir.resolve(f.name()));
    assertEquals(RingFile.RingRefusal.NOT_A_FILE, refusal(link, CAPACITY, BINDING));
    String sub = RingFile.PREFIX + "2".repeat(32);
    Files.createDirectory(dir.resolve(sub));
    assertEquals(RingFile.RingRefusal.NOT_A_FILE, refusal(sub, CAPACITY, BINDING));
  }

  @Test
  void aFileWithAnotherHeaderIsRefused() throws Exception {
    RingFile f = RingFile.create(dir, CAPACITY, BINDING);
    f.map.putInt(12, 2 * CAPACITY);
    assertEquals(RingFile.RingRefusal.BAD_HEADER, refusal(f.name(), CAPACITY, BINDING));
  }

  @Test
  void aMissingDirectoryRefusesToMakeAFile() {
    assertThrows(java.io.IOException.class,
        () -> RingFile.create(dir.resolve("absent"), CAPACITY, BINDING));
  }

  private RingFile.RingRefusal refusal(String name, long capacity, byte[] binding) {
    return assertThrows(RingFile.RingFileRefused.class, () -> RingFile.open(dir, name, capacity, binding))
        .reason;
  }
}

package dev.pekkordma.soft.shm;

import dev.pekkordma.annotation.InternalApi;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The file that holds one same-host link's two rings, mapped. Its layout: a header page (magic,
 * version, each ring's capacity, the channel binding of the fabric connection it was offered on),
 * then for each direction a control page (the producer's position, the consumer's position and
 * the consumer's "waiting" flag, each on cache lines of its own) and the ring's bytes. Ring 0
 * carries the connecting side's bytes, ring 1 the accepting side's.
 *
 * <p>The connecting side {@link #create}s it (owner-only, an unguessable name); the accepting side
 * {@link #open}s it only after checking that it is a regular file of ours, of the exact size, whose
 * header names this very connection. Once both have mapped it the connecting side unlinks it, so a
 * process killed later leaves nothing behind: the mapping lives as long as the processes do.
 *
 * <p>Each side keeps its descriptor of the file open, to see its size: the peer (a process of
 * this user, the only one that can open the file) may shrink it, and touching a mapped page the
 * file no longer has faults. {@link #checkIntact} finds that before the ring is touched.
 */
@InternalApi
public final class RingFile implements java.io.Closeable {
  /** Every ring file's name: this, then 128 random bits in hex. */
  public static final String PREFIX = "pekko-rdma-shm-";
  private static final Pattern NAME = Pattern.compile(Pattern.quote(PREFIX) + "[0-9a-f]{32}");
  public static final int MIN_CAPACITY = 64 * 1024;
  public static final int MAX_CAPACITY = 256 * 1024 * 1024;
  static final long MAGIC = 0x314853414d445250L; // "PRDMASH1", little-endian
  static final int VERSION = 1;
  static final int PAGE = 4096;
  static final int BINDING_BYTES = 32;
  // header fields
  private static final int H_MAGIC = 0;
  private static final int H_VERSION = 8;
  private static final int H_CAPACITY = 12;
  private static final int H_BINDING = 16;
  // a control page's fields: two cache lines apart, so that neither side's stores slow the other's
  static final int PRODUCER = 0;
  static final int CONSUMER = 128;
  static final int WAITING = 256;
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final int ZEROS = 64 * 1024;

  /** Why the accepting side would not use an offered file (the answer's code is ordinal + 1). */
  @InternalApi
  public enum RingRefusal {
    BAD_NAME("its name is not one of a ring file"),
    BAD_CAPACITY("its ring capacity is not a power of two from 64 KiB to 256 MiB"),
    NOT_FOUND("no such file here (another host, or another shared-memory directory)"),
    NOT_A_FILE("it is not a regular file"),
    NOT_OURS("it is not owned by this user with owner-only permissions"),
    WRONG_SIZE("its size is not the one its capacity gives"),
    BAD_HEADER("its header is not a ring file's of this version and capacity"),
    OTHER_CONNECTION("its header names another connection (a relayed offer)"),
    CANNOT_MAP("it cannot be opened or mapped here");

    public final String text;

    RingRefusal(String text) {
      this.text = text;
    }

    /** The answer's code for it: never 0, which says yes. */
    public short code() {
      return (short) (ordinal() + 1);
    }

    /** The reason an answer's code gives, or null for a code no reason has. */
    public static RingRefusal of(short code) {
      RingRefusal[] all = values();
      return code >= 1 && code <= all.length ? all[code - 1] : null;
    }
  }

  /** The accepting side refuses an offered file, saying why. */
  @InternalApi
  public static final class RingFileRefused extends IOException {
    public final RingRefusal reason;

    RingFileRefused(RingRefusal reason, String detail) {
      super(reason.text + (detail.isEmpty() ? "" : " (" + detail + ")"));
      this.reason = reason;
    }
  }

  private final Path path;
  private final int capacity;
  private final FileChannel channel;
  final MappedByteBuffer map;

  private RingFile(Path path, int capacity, FileChannel channel, MappedByteBuffer map) {
    this.path = path;
    this.capacity = capacity;
    this.channel = channel;
    this.map = map;
  }

  public String name() {
    return path.getFileName().toString();
  }

  public int capacity() {
    return capacity;
  }

  /** Whether {@code name} is one {@link #create} makes: nothing else is ever opened. */
  public static boolean validName(String name) {
    return NAME.matcher(name).matches();
  }

  public static boolean validCapacity(long capacity) {
    return capacity >= MIN_CAPACITY && capacity <= MAX_CAPACITY
        && Long.bitCount(capacity) == 1;
  }

  /** The file's size for rings of {@code capacity} bytes. */
  static long size(int capacity) {
    return PAGE + 2L * (PAGE + capacity);
  }

  /** Where ring {@code ring}'s control page starts; its bytes follow the page. */
  static int control(int ring, int capacity) {
    return PAGE + ring * (PAGE + capacity);
  }

  /**
   * Creates, fills and maps a new ring file in {@code dir} for the connection bound as {@code
   * binding}. Every page is written once here: on tmpfs a page is taken when first touched, and a
   * full /dev/shm must refuse now (an IOException), not fault a reader later.
   */
  public static RingFile create(Path dir, int capacity, byte[] binding) throws IOException {
    if (!validCapacity(capacity)) throw new IllegalArgumentException("capacity " + capacity);
    byte[] random = new byte[16];
    RANDOM.nextBytes(random);
    Path path = dir.resolve(PREFIX + HexFormat.of().formatHex(random));
    long size = size(capacity);
    FileChannel ch;
    try {
      ch = FileChannel.open(path, java.util.Set.of(StandardOpenOption.CREATE_NEW,
          StandardOpenOption.READ, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS),
          PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    } catch (FileAlreadyExistsException e) {
      throw new IOException("a file named " + path + " exists already", e);
    }
    try {
      ByteBuffer zeros = ByteBuffer.allocateDirect(ZEROS);
      for (long at = 0; at < size; at += ZEROS) {
        zeros.clear().limit((int) Math.min(ZEROS, size - at));
        while (zeros.hasRemaining()) ch.write(zeros, at + zeros.position());
      }
      MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      map.order(ByteOrder.LITTLE_ENDIAN);
      map.putLong(H_MAGIC, MAGIC).putInt(H_VERSION, VERSION).putInt(H_CAPACITY, capacity);
      map.put(H_BINDING, binding, 0, BINDING_BYTES);
      return new RingFile(path, capacity, ch, map);
    } catch (IOException | RuntimeException e) {
      ch.close();
      Files.deleteIfExists(path);
      throw e;
    }
  }

  /**
   * Opens and maps the ring file {@code name} in {@code dir} that the peer offered for the
   * connection this side sees bound as {@code binding}, or refuses it, saying why. The checks come
   * before the open, on the name itself (links are not followed): in a sticky directory such as
   * /dev/shm no other user can replace a file of ours once we have seen it.
   */
  public static RingFile open(Path dir, String name, long capacity, byte[] binding)
      throws RingFileRefused {
    if (!validName(name)) throw new RingFileRefused(RingRefusal.BAD_NAME, "");
    if (!validCapacity(capacity)) throw new RingFileRefused(RingRefusal.BAD_CAPACITY, "" + capacity);
    Path path = dir.resolve(name);
    long size = size((int) capacity);
    Map<String, Object> seen = attributes(path);
    if (!Boolean.TRUE.equals(seen.get("isRegularFile"))) throw new RingFileRefused(RingRefusal.NOT_A_FILE, "");
    int mode = (Integer) seen.get("mode");
    if (!seen.get("uid").equals(ownUid()) || (mode & 0077) != 0) {
      throw new RingFileRefused(RingRefusal.NOT_OURS, "uid " + seen.get("uid") + ", mode "
          + Integer.toOctalString(mode & 0777));
    }
    if ((Long) seen.get("size") != size) {
      throw new RingFileRefused(RingRefusal.WRONG_SIZE, seen.get("size") + " bytes, " + size + " expected");
    }
    FileChannel ch = null;
    try {
      ch = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
          LinkOption.NOFOLLOW_LINKS);
      if (!attributes(path).get("ino").equals(seen.get("ino")) || ch.size() != size) {
        throw new RingFileRefused(RingRefusal.WRONG_SIZE, "it changed while it was opened");
      }
      MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      map.order(ByteOrder.LITTLE_ENDIAN);
      RingFile file = new RingFile(path, (int) capacity, ch, map);
      file.checkIntact("the offered ring file"); // the peer may have shrunk it since
      if (map.getLong(H_MAGIC) != MAGIC || map.getInt(H_VERSION) != VERSION
          || map.getInt(H_CAPACITY) != capacity) {
        throw new RingFileRefused(RingRefusal.BAD_HEADER, "");
      }
      byte[] theirs = new byte[BINDING_BYTES];
      map.get(H_BINDING, theirs, 0, BINDING_BYTES);
      if (binding.length != BINDING_BYTES || !MessageDigest.isEqual(theirs, binding)) {
        throw new RingFileRefused(RingRefusal.OTHER_CONNECTION, "");
      }
      return file;
    } catch (RingFileRefused r) {
      closeQuietly(ch);
      throw r;
    } catch (RingViolation v) {
      closeQuietly(ch);
      throw new RingFileRefused(RingRefusal.WRONG_SIZE, v.getMessage());
    } catch (IOException | RuntimeException e) {
      closeQuietly(ch);
      throw new RingFileRefused(RingRefusal.CANNOT_MAP, e.toString());
    }
  }

  /**
   * Whether the file still has every byte the mapping covers, before anything touches it: a
   * shrunk file is {@code what}'s violation (one system call, fstat). A descriptor closed with
   * the link is a plain IOException: closing is no one's violation.
   */
  void checkIntact(String what) throws IOException {
    long now;
    try {
      now = channel.size();
    } catch (IOException e) {
      throw new IOException(what + ": the link was closed (" + e + ")", e);
    }
    long size = size(capacity);
    if (now < size) {
      throw new RingViolation(what + ": its file was truncated to " + now + " of its " + size
          + " bytes (by the peer, the only other process that can open it)");
    }
  }

  private static void closeQuietly(FileChannel ch) {
    if (ch == null) return;
    try {
      ch.close();
    } catch (IOException e) {
      // nothing was mapped through it for anyone
    }
  }

  /** Lets go of the file's descriptor; the mapping stays until nothing refers to it. */
  @Override
  public void close() {
    closeQuietly(channel);
  }

  private static Map<String, Object> attributes(Path path) throws RingFileRefused {
    try {
      return Files.readAttributes(path, "unix:isRegularFile,mode,uid,size,ino",
          LinkOption.NOFOLLOW_LINKS);
    } catch (NoSuchFileException e) {
      throw new RingFileRefused(RingRefusal.NOT_FOUND, "");
    } catch (IOException | RuntimeException e) {
      throw new RingFileRefused(RingRefusal.CANNOT_MAP, e.toString());
    }
  }

  /** This process's user id: the owner of its own /proc entry. */
  private static Object ownUid() throws RingFileRefused {
    try {
      return Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    } catch (IOException | RuntimeException e) {
      throw new RingFileRefused(RingRefusal.CANNOT_MAP, "this process's user id: " + e);
    }
  }

  /** Removes the file's name (the mappings stay); idempotent. */
  public void unlink() {
    try {
      Files.deleteIfExists(path);
    } catch (IOException e) {
      // it goes with its directory's cleanup; nothing maps it by name again
    }
  }

  @Override
  public String toString() {
    return path.toString();
  }
}

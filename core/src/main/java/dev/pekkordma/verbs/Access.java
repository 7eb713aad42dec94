package dev.pekkordma.verbs;

/** Memory access flags (the values of libibverbs' {@code ibv_access_flags}); combine with {@code |}. */
public final class Access {
  public static final int LOCAL_WRITE = 1;
  public static final int REMOTE_WRITE = 1 << 1;
  public static final int REMOTE_READ = 1 << 2;
  public static final int REMOTE_ATOMIC = 1 << 3;
  public static final int MW_BIND = 1 << 4;

  static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC | MW_BIND;

  private Access() {}

  /** Rejects unknown bits and remote write/atomic without local write, as verbs do. */
  public static int validate(int access, String what) {
    if ((access & ~ALL) != 0) {
      throw new IllegalArgumentException(what + ": unknown access bits 0x"
          + Integer.toHexString(access & ~ALL));
    }
    if ((access & (REMOTE_WRITE | REMOTE_ATOMIC)) != 0 && (access & LOCAL_WRITE) == 0) {
      throw new IllegalArgumentException(
          what + ": REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (" + describe(access) + ")");
    }
    return access;
  }

  public static String describe(int access) {
    StringBuilder b = new StringBuilder();
    if ((access & LOCAL_WRITE) != 0) b.append("LOCAL_WRITE|");
    if ((access & REMOTE_WRITE) != 0) b.append("REMOTE_WRITE|");
    if ((access & REMOTE_READ) != 0) b.append("REMOTE_READ|");
    if ((access & REMOTE_ATOMIC) != 0) b.append("REMOTE_ATOMIC|");
    if ((access & MW_BIND) != 0) b.append("MW_BIND|");
    return b.length() == 0 ? "none" : b.substring(0, b.length() - 1);
  }
}

package dev.pekkordma.verbs;

/**
 * A memory window ({@code ibv_mw}): once bound to part of a region with narrower rights, its
 * rkey grants only that range and those rights.
 */
public interface MemoryWindow extends AutoCloseable {
  enum Type {
    TYPE_1(1), TYPE_2(2);

    public final int code;

    Type(int code) {
      this.code = code;
    }
  }

  ProtectionDomain pd();

  /** The rkey to bind a type-2 window with next: same index, next key byte ({@code ibv_inc_rkey}). */
  static int nextRkey(int rkey) {
    return (rkey & 0xffffff00) | ((rkey + 1) & 0xff);
  }

  Type type();

  /**
   * The current rkey; it grants nothing until a bind, and each bind changes it. A type-2 bind
   * names the next one: {@code nextRkey(rkey())}.
   */
  int rkey();

  /** The provider's handle ({@code struct ibv_mw *} on the native provider). */
  long handle();

  @Override
  void close();
}

package dev.pekkordma.verbs;

/** How a device supports atomics ({@code ibv_atomic_cap}). */
public enum AtomicCapability {
  NONE(0), HCA(1), GLOB(2);

  public final int code;

  AtomicCapability(int code) {
    this.code = code;
  }

  public static AtomicCapability of(int code) {
    for (AtomicCapability a : values()) if (a.code == code) return a;
    return NONE;
  }
}

package dev.pekkordma.verbs;

/** Path MTUs, with libibverbs' {@code ibv_mtu} codes. */
public enum Mtu {
  MTU_256(1, 256), MTU_512(2, 512), MTU_1024(3, 1024), MTU_2048(4, 2048), MTU_4096(5, 4096);

  public final int code;
  public final int bytes;

  Mtu(int code, int bytes) {
    this.code = code;
    this.bytes = bytes;
  }

  public static Mtu of(int code) {
    for (Mtu m : values()) if (m.code == code) return m;
    throw new IllegalArgumentException("unknown MTU code " + code + " (1..5 mean 256..4096 bytes)");
  }
}

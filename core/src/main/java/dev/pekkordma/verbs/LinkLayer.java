package dev.pekkordma.verbs;

/** The port's link layer: InfiniBand (LIDs) or Ethernet (RoCE, GIDs only). */
public enum LinkLayer {
  UNSPECIFIED(0), INFINIBAND(1), ETHERNET(2);

  public final int code;

  LinkLayer(int code) {
    this.code = code;
  }

  public static LinkLayer of(int code) {
    for (LinkLayer l : values()) if (l.code == code) return l;
    return UNSPECIFIED;
  }
}

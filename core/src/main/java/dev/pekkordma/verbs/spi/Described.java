package dev.pekkordma.verbs.spi;

/** A provider's resource as messages name it: "QP 17", "MR lkey 0x1a2b". */
public interface Described {
  String describe();
}

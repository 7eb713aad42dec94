package dev.pekkordma.soft;

import dev.pekkordma.verbs.RdmaException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.security.SecureRandom;

/**
 * Objects found by a key, as lkeys, rkeys and QP numbers are on hardware. A key is an identity
 * drawn at random from the whole key space, then (memory keys) an 8-bit tag, the part {@code
 * ibv_inc_rkey} changes, random as well: no key says anything about another, so a peer that
 * holds one cannot guess its neighbours', and a stale key finds nothing. The table is open
 * addressing on the identity (random already, so it is its own hash), at most half full; lookups
 * take no lock and allocate nothing, and never find one key's object under another key.
 */
final class KeyTable<T> {
  private static final SecureRandom RANDOM = new SecureRandom();
  /** A removed entry's place: lookups go past it, additions may reuse it. */
  private static final Object REMOVED = new Object();
  private static final VarHandle OBJECTS = MethodHandles.arrayElementVarHandle(Object[].class);
  private static final VarHandle INTS = MethodHandles.arrayElementVarHandle(int[].class);

  /**
   * The objects place by place (null where none ever was, {@link #REMOVED} where one was), and
   * in the last place the {@code int[]} of their keys: one volatile read gives a lookup both
   * arrays of the same size. Places are written under the monitor with release stores (a key
   * before its object), read without it with acquire loads.
   */
  private volatile Object[] slots;
  private int live;
  private int occupied; // live and REMOVED places
  private final int max;
  private final int keyBits;
  private final int tagBits;
  private final String what;

  /**
   * @param initial the entries the table holds before it first grows
   * @param max the most entries at once: at most half the identities, so that a free one is
   *     drawn in two tries on average
   * @param keyBits 32 for memory keys and handles, 24 for QP numbers
   * @param tagBits the low bits a key's holder may change ({@code ibv_inc_rkey}): 8 or 0
   */
  KeyTable(int initial, int max, int keyBits, int tagBits, String what) {
    long identities = 1L << (keyBits - tagBits);
    if (max > identities / 2) {
      throw new IllegalArgumentException(what + ": " + max + " entries are more than half the "
          + identities + " identities of " + keyBits + "-bit keys");
    }
    this.slots = table(capacityFor(Math.min(initial, max)));
    this.max = max;
    this.keyBits = keyBits;
    this.tagBits = tagBits;
    this.what = what;
  }

  /** Stores {@code value}; returns its key, or throws ENOMEM naming the limit. */
  synchronized int add(T value) {
    if (live >= max) {
      throw new RdmaException("alloc", RdmaException.ENOMEM,
          "no more than " + max + " " + what + " on this device");
    }
    if ((occupied + 1) * 2 > places(slots)) rehash();
    Object[] s = slots;
    int[] k = keysOf(s);
    int mask = places(s) - 1;
    while (true) {
      int key = newKey();
      int free = -1;
      int i = identity(key) & mask;
      boolean taken = false;
      for (; s[i] != null; i = (i + 1) & mask) {
        if (s[i] == REMOVED) {
          if (free < 0) free = i;
        } else if (identity(k[i]) == identity(key)) {
          taken = true;
          break;
        }
      }
      if (taken) continue;
      if (free < 0) {
        free = i;
        occupied++;
      }
      INTS.setRelease(k, free, key);
      OBJECTS.setRelease(s, free, value);
      live++;
      return key;
    }
  }

  /** Replaces the tag of an existing entry (a new key for the same object, as rebinding gives). */
  synchronized int retag(int oldKey, int newTag) {
    int key = (oldKey & ~0xff) | (newTag & 0xff);
    Object[] s = slots;
    int i = place(s, oldKey);
    if (i >= 0) INTS.setRelease(keysOf(s), i, key);
    return key;
  }

  @SuppressWarnings("unchecked")
  T get(int key) {
    Object[] s = slots;
    int[] k = keysOf(s);
    int i = place(s, key);
    if (i < 0) return null;
    Object v = OBJECTS.getAcquire(s, i);
    // freed, or freed and taken again, since the place was found: its key says whose it is
    return v != REMOVED && (int) INTS.getAcquire(k, i) == key ? (T) v : null;
  }

  synchronized void remove(int key) {
    Object[] s = slots;
    int i = place(s, key);
    if (i >= 0) {
      OBJECTS.setRelease(s, i, REMOVED);
      live--;
    }
  }

  synchronized int size() {
    return live;
  }

  /** Where {@code key} sits in {@code s}, or -1: its identity's place must hold it whole. */
  private int place(Object[] s, int key) {
    int[] k = keysOf(s);
    int id = identity(key);
    int mask = places(s) - 1;
    for (int i = id & mask; ; i = (i + 1) & mask) {
      Object v = OBJECTS.getAcquire(s, i);
      if (v == null) return -1;
      if (v == REMOVED) continue;
      int found = (int) INTS.getAcquire(k, i);
      if (identity(found) == id) return found == key ? i : -1;
    }
  }

  /** A random key whose identity is neither 0 nor reserved (QP 1, the multicast QPN). */
  private int newKey() {
    while (true) {
      int key = RANDOM.nextInt();
      if (keyBits < 32) key &= (1 << keyBits) - 1;
      int id = identity(key);
      if (id == 0 || (keyBits == 24 && (key == 1 || key == 0xffffff))) continue;
      return key;
    }
  }

  private int identity(int key) {
    return key >>> tagBits;
  }

  /** Grows (or, with many removed places, only cleans) the table, keeping it at most half full. */
  private void rehash() {
    Object[] old = slots;
    int[] oldKeys = keysOf(old);
    Object[] s = table(Math.max(places(old), capacityFor(live + 1)));
    int[] k = keysOf(s);
    int mask = places(s) - 1;
    for (int j = 0; j < places(old); j++) {
      Object v = old[j];
      if (v == null || v == REMOVED) continue;
      int i = identity(oldKeys[j]) & mask;
      while (s[i] != null) i = (i + 1) & mask;
      k[i] = oldKeys[j];
      s[i] = v;
    }
    occupied = live;
    slots = s; // publishes both arrays
  }

  /** A table of {@code places} places, its keys' array in the last. */
  private static Object[] table(int places) {
    Object[] s = new Object[places + 1];
    s[places] = new int[places];
    return s;
  }

  private static int places(Object[] s) {
    return s.length - 1;
  }

  private static int[] keysOf(Object[] s) {
    return (int[]) s[s.length - 1];
  }

  /** A power of two at least twice {@code entries} (and at least 4 places). */
  private static int capacityFor(int entries) {
    int c = 4;
    while (c < entries * 2L) c <<= 1;
    return c;
  }
}

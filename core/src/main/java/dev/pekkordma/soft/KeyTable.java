package dev.pekkordma.soft;

import dev.pekkordma.verbs.RdmaException;
import java.security.SecureRandom;

/**
 * Objects found by a key, as lkeys, rkeys and QP numbers are on hardware. A key is an identity
 * drawn at random from the whole key space, then (memory keys) an 8-bit tag, the part {@code
 * ibv_inc_rkey} changes, random as well: no key says anything about another, so a peer that
 * holds one cannot guess its neighbours', and a stale key finds nothing. The table is open
 * addressing on the identity (random already, so it is its own hash), at most half full; lookups
 * take no lock and allocate nothing.
 */
final class KeyTable<T> {
  private static final SecureRandom RANDOM = new SecureRandom();
  /** A removed entry: lookups go past it, additions may reuse its place. */
  private static final Entry REMOVED = new Entry(0, null);

  /** One key and its object: replaced whole, so a lookup never sees a key with another's value. */
  private record Entry(int key, Object value) {}

  /** Written under the monitor, read without it; each change is published by a volatile write. */
  private volatile Entry[] table;
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
    this.table = new Entry[capacityFor(Math.min(initial, max))];
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
    if ((occupied + 1) * 2 > table.length) rehash();
    Entry[] t = table;
    while (true) {
      int key = newKey();
      int free = -1;
      int i = identity(key) & (t.length - 1);
      boolean taken = false;
      for (Entry e = t[i]; e != null; i = (i + 1) & (t.length - 1), e = t[i]) {
        if (e == REMOVED) {
          if (free < 0) free = i;
        } else if (identity(e.key) == identity(key)) {
          taken = true;
          break;
        }
      }
      if (taken) continue;
      if (free < 0) {
        free = i;
        occupied++;
      }
      t[free] = new Entry(key, value);
      live++;
      table = t; // publish
      return key;
    }
  }

  /** Replaces the tag of an existing entry (a new key for the same object, as rebinding gives). */
  synchronized int retag(int oldKey, int newTag) {
    int key = (oldKey & ~0xff) | (newTag & 0xff);
    Entry[] t = table;
    int i = find(t, oldKey);
    if (i >= 0) {
      t[i] = new Entry(key, t[i].value);
      table = t;
    }
    return key;
  }

  @SuppressWarnings("unchecked")
  T get(int key) {
    Entry[] t = table;
    int i = find(t, key);
    return i < 0 ? null : (T) t[i].value;
  }

  synchronized void remove(int key) {
    Entry[] t = table;
    int i = find(t, key);
    if (i >= 0) {
      t[i] = REMOVED;
      live--;
      table = t;
    }
  }

  synchronized int size() {
    return live;
  }

  /** Where {@code key} sits in {@code t}, or -1: its identity's entry must carry it whole. */
  private int find(Entry[] t, int key) {
    int id = identity(key);
    int mask = t.length - 1;
    for (int i = id & mask; ; i = (i + 1) & mask) {
      Entry e = t[i];
      if (e == null) return -1;
      if (e != REMOVED && identity(e.key) == id) return e.key == key ? i : -1;
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
    Entry[] old = table;
    Entry[] t = new Entry[Math.max(old.length, capacityFor(live + 1))];
    for (Entry e : old) {
      if (e == null || e == REMOVED) continue;
      int i = identity(e.key) & (t.length - 1);
      while (t[i] != null) i = (i + 1) & (t.length - 1);
      t[i] = e;
    }
    occupied = live;
    table = t;
  }

  /** A power of two at least twice {@code entries} (and at least 4 places). */
  private static int capacityFor(int entries) {
    int c = 4;
    while (c < entries * 2L) c <<= 1;
    return c;
  }
}

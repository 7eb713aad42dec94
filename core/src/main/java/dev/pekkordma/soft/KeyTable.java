package dev.pekkordma.soft;

import dev.pekkordma.verbs.RdmaException;
import java.security.SecureRandom;
import java.util.Arrays;

/**
 * Objects found by a key, as lkeys, rkeys and QP numbers are on hardware. A key's low 8 bits are
 * a tag (the part {@code ibv_inc_rkey} changes), the bits above them the slot the object sits
 * in, and the bits above those random: a peer that holds one key cannot guess its neighbours',
 * and a stale key (freed slot, old tag) finds nothing. Lookups allocate nothing.
 */
final class KeyTable<T> {
  private static final SecureRandom RANDOM = new SecureRandom();

  private volatile Object[] slots;
  private volatile int[] keys;
  private int nextFree = 1; // slot 0 unused: no key with it is ever valid
  private int live;
  private final int max;
  private final int slotBits;
  private final int keyBits;
  private final String what;

  /**
   * @param keyBits 32 for memory keys, 24 for QP numbers
   * @param max the most entries at once (the slot field is sized for it)
   */
  KeyTable(int initial, int max, int keyBits, String what) {
    this.slotBits = 32 - Integer.numberOfLeadingZeros(max);
    if (8 + slotBits > keyBits) {
      throw new IllegalArgumentException(what + ": " + max + " entries do not fit " + keyBits
          + "-bit keys");
    }
    this.slots = new Object[Math.max(2, Math.min(initial, max + 1))];
    this.keys = new int[slots.length];
    this.max = max;
    this.keyBits = keyBits;
    this.what = what;
  }

  /** Stores {@code value}; returns its key, or throws ENOMEM naming the limit. */
  synchronized int add(T value) {
    if (live >= max) {
      throw new RdmaException("alloc", RdmaException.ENOMEM,
          "no more than " + max + " " + what + " on this device");
    }
    Object[] s = slots;
    int i = -1;
    for (int n = 0; n < s.length - 1; n++) {
      int cand = 1 + (nextFree - 1 + n) % (s.length - 1);
      if (s[cand] == null) {
        i = cand;
        break;
      }
    }
    if (i < 0) {
      Object[] grown = Arrays.copyOf(s, Math.min(s.length * 2, max + 1));
      int[] grownKeys = Arrays.copyOf(keys, grown.length);
      i = s.length;
      keys = grownKeys;
      slots = grown;
      s = grown;
    }
    int key = newKey(i);
    int[] k = keys;
    k[i] = key;
    keys = k; // publish
    s[i] = value;
    slots = s;
    nextFree = i + 1 < s.length ? i + 1 : 1;
    live++;
    return key;
  }

  private int newKey(int slot) {
    int randomBits = keyBits - 8 - slotBits;
    while (true) {
      int high = randomBits == 0 ? 0 : RANDOM.nextInt() & ((1 << randomBits) - 1);
      int key = (high << (8 + slotBits)) | (slot << 8) | (RANDOM.nextInt() & 0xff);
      if (keyBits == 24 && key == 0xffffff) continue; // the multicast QPN
      return key;
    }
  }

  /** Replaces the tag of an existing entry (a new key for the same object, as rebinding gives). */
  synchronized int retag(int oldKey, int newTag) {
    int i = slot(oldKey);
    int key = (oldKey & ~0xff) | (newTag & 0xff);
    int[] k = keys;
    k[i] = key;
    keys = k;
    return key;
  }

  @SuppressWarnings("unchecked")
  T get(int key) {
    int i = slot(key);
    Object[] s = slots;
    if (i <= 0 || i >= s.length) return null;
    Object v = s[i];
    int[] k = keys;
    return v != null && i < k.length && k[i] == key ? (T) v : null;
  }

  synchronized void remove(int key) {
    int i = slot(key);
    Object[] s = slots;
    if (i > 0 && i < s.length && s[i] != null && keys[i] == key) {
      s[i] = null;
      slots = s;
      live--;
    }
  }

  synchronized int size() {
    return live;
  }

  private int slot(int key) {
    return (key >>> 8) & ((1 << slotBits) - 1);
  }
}

package dev.pekkordma.soft;

/**
 * Objects found by a 32-bit key whose upper 24 bits are a slot index and lower 8 a tag that
 * changes on reuse, as lkeys and rkeys are on hardware. Lookups allocate nothing; a stale key
 * (freed slot, old tag) finds nothing.
 */
final class KeyTable<T> {
  private volatile Object[] slots;
  private volatile int[] keys;
  private int nextFree = 1; // slot 0 unused: key 0 never valid
  private int tagCounter;
  private int live;
  private final int max;
  private final String what;

  KeyTable(int initial, int max, String what) {
    this.slots = new Object[Math.max(2, initial)];
    this.keys = new int[slots.length];
    this.max = max;
    this.what = what;
  }

  /** Stores {@code value}; returns its key, or throws ENOMEM naming the limit. */
  synchronized int add(T value) {
    if (live >= max) {
      throw new dev.pekkordma.verbs.RdmaException("alloc", dev.pekkordma.verbs.RdmaException.ENOMEM,
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
      Object[] grown = java.util.Arrays.copyOf(s, s.length * 2);
      int[] grownKeys = java.util.Arrays.copyOf(keys, grown.length);
      i = s.length;
      keys = grownKeys;
      slots = grown;
      s = grown;
    }
    tagCounter = (tagCounter + 1) & 0xff;
    int key = (i << 8) | tagCounter;
    int[] k = keys;
    k[i] = key;
    keys = k; // publish
    s[i] = value;
    slots = s;
    nextFree = i + 1 < s.length ? i + 1 : 1;
    live++;
    return key;
  }

  /** Replaces the tag of an existing entry (a new key for the same object, as rebinding gives). */
  synchronized int retag(int oldKey, int newTag) {
    int i = oldKey >>> 8;
    int key = (i << 8) | (newTag & 0xff);
    int[] k = keys;
    k[i] = key;
    keys = k;
    return key;
  }

  @SuppressWarnings("unchecked")
  T get(int key) {
    int i = key >>> 8;
    Object[] s = slots;
    if (i <= 0 || i >= s.length) return null;
    Object v = s[i];
    int[] k = keys;
    return v != null && i < k.length && k[i] == key ? (T) v : null;
  }

  synchronized void remove(int key) {
    int i = key >>> 8;
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
}

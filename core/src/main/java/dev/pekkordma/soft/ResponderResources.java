package dev.pekkordma.soft;

/**
 * The READs and atomics a responder answered last: IB's responder resources, rxe's {@code
 * resp.resources}. A repeat of one of them is answered again, a READ by reading the same rkey,
 * address and length anew (the registration is checked again), an atomic with its first result,
 * never executed twice; a repeat of anything older, or a "repeat" naming other memory than the
 * original did, is not answered. So a stale PSN reaches only what the peer was answered already.
 *
 * <p>It holds {@link Requester#MAX_IN_FLIGHT} entries, the most a requester has on the wire
 * (requesters here do not keep to max_rd_atomic, so max_dest_rd_atomic would be too few for a
 * retry after a lost connection). Allocated on the first READ or atomic: most QPs take none.
 * Guarded by the QP's monitor.
 */
final class ResponderResources {
  static final int SIZE = Requester.MAX_IN_FLIGHT;
  private static final byte READ = 1;
  private static final byte ATOMIC = 2;

  private byte[] kinds;
  private int[] psns;
  private int[] rkeys;
  private long[] addresses;
  /** A READ's length, an atomic's result. */
  private long[] values;
  private int next;

  /** Forgets everything (the QP went to RTR anew: PSNs start over). */
  void clear() {
    if (kinds != null) java.util.Arrays.fill(kinds, (byte) 0);
    next = 0;
  }

  void read(int psn, int rkey, long address, long length) {
    add(READ, psn, rkey, address, length);
  }

  void atomic(int psn, long result) {
    add(ATOMIC, psn, 0, 0, result);
  }

  /** Whether the READ answered at {@code psn} read exactly this rkey, address and length. */
  boolean answeredRead(int psn, int rkey, long address, long length) {
    int i = find(READ, psn);
    return i >= 0 && rkeys[i] == rkey && addresses[i] == address && values[i] == length;
  }

  /** Whether an atomic was answered at {@code psn}; its result is then {@link #result}. */
  boolean answeredAtomic(int psn) {
    return find(ATOMIC, psn) >= 0;
  }

  /** The result of the atomic {@link #answeredAtomic} found. */
  long result(int psn) {
    return values[find(ATOMIC, psn)];
  }

  private void add(byte kind, int psn, int rkey, long address, long value) {
    if (kinds == null) {
      kinds = new byte[SIZE];
      psns = new int[SIZE];
      rkeys = new int[SIZE];
      addresses = new long[SIZE];
      values = new long[SIZE];
    }
    int i = next;
    next = (next + 1) % SIZE;
    kinds[i] = kind;
    psns[i] = psn;
    rkeys[i] = rkey;
    addresses[i] = address;
    values[i] = value;
  }

  private int find(byte kind, int psn) {
    if (kinds == null) return -1;
    for (int i = 0; i < SIZE; i++) {
      if (kinds[i] == kind && psns[i] == psn) return i;
    }
    return -1;
  }
}

package dev.pekkordma.soft;

import dev.pekkordma.verbs.RdmaException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

/**
 * The key table against a map as its model: whatever the adds, removals and retags, a live key
 * finds its object, a removed or retagged-away key finds nothing, keys never repeat while live,
 * no key has a reserved identity, and the limit is refused with ENOMEM naming it.
 */
class KeyTablePropertyTest {
  /** 0: add, 1: remove a live key, 2: retag a live key, 3: look up a dead key. */
  record Step(int kind, int pick, int tag) {}

  @Provide
  Arbitrary<List<Step>> steps() {
    Arbitrary<Step> step = net.jqwik.api.Combinators.combine(
        Arbitraries.frequency(net.jqwik.api.Tuple.of(5, 0), net.jqwik.api.Tuple.of(3, 1),
            net.jqwik.api.Tuple.of(1, 2), net.jqwik.api.Tuple.of(1, 3)),
        Arbitraries.integers().between(0, 1 << 20), Arbitraries.integers().between(0, 255))
        .as(Step::new);
    return step.list().ofMinSize(1).ofMaxSize(400);
  }

  @Property(tries = 200)
  void memoryKeysBehaveAsAMap(@ForAll("steps") List<Step> steps) {
    check(new KeyTable<>(4, 300, 32, 8, "memory keys"), steps, 300, true);
  }

  @Property(tries = 200)
  void qpNumbersBehaveAsAMap(@ForAll("steps") List<Step> steps) {
    check(new KeyTable<>(4, 300, 24, 0, "QPs"), steps, 300, false);
  }

  /**
   * Lookups without the lock while another thread adds, removes, retags and grows the table: a
   * key that stays live is always found, and no key ever finds another key's object.
   */
  @net.jqwik.api.Example
  void lookupsRacingWithChangesNeverMissALiveKeyNorFindAnotherKeysObject() throws Exception {
    KeyTable<Object> table = new KeyTable<>(4, 1 << 16, 32, 8, "memory keys");
    Map<Integer, Object> stable = new HashMap<>();
    for (int i = 0; i < 64; i++) {
      Object o = new Object();
      stable.put(table.add(o), o);
    }
    int[] transientKeys = new int[256];
    Object[] transientObjects = new Object[256];
    java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicReference<String> wrong =
        new java.util.concurrent.atomic.AtomicReference<>();
    Thread reader = new Thread(() -> {
      java.util.Random r = new java.util.Random(1);
      Integer[] keys = stable.keySet().toArray(new Integer[0]);
      while (!done.get() && wrong.get() == null) {
        int key = keys[r.nextInt(keys.length)];
        if (table.get(key) != stable.get(key)) wrong.set("a live key was missed: " + key);
        int t = r.nextInt(transientKeys.length);
        int k = transientKeys[t];
        Object found = table.get(k);
        Object other = table.get(k ^ 0x01);
        if (found != null && stable.containsValue(found)) wrong.set("another key's object");
        if (other != null && other == transientObjects[t]) wrong.set("a key found by another");
      }
    });
    reader.start();
    java.util.Random r = new java.util.Random(2);
    for (int round = 0; round < 200_000 && wrong.get() == null; round++) {
      int t = r.nextInt(transientKeys.length);
      if (transientObjects[t] != null) table.remove(transientKeys[t]);
      Object o = new Object();
      transientObjects[t] = o;
      transientKeys[t] = table.add(o);
      if (round % 7 == 0) transientKeys[t] = table.retag(transientKeys[t], r.nextInt(256));
    }
    done.set(true);
    reader.join();
    if (wrong.get() != null) throw new AssertionError(wrong.get());
  }

  private static void check(KeyTable<Object> table, List<Step> steps, int max, boolean tagged) {
    Map<Integer, Object> model = new HashMap<>();
    List<Integer> dead = new ArrayList<>();
    for (Step s : steps) {
      List<Integer> keys = new ArrayList<>(model.keySet());
      switch (s.kind()) {
        case 0 -> {
          Object o = new Object();
          if (model.size() == max) {
            RdmaException e = expectThrows(() -> table.add(o));
            require(e.errno() == RdmaException.ENOMEM && e.getMessage().contains("no more than "
                + max), "the limit is refused naming it: " + e.getMessage());
            break;
          }
          int key = table.add(o);
          for (int live : model.keySet()) {
            require(live >>> (tagged ? 8 : 0) != key >>> (tagged ? 8 : 0),
                "identities never repeat while live");
          }
          int id = key >>> (tagged ? 8 : 0);
          require(id != 0 && (tagged || (key != 1 && key != 0xffffff && key >>> 24 == 0)),
              "no reserved identity: " + Integer.toHexString(key));
          model.put(key, o);
        }
        case 1 -> {
          if (keys.isEmpty()) break;
          int key = keys.get(s.pick() % keys.size());
          table.remove(key);
          model.remove(key);
          dead.add(key);
        }
        case 2 -> {
          if (keys.isEmpty() || !tagged) break;
          int key = keys.get(s.pick() % keys.size());
          int retagged = table.retag(key, s.tag());
          Object o = model.remove(key);
          model.put(retagged, o);
          if (retagged != key) dead.add(key);
        }
        default -> {
          if (dead.isEmpty()) break;
          int key = dead.get(s.pick() % dead.size());
          if (!model.containsKey(key)) require(table.get(key) == null, "a dead key finds nothing");
        }
      }
      require(table.size() == model.size(), "the size is the model's");
    }
    for (Map.Entry<Integer, Object> e : model.entrySet()) {
      require(table.get(e.getKey()) == e.getValue(), "a live key finds its object");
      if (tagged) {
        require(table.get(e.getKey() ^ 0x5a) == null, "another tag of a live key finds nothing");
      }
    }
  }

  private static RdmaException expectThrows(Runnable r) {
    try {
      r.run();
    } catch (RdmaException e) {
      return e;
    }
    throw new AssertionError("no RdmaException");
  }

  private static void require(boolean ok, String what) {
    if (!ok) throw new AssertionError(what);
  }
}

package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.runtime.internal.CmDispatcher;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The ids of the SIDR requests an endpoint accepted, each with the UD QP its answer named (the
 * peer sends there), at most {@code max}: the oldest goes first, and a peer that asks again
 * replaces its old one. A peer whose QP went is not told (datagrams are unreliable): its
 * datagrams are dropped until it resolves again, hence a bound the application sets.
 */
@InternalApi
public final class SidrAnswers {
  private final CmDispatcher ids;
  private final int max;
  private final LinkedHashMap<CmId, PeerKey> accepted = new LinkedHashMap<>();
  private final Map<PeerKey, CmId> byPeer = new HashMap<>();

  public SidrAnswers(CmDispatcher ids, int max) {
    this.ids = ids;
    this.max = max;
  }

  /** Keeps {@code id}, accepted for {@code peer} (null when it did not say who it is). */
  public void accepted(CmId id, PeerKey peer) {
    if (peer != null) {
      CmId old = byPeer.put(peer, id);
      if (old != null && accepted.remove(old) != null) ids.destroy(old, false);
    }
    accepted.put(id, peer);
    Iterator<Map.Entry<CmId, PeerKey>> it = accepted.entrySet().iterator();
    while (accepted.size() > max && it.hasNext()) {
      Map.Entry<CmId, PeerKey> eldest = it.next();
      it.remove();
      if (eldest.getValue() != null) byPeer.remove(eldest.getValue(), eldest.getKey());
      ids.destroy(eldest.getKey(), false);
    }
  }

  public boolean owns(CmId id) {
    return accepted.containsKey(id);
  }

  public int size() {
    return accepted.size();
  }

  /** Destroys every id and its QP: before the resources they use go. */
  public void closeAll() {
    for (CmId id : new ArrayList<>(accepted.keySet())) ids.destroy(id, false);
    accepted.clear();
    byPeer.clear();
  }
}

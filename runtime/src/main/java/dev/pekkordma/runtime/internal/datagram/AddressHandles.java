package dev.pekkordma.runtime.internal.datagram;

import dev.pekkordma.annotation.InternalApi;
import dev.pekkordma.verbs.AddressHandle;
import dev.pekkordma.verbs.AddressVector;
import dev.pekkordma.verbs.Gid;
import dev.pekkordma.verbs.ProtectionDomain;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The address handles of one PD, one per destination GID, at most {@code max}: the least
 * recently used goes first. A handle that sends in flight still name is destroyed only after
 * their completions, since the device reads it until then.
 */
@InternalApi
public final class AddressHandles {
  /** A handle, and how many sends in flight name it. */
  public static final class CountedHandle {
    public final AddressHandle ah;
    private int inFlight;
    private boolean retired;

    CountedHandle(AddressHandle ah) {
      this.ah = ah;
    }
  }

  private final ProtectionDomain pd;
  private final int max;
  private final LinkedHashMap<Gid, CountedHandle> byGid = new LinkedHashMap<>(16, 0.75f, true);
  private final List<CountedHandle> retired = new ArrayList<>();

  public AddressHandles(ProtectionDomain pd, int max) {
    this.pd = pd;
    this.max = max;
  }

  /**
   * The handle to {@code gid}, made of {@code av} (or, when null, a global route through
   * {@code port} from GID index {@code sgidIndex}) if need be; one more send in flight names it.
   */
  public CountedHandle acquire(Gid gid, AddressVector av, int sgidIndex, int port) {
    CountedHandle e = byGid.get(gid);
    if (e == null) {
      e = new CountedHandle(pd.createAddressHandle(av != null ? av
          : AddressVector.global(gid, sgidIndex, port)));
      byGid.put(gid, e);
      evict();
    }
    e.inFlight++;
    return e;
  }

  /** A send that named it completed. */
  public void release(CountedHandle e) {
    if (--e.inFlight == 0 && e.retired) {
      retired.remove(e);
      e.ah.close();
    }
  }

  private void evict() {
    Iterator<CountedHandle> it = byGid.values().iterator();
    while (byGid.size() > max && it.hasNext()) {
      CountedHandle e = it.next();
      it.remove();
      if (e.inFlight == 0) {
        e.ah.close();
      } else {
        e.retired = true;
        retired.add(e);
      }
    }
  }

  public int size() {
    return byGid.size();
  }

  /** Destroys every handle: the QPs that sent with them are gone. */
  public void closeAll() {
    List<CountedHandle> all = new ArrayList<>(byGid.values());
    all.addAll(retired);
    byGid.clear();
    retired.clear();
    for (CountedHandle e : all) {
      try {
        e.ah.close();
      } catch (RuntimeException x) {
        org.slf4j.LoggerFactory.getLogger(AddressHandles.class).warn("destroying an address"
            + " handle failed: {}", x.getMessage());
      }
    }
  }
}

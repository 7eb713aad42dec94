package dev.pekkordma.streams.impl.datagram;

import dev.pekkordma.cm.CmEvent;
import dev.pekkordma.cm.CmEventChannel;
import dev.pekkordma.cm.CmId;
import dev.pekkordma.cm.RdmaPortSpace;
import dev.pekkordma.runtime.CmDispatcher;
import java.util.function.Consumer;

/**
 * RDMA_PS_UDP ids on the runtime's CM dispatcher. The dispatcher makes TCP ids only, so a UDP id
 * is made on its channel (which any of its ids names) and handed to it with {@code own}: its
 * events then reach the owner as any other id's do, and it is destroyed through the dispatcher.
 * Nothing can happen on a new id before a verb is called on it, so owning it after making it
 * loses no event.
 */
final class UdpIds {
  private final CmDispatcher cm;
  private final CmEventChannel channel;

  UdpIds(CmDispatcher cm) {
    this.cm = cm;
    CmId probe = cm.createId("datagram channel probe", e -> {}, x -> {});
    try {
      channel = probe.channel();
    } finally {
      cm.destroy(probe, false);
    }
  }

  CmId create(Object context, Consumer<CmEvent> events, Consumer<RuntimeException> failed) {
    CmId id = channel.createId(context, RdmaPortSpace.UDP);
    try {
      cm.own(id, events, failed);
    } catch (RuntimeException e) {
      id.close();
      throw e;
    }
    return id;
  }

  /** Forgets and destroys the id (its QP first); {@code reject} a request nobody took. */
  void destroy(CmId id, boolean reject) {
    cm.destroy(id, reject);
  }
}

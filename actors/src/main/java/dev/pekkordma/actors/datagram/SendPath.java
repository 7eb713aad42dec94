package dev.pekkordma.actors.datagram;

import dev.pekkordma.runtime.internal.datagram.AddressHandles;
import dev.pekkordma.runtime.internal.datagram.UdResources;
import dev.pekkordma.runtime.internal.datagram.UdTarget;
import dev.pekkordma.verbs.WcStatus;
import java.net.InetSocketAddress;
import java.util.ArrayDeque;
import org.apache.pekko.actor.typed.ActorRef;
import org.apache.pekko.util.ByteString;

/**
 * The sends of one datagram actor: each waits for a registered send slot (there are as many as
 * the send queue is deep, so a post never overruns it), is copied in, and the ready ones are
 * posted in one call. A slot comes back with its send's completion, which answers the sender.
 */
final class SendPath {
  /** A send waiting for a slot; {@code to} names it in answers (null for a reply). */
  record PendingSend(UdTarget target, ByteString data, ActorRef<SendResult> replyTo,
      InetSocketAddress to) {}

  private final UdResources res;
  private final AddressHandles handles;
  private final ArrayDeque<PendingSend> ready = new ArrayDeque<>();
  private final int[] free;
  private int freeCount;
  private final AddressHandles.CountedHandle[] slotHandle;
  private final PendingSend[] slotSend;

  SendPath(UdResources res, AddressHandles handles) {
    this.res = res;
    this.handles = handles;
    free = new int[res.sends];
    for (int i = res.sends - 1; i >= 0; i--) free[freeCount++] = i;
    slotHandle = new AddressHandles.CountedHandle[res.sends];
    slotSend = new PendingSend[res.sends];
  }

  /** Sends waiting for a slot. */
  int waiting() {
    return ready.size();
  }

  /** Sends posted whose completion has not come. */
  int inFlight() {
    return res.sends - freeCount;
  }

  void add(PendingSend p) {
    ready.add(p);
  }

  /** Posts what has a slot, in one call. */
  void drain() {
    int posted = 0;
    while (freeCount > 0 && !ready.isEmpty()) {
      PendingSend p = ready.poll();
      AddressHandles.CountedHandle h;
      try {
        h = handles.acquire(p.target().av().dgid(), p.target().av(), 0, 0);
      } catch (RuntimeException e) {
        answer(p, "its address handle could not be made: " + e.getMessage());
        continue;
      }
      int slot = free[--freeCount];
      slotHandle[slot] = h;
      slotSend[slot] = p;
      res.addSend(slot, p.data(), h.ah, p.target().qpn(), p.target().qkey());
      posted++;
    }
    if (posted > 0) res.flushSends();
  }

  /** A send's completion: answers its sender, and frees its slot and address handle. */
  void completed(int slot, int status) {
    PendingSend p = slotSend[slot];
    if (p == null) return;
    handles.release(slotHandle[slot]);
    slotHandle[slot] = null;
    slotSend[slot] = null;
    free[freeCount++] = slot;
    if (status == 0) {
      if (p.replyTo() != null) p.replyTo().tell(new SendResult.Sent(p.to(), p.data().size()));
    } else {
      answer(p, "the send completed with " + WcStatus.of(status));
    }
  }

  /** Answers every send not yet completed and every waiting one: the actor is going. */
  void failAll(String reason) {
    for (int i = 0; i < slotSend.length; i++) {
      if (slotSend[i] != null) answer(slotSend[i], reason);
      slotSend[i] = null;
    }
    for (PendingSend p; (p = ready.poll()) != null; ) answer(p, reason);
  }

  static void answer(PendingSend p, String reason) {
    if (p.replyTo() != null) {
      p.replyTo().tell(new SendResult.SendFailed(p.to(), reason));
    }
  }
}

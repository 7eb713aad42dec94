package dev.pekkordma.actors;

import dev.pekkordma.verbs.CompletionChannel;
import dev.pekkordma.verbs.CompletionQueue;
import dev.pekkordma.verbs.DeviceContext;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;

/**
 * One open device context and what the actors of that device share: its completion channel,
 * and who owns each QP and CQ, so async events and completions reach their owners. The maps are
 * written when a QP or CQ is made, before anything can happen on it, hence concurrent maps and
 * not messages.
 */
final class DeviceSession {
  final String name;
  final DeviceContext context;
  final CompletionChannel channel;
  final RdmaActorsSettings settings;
  final ActorRef<DeviceActor.Command> device;
  private final Map<Integer, ActorRef<QpActor.Command>> qpOwners = new ConcurrentHashMap<>();
  final Map<CompletionQueue, CqEntry> cqs = new ConcurrentHashMap<>();
  private volatile ActorRef<CqPoller.Command> poller;

  /** A CQ, its owner, and whether its owner let go of it (the poller closes it then). */
  static final class CqEntry {
    final CompletionQueue cq;
    final ActorRef<QpActor.Command> owner;
    volatile boolean closing;
    volatile boolean failed;

    CqEntry(CompletionQueue cq, ActorRef<QpActor.Command> owner) {
      this.cq = cq;
      this.owner = owner;
    }
  }

  DeviceSession(String name, DeviceContext context, RdmaActorsSettings settings,
      ActorRef<DeviceActor.Command> device) {
    this.name = name;
    this.context = context;
    this.settings = settings;
    this.device = device;
    this.channel = context.createCompletionChannel();
  }

  void poller(ActorRef<CqPoller.Command> p) {
    poller = p;
  }

  /** A CQ on the session's channel, armed at once so its first completion wakes the poller. */
  CqEntry createCq(int size, ActorRef<QpActor.Command> owner) {
    CompletionQueue cq = context.createCq(size, channel);
    try {
      cq.requestNotify(false);
    } catch (RuntimeException e) {
      cq.close();
      throw e;
    }
    CqEntry e = new CqEntry(cq, owner);
    cqs.put(cq, e);
    return e;
  }

  /** The owner is done with the CQ (its QP is destroyed): the poller closes it. */
  void releaseCq(CqEntry e) {
    e.closing = true;
    ActorRef<CqPoller.Command> p = poller;
    if (p != null) p.tell(new CqPoller.Close(e));
    // without a poller the CQ stays in the map and close() below takes it
  }

  void registerQp(int qpNum, ActorRef<QpActor.Command> owner) {
    qpOwners.put(qpNum, owner);
  }

  void unregisterQp(int qpNum) {
    qpOwners.remove(qpNum);
  }

  ActorRef<QpActor.Command> qpOwner(int qpNum) {
    return qpOwners.get(qpNum);
  }

  /** Acknowledges every channel event waiting, so that their CQs can be destroyed. */
  int drainChannel() {
    int n = 0;
    CompletionQueue cq;
    while ((cq = channel.awaitEvent(Duration.ZERO)) != null) {
      channel.ackEvents(cq, 1);
      n++;
    }
    return n;
  }

  /**
   * Closes what the owners left (CQs whose poller was gone) and the channel; called once the
   * device's child actors have stopped, so nothing else touches them.
   */
  void close(Logger log) {
    try {
      drainChannel();
    } catch (RuntimeException e) {
      log.warn("{}: draining the completion channel failed: {}", name, e.getMessage());
    }
    for (CqEntry e : new ArrayList<>(cqs.values())) {
      try {
        e.cq.close();
      } catch (RuntimeException ex) {
        log.error("{}: closing a CQ failed: {}", name, ex.getMessage());
      }
      cqs.remove(e.cq);
    }
    try {
      channel.close();
    } catch (RuntimeException e) {
      log.error("{}: closing the completion channel failed: {}", name, e.getMessage());
    }
  }
}

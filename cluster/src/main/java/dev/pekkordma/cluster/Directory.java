package dev.pekkordma.cluster;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.pekko.Done;
import org.apache.pekko.actor.Address;

/**
 * What streams, which run outside the coordinator, need to know of the members: the endpoint of
 * each member that may be connected to, its member by uid, and a gate per member that is open
 * while it is reachable, shut while it is not, and failed once it is refused, downed or
 * removed. Written by the coordinator only.
 */
final class Directory {
  private final Map<Address, Endpoint> endpoints = new ConcurrentHashMap<>();
  private final Map<Long, Address> members = new ConcurrentHashMap<>();
  private final Map<Address, CompletableFuture<Done>> gates = new ConcurrentHashMap<>();

  /** The member may be connected to (a new incarnation replaces the old). */
  void accept(Endpoint e, boolean reachable) {
    Endpoint old = endpoints.put(e.member(), e);
    if (old != null && old.uid() != e.uid()) members.remove(old.uid());
    members.put(e.uid(), e.member());
    CompletableFuture<Done> gate = new CompletableFuture<>();
    if (reachable) gate.complete(Done.getInstance());
    CompletableFuture<Done> before = gates.put(e.member(), gate);
    if (before != null && !before.isDone()) {
      before.completeExceptionally(
          new SendFailedException(e.member(), "a new incarnation replaced it"));
    }
  }

  /** Reachability changed: shut the gate, or open it (what waited at it goes on). */
  void reachable(Address member, long uid, boolean reachable) {
    if (!members.containsKey(uid)) return;
    gates.compute(member, (a, gate) -> {
      if (reachable) {
        if (gate != null) gate.complete(Done.getInstance());
        return gate;
      }
      return gate == null || gate.isDone() ? new CompletableFuture<>() : gate;
    });
  }

  /** The incarnation {@code uid} of the member is gone or refused: what waits fails. */
  void forget(Address member, long uid, String why) {
    if (members.remove(uid) == null) return;
    Endpoint current = endpoints.get(member);
    if (current != null && current.uid() != uid) return; // a new incarnation has the address
    endpoints.remove(member);
    CompletableFuture<Done> gate = gates.remove(member);
    if (gate != null) gate.completeExceptionally(new SendFailedException(member, why));
  }

  Endpoint endpoint(Address member) {
    return endpoints.get(member);
  }

  Address member(long uid) {
    return members.get(uid);
  }

  /** Completes when the member may be sent to; fails when it may no longer be. */
  CompletableFuture<Done> gate(Address member) {
    CompletableFuture<Done> g = gates.get(member);
    return g != null ? g : CompletableFuture.failedFuture(new SendFailedException(member,
        "it is not a member that can be connected to"));
  }
}

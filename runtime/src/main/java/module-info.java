/**
 * One runtime per actor system: the provider, the CM dispatcher, completion hubs, pollers. Its
 * API is {@code dev.pekkordma.runtime}; the machinery under it ({@code .internal}) is exported
 * only to the facades built on it.
 */
module dev.pekkordma.runtime {
  requires transitive dev.pekkordma.core;
  requires transitive pekko.actor.typed;
  requires pekko.actor;
  requires scala.library;
  requires org.slf4j;
  requires jdk.management;
  requires jdk.jfr;

  exports dev.pekkordma.runtime;
  exports dev.pekkordma.runtime.internal to dev.pekkordma.actors, dev.pekkordma.streams;
  exports dev.pekkordma.runtime.internal.datagram to dev.pekkordma.actors, dev.pekkordma.streams;
}

/** Pekko Typed actors that own every RDMA resource. */
module dev.pekkordma.actors {
  requires transitive dev.pekkordma.runtime;
  requires pekko.actor;
  requires scala.library;
  requires org.slf4j;

  exports dev.pekkordma.actors;
  exports dev.pekkordma.actors.datagram;
}

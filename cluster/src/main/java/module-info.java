/** Pekko Cluster members linked by RDMA channels. */
module dev.pekkordma.cluster {
  requires transitive dev.pekkordma.actors;
  requires transitive dev.pekkordma.streams;
  requires transitive pekko.cluster.typed;
  requires pekko.cluster;
  requires pekko.actor;
  requires scala.library;
  requires org.slf4j;

  exports dev.pekkordma.cluster;
}

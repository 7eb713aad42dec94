/** Pekko Streams over RDMA, shaped like Pekko's Tcp. */
module dev.pekkordma.streams {
  requires transitive dev.pekkordma.runtime;
  requires transitive pekko.stream;
  requires pekko.actor;
  requires scala.library;
  requires org.slf4j;
  requires jdk.jfr;

  exports dev.pekkordma.streams;
}

/** pekko-rdma's metrics as Micrometer meters. */
module dev.pekkordma.micrometer {
  requires transitive dev.pekkordma.streams;
  requires transitive micrometer.core;

  exports dev.pekkordma.micrometer;
}

/**
 * Samples that speak the wire protocols of rdma-core's own example programs, so that they run
 * against the real {@code ibv_rc_pingpong} and {@code rping}: {@link
 * dev.pekkordma.samples.interop.RcPingPong} and {@link dev.pekkordma.samples.interop.Rping}.
 */
package dev.pekkordma.samples.interop;

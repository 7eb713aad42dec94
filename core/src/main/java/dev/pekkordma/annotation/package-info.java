/** Annotations that say what a public element of pekko-rdma is for. */
package dev.pekkordma.annotation;

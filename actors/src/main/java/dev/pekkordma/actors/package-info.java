/** actors: see the README for what this module holds and what is still to come. */
package dev.pekkordma.actors;

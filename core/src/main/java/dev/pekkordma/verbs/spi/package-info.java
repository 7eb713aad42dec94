/**
 * What every provider builds on, written once: the tree of open resources (a parent refuses to
 * close while a child is open, EBUSY) and the checks of arguments that verbs make before any
 * driver sees them. Beside it in the API: {@link dev.pekkordma.verbs.QpStateMachine} (legal
 * transitions), {@link dev.pekkordma.verbs.QpType#allows} (opcodes per QP type), {@link
 * dev.pekkordma.verbs.ResourceCounters} (live resources) and {@link
 * dev.pekkordma.verbs.Access#validate} (access flags). For provider authors, not applications.
 */
package dev.pekkordma.verbs.spi;

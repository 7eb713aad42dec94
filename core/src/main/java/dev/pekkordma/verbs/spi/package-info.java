/**
 * What every provider builds on, written once: the tree of open resources (a parent refuses to
 * close while a child is open, EBUSY), the checks of arguments that verbs make before any driver
 * sees them, the counters of live resources ({@link ResourceCounters}) and the test hooks of a
 * provider that models the hardware ({@link FaultInjection}). Beside it in the API: {@link
 * dev.pekkordma.verbs.QpStateMachine} (legal transitions), {@link
 * dev.pekkordma.verbs.QpType#allows} (opcodes per QP type) and {@link
 * dev.pekkordma.verbs.Access#validate} (access flags). For provider authors and tests, not
 * applications.
 */
package dev.pekkordma.verbs.spi;

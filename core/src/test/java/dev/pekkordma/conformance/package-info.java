/**
 * The verbs and CM conformance suite: JUnit 5 tests written against the {@code dev.pekkordma.verbs}
 * and {@code dev.pekkordma.cm} API only, so every provider runs the very same classes. Core ships
 * them in its test-jar; the native module runs them with {@code -Dpekko-rdma.provider=native}.
 *
 * <p>Run on the software provider (the default when {@code pekko-rdma.provider} is not set):
 *
 * <pre>mvn -pl core test -Dtest='dev.pekkordma.conformance.**'</pre>
 *
 * <p>System properties:
 *
 * <ul>
 *   <li>{@code pekko-rdma.provider}: soft (default here), native or auto;
 *   <li>{@code pekko-rdma.test.cm-address}: the address CM servers bind to and clients connect
 *       to (default 127.0.0.1; 192.0.2.x on the Soft-RoCE VM);
 *   <li>{@code pekko-rdma.test.device}: the device (default: the first listed);
 *   <li>{@code pekko-rdma.test.gid-index}: the GID index (default: the first IPv4-mapped GID of the
 *       port, else its first non-zero one).
 * </ul>
 *
 * <p>Every test checks that the provider's live resources are back where they were; what a
 * provider does not support ({@code supports(Feature)} false, no {@code faults()}) is skipped with
 * the reason, printed as {@code [conformance] SKIPPED}. Two tests start a second JVM ({@link
 * dev.pekkordma.conformance.VerbsPeerMain}, {@link dev.pekkordma.conformance.CmPeerMain}) with the
 * same class path and {@code pekko-rdma.*} properties.
 */
package dev.pekkordma.conformance;

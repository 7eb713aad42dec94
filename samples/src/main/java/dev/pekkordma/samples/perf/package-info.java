/**
 * rdma-perf: perftest's send, write and read bandwidth and latency tests on the verbs API, with
 * perftest's output and options, -q (several QPs), -b (both directions), -D (a time instead of
 * a count) and -c (RC, UC or UD) among them. {@link dev.pekkordma.samples.perf.RdmaPerf} is the
 * command line; {@link dev.pekkordma.samples.perf.PerfRun} runs a test in one JVM (QPs connected
 * by hand) or as a server and a client connected through rdma_cm. Requests and completions go
 * through reusable off-heap batches; the measured loops allocate nothing per request.
 */
package dev.pekkordma.samples.perf;

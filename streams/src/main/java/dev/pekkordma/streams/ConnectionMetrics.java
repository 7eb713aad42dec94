package dev.pekkordma.streams;

import java.net.InetSocketAddress;
import java.time.Duration;

/**
 * One live connection, as the metrics see it: its role ("client" or "server"), its ends, how
 * long it has been up, what moved each way, and how often its writes waited for the peer to free
 * a slot (credit stalls: a slow reader on the other side).
 */
public record ConnectionMetrics(String role, InetSocketAddress remote, InetSocketAddress local,
    Duration up, long bytesSent, long messagesSent, long bytesReceived, long messagesReceived,
    long creditStalls) {}

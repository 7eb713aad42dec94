package dev.pekkordma.streams;

/**
 * What a connection moved, once it closed gracefully: every message sent had reached the peer's
 * application (the peer said so in the close handshake) and every message received was taken
 * by downstream.
 */
public record TransferResult(long bytesSent, long messagesSent, long bytesReceived,
    long messagesReceived) {}

package dev.pekkordma.config;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/** Exponential backoff: min, doubling up to max, each delay varied by up to randomFactor. */
public record Backoff(Duration min, Duration max, double randomFactor) {
  /** The delay before attempt {@code attempt} (1 for the first retry). */
  public Duration delay(int attempt) {
    double base = min.toNanos() * Math.pow(2, Math.max(0, Math.min(attempt - 1, 30)));
    double capped = Math.min(base, max.toNanos());
    double jitter = 1 + randomFactor * ThreadLocalRandom.current().nextDouble();
    return Duration.ofNanos((long) Math.min(capped * jitter, Long.MAX_VALUE / 2.0));
  }
}

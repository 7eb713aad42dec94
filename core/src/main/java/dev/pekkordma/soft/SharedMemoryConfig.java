package dev.pekkordma.soft;

import dev.pekkordma.config.RdmaSettings.SoftSettings;
import java.nio.file.Path;

/**
 * Whether and how this fabric offers same-host links through shared memory ({@code
 * pekko-rdma.soft.fabric.shared-memory}, {@code -directory}, {@code -ring}).
 */
record SharedMemoryConfig(boolean auto, Path directory, int ring) {
  static SharedMemoryConfig of(SoftSettings s) {
    return new SharedMemoryConfig(s.fabricSharedMemory, Path.of(s.fabricSharedMemoryDirectory),
        s.fabricSharedMemoryRing);
  }
}

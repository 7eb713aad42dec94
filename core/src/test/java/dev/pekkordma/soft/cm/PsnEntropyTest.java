package dev.pekkordma.soft.cm;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.testing.CollisionEntropy;
import org.junit.jupiter.api.Test;

/** The CM's initial PSNs are drawn from all 24 bits by a cryptographic generator. */
class PsnEntropyTest {
  @Test
  void initialPsnsCarryAbout24RandomBits() {
    int[] psns = new int[1 << 15];
    for (int i = 0; i < psns.length; i++) psns[i] = CmChecks.newPsn();
    double bits = CollisionEntropy.ofDifferences(psns, 24);
    System.out.printf("[entropy] initial PSN: %.1f random bits of 24 over %d connections%n", bits,
        psns.length);
    assertTrue(bits > 22, "initial PSNs carry " + bits + " random bits");
  }
}

package dev.pekkordma.verbs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.EnumSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The opcode table against libibverbs' own, ibv_post_send(3). */
class QpTypeTest {
  private static Set<WrOpcode> allowed(QpType t) {
    Set<WrOpcode> s = EnumSet.noneOf(WrOpcode.class);
    for (WrOpcode op : WrOpcode.values()) if (t.allows(op)) s.add(op);
    return s;
  }

  @Test
  void eachTypeTakesWhatLibibverbsSaysItTakes() {
    assertEquals(EnumSet.of(WrOpcode.SEND, WrOpcode.SEND_WITH_IMM), allowed(QpType.UD));
    assertEquals(EnumSet.of(WrOpcode.SEND, WrOpcode.SEND_WITH_IMM, WrOpcode.RDMA_WRITE,
        WrOpcode.RDMA_WRITE_WITH_IMM, WrOpcode.LOCAL_INV, WrOpcode.BIND_MW,
        WrOpcode.SEND_WITH_INV), allowed(QpType.UC));
    assertEquals(EnumSet.allOf(WrOpcode.class), allowed(QpType.RC));
  }
}

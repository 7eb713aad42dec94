package dev.pekkordma.streams.impl;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.pekkordma.verbs.WcOpcode;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Assume;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

/**
 * The validator against a model of an honest peer: every sequence an honest peer can send is
 * let through, and one message breaking a rule, wherever it comes in such a sequence, is
 * refused at once with that rule.
 */
class ProtocolValidatorPropertyTest {

  /** The rules a message can break, each set up by honest messages first where it needs to. */
  enum Violation {
    NO_IMMEDIATE("without an immediate"), BATCH_NOT_OFFERED("did not offer to take them"),
    BATCH_MID_MESSAGE("a BATCH in the middle of a message"), SHORT_BATCH("too few for one"),
    UNKNOWN_CODE("unknown control code"), DATA_ON_A_SEND("data immediate"),
    CONTROL_ON_A_WRITE("control immediate"), LONGER_THAN_A_SLOT("larger than our slots"),
    MORE_WRITES_THAN_CREDITS("more writes than the credits"), SHORT_MORE("a MORE write of"),
    CREDITS_NOT_LENT("credits, but only"), EMPTY_CREDIT("no credits"), FIN_TWICE("second FIN"),
    DATA_AFTER_FIN("data after its FIN"), FIN_MID_MESSAGE("in the middle of a message"),
    EARLY_FIN_ACK("before our FIN"), FIN_ACK_TWICE("second FIN_ACK"),
    CANCEL_TWICE("second CANCEL"), CANCEL_COUNT("a CANCEL saying it took"),
    MESSAGE_TOO_LONG("max-message-size");

    final String says;

    Violation(String says) {
      this.says = says;
    }

    /** The honest steps left out before it: those after which it would break another rule. */
    boolean allows(int step) {
      switch (this) {
        case LONGER_THAN_A_SLOT, MORE_WRITES_THAN_CREDITS, SHORT_MORE, FIN_MID_MESSAGE,
            MESSAGE_TOO_LONG, BATCH_MID_MESSAGE, SHORT_BATCH, BATCH_NOT_OFFERED:
          return step != 8; // data after its FIN would be refused first
        case EARLY_FIN_ACK:
          return step != 6;
        case CANCEL_COUNT:
          return step != 9;
        default:
          return true;
      }
    }

    /** Whether it can be broken where our ring offers BATCH writes ({@code batches}) or not. */
    boolean appliesWhen(boolean batches) {
      return switch (this) {
        case BATCH_NOT_OFFERED -> !batches;
        case BATCH_MID_MESSAGE, SHORT_BATCH -> batches;
        default -> true;
      };
    }
  }

  @Property(tries = 1000)
  void anHonestPeerIsNeverRefused(@ForAll("geometry") int[] g,
      @ForAll @Size(max = 300) List<@IntRange(min = 0, max = 10) Integer> steps) {
    Model m = new Model(g);
    for (int step : steps) m.honest(step);
  }

  @Property(tries = 3000)
  void oneBrokenRuleIsRefusedWhereverItComes(@ForAll("geometry") int[] g,
      @ForAll @Size(max = 200) List<@IntRange(min = 0, max = 10) Integer> prefix,
      @ForAll Violation violation, @ForAll @IntRange(min = 0, max = 1 << 20) int noise) {
    Assume.that(violation.appliesWhen(g[4] == 1));
    Model m = new Model(g);
    for (int step : prefix) {
      if (violation.allows(step)) m.honest(step);
    }
    String wrong = m.violate(violation, noise);
    assertNotNull(wrong, violation + " was let through");
    assertTrue(wrong.contains(violation.says), violation + ": " + wrong);
  }

  /** Our slots, slot size, the peer's slot size, max-message-size, and 1: we take batches. */
  @Provide
  Arbitrary<int[]> geometry() {
    return Arbitraries.integers().between(1, 8).flatMap(slots ->
        Arbitraries.integers().between(1, 64).flatMap(size ->
            Arbitraries.integers().between(1, 64).flatMap(peerSize ->
                Arbitraries.integers().between(64, 600).flatMap(max ->
                    Arbitraries.integers().between(0, 1).map(batches ->
                        new int[] {slots, size, peerSize, max, batches})))));
  }

  /** An honest peer and our side, as the protocol says they behave; the validator watches. */
  static final class Model {
    final int slots;
    final int slotSize;
    final int fullWrite;
    final int maxMessage;
    final boolean batches;
    final ProtocolValidator v;
    long ourWrites; // our data writes to the peer
    long peerTook; // of ours, taken (or dropped after its CANCEL) by the peer
    long peerReturned; // credits it gave back for them
    long peerWritten; // its data writes to us
    long granted; // our ring, plus the credits we sent
    long weTook; // of its writes, taken by our application
    long message; // bytes of its unfinished message
    boolean peerMid;
    boolean peerFin;
    boolean peerFinAck;
    boolean peerCancel;
    boolean weFin;

    Model(int[] g) {
      slots = g[0];
      slotSize = g[1];
      fullWrite = Math.min(g[1], g[2]);
      maxMessage = g[3];
      granted = slots;
      v = new ProtocolValidator(slots, slotSize, maxMessage, "x.max-message-size");
      batches = g[4] == 1;
      if (batches) v.takeBatches();
      v.peerRing(new Wire.Ring(1 << 20, 7, 4, g[2]));
    }

    int owed() {
      return (int) (peerTook - peerReturned);
    }

    String receive(WcOpcode op, boolean withImm, int length, int imm) {
      return v.receive(op, withImm, length, imm, ourWrites);
    }

    void ok(WcOpcode op, int length, int imm) {
      assertNull(receive(op, true, length, imm), "an honest message");
    }

    /** Returns what it owes: its next message carries them. */
    int takeOwed() {
      int n = owed();
      peerReturned += n;
      return n;
    }

    boolean canWrite() {
      return !peerFin && peerWritten < granted;
    }

    void write(boolean more, int length) {
      ok(WcOpcode.RECV_RDMA_WITH_IMM, length, Wire.data(more ? Wire.MORE : Wire.END,
          takeOwed()));
      peerWritten++;
      peerMid = more;
      message = more ? message + length : 0;
    }

    void honest(int step) {
      switch (step) {
        case 0 -> {
          if (!weFin) ourWrites++;
        }
        case 1 -> {
          if (peerTook < ourWrites) peerTook++;
        }
        case 2 -> {
          int length = (int) ((ourWrites * 7 + peerWritten) % (slotSize + 1));
          if (canWrite() && message + length <= maxMessage) write(false, length);
        }
        case 3 -> {
          if (canWrite() && message + fullWrite <= maxMessage) write(true, fullWrite);
        }
        case 4 -> {
          if (owed() > 0) ok(WcOpcode.RECV, 0, Wire.control(Wire.CREDIT, takeOwed()));
        }
        case 5 -> {
          if (weTook < peerWritten) weTook++;
          long due = weTook + slots - granted;
          if (due > 0) {
            v.sentCredits((int) due);
            granted += due;
          }
        }
        case 6 -> {
          if (!weFin) {
            v.sentFin();
            weFin = true;
          }
        }
        case 7 -> {
          if (weFin && !peerFinAck) {
            ok(WcOpcode.RECV, 0, Wire.control(Wire.FIN_ACK, takeOwed()));
            peerFinAck = true;
          }
        }
        case 8 -> {
          if (!peerFin && !peerMid) {
            ok(WcOpcode.RECV, 0, Wire.control(Wire.FIN, takeOwed()));
            peerFin = true;
          }
        }
        case 9 -> {
          if (!peerCancel) {
            ok(WcOpcode.RECV, 0, Wire.control(Wire.CANCEL, (int) (peerTook & 0xFFFFFF)));
            peerCancel = true;
          }
        }
        case 10 -> { // a BATCH: whole ByteStrings, each no longer than max-message-size
          if (batches && canWrite() && !peerMid && slotSize >= Wire.BATCH_HEADER) {
            int length = Wire.BATCH_HEADER + (int) ((ourWrites * 5 + peerWritten)
                % (slotSize - Wire.BATCH_HEADER + 1));
            ok(WcOpcode.RECV_RDMA_WITH_IMM, length, Wire.data(Wire.BATCH, takeOwed()));
            peerWritten++;
          }
        }
        default -> throw new IllegalArgumentException("step " + step);
      }
    }

    /** Sets up what {@code what} needs with honest messages, then breaks it; the answer. */
    String violate(Violation what, int noise) {
      switch (what) {
        case NO_IMMEDIATE:
          return receive(WcOpcode.RECV, false, 0, noise);
        case BATCH_NOT_OFFERED:
          credit();
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, noise % (slotSize + 1),
              Wire.data(Wire.BATCH, 0));
        case BATCH_MID_MESSAGE:
          if (!peerMid) {
            credit();
            write(true, fullWrite);
          }
          credit();
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, Math.min(slotSize, 4),
              Wire.data(Wire.BATCH, 0));
        case SHORT_BATCH:
          if (peerMid) { // the message under way ends first
            credit();
            write(false, 0);
          }
          credit();
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, noise % Wire.BATCH_HEADER,
              Wire.data(Wire.BATCH, 0));
        case UNKNOWN_CODE:
          return receive(WcOpcode.RECV, true, 0, Wire.control(6 + noise % 58, 0));
        case DATA_ON_A_SEND:
          return receive(WcOpcode.RECV, true, 0, Wire.data(noise % 2, 0));
        case CONTROL_ON_A_WRITE:
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, noise % (slotSize + 1),
              Wire.control(Wire.CREDIT, 1));
        case LONGER_THAN_A_SLOT:
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, slotSize + 1 + noise,
              Wire.data(Wire.END, 0));
        case MORE_WRITES_THAN_CREDITS:
          while (canWrite()) write(false, 0);
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, 0, Wire.data(Wire.END, 0));
        case SHORT_MORE:
          credit();
          int least = Math.min(Wire.MIN_PIECE, fullWrite);
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true,
              least == 1 ? 0 : noise % least, Wire.data(Wire.MORE, 0));
        case CREDITS_NOT_LENT:
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.CREDIT,
              (int) Math.min(0xFFFFFF, ourWrites - peerReturned + 1 + noise % 1000)));
        case EMPTY_CREDIT:
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.CREDIT, 0));
        case FIN_TWICE:
          fin();
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.FIN, 0));
        case DATA_AFTER_FIN:
          fin();
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, 0, Wire.data(Wire.END, 0));
        case FIN_MID_MESSAGE:
          if (!peerMid) {
            credit();
            write(true, fullWrite); // fits: max-message-size is at least any slot here
          }
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.FIN, 0));
        case EARLY_FIN_ACK:
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.FIN_ACK, 0));
        case FIN_ACK_TWICE:
          honest(6);
          honest(7);
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.FIN_ACK, 0));
        case CANCEL_TWICE:
          honest(9);
          return receive(WcOpcode.RECV, true, 0, Wire.control(Wire.CANCEL, 0));
        case CANCEL_COUNT:
          return receive(WcOpcode.RECV, true, 0,
              Wire.control(Wire.CANCEL, (int) ourWrites + 1 + noise % 1000));
        case MESSAGE_TOO_LONG:
          while (message + fullWrite <= maxMessage) {
            credit();
            write(true, fullWrite);
          }
          credit();
          return receive(WcOpcode.RECV_RDMA_WITH_IMM, true, (int) (maxMessage - message + 1),
              Wire.data(Wire.END, 0));
        default:
          throw new IllegalArgumentException(what.name());
      }
    }

    /** Our application takes what it has, and we grant the slots, until the peer has one. */
    private void credit() {
      while (peerWritten >= granted) honest(5);
    }

    /** Its FIN, the message under way ended first. */
    private void fin() {
      if (peerFin) return;
      if (peerMid) {
        credit();
        write(false, 0);
      }
      honest(8);
    }
  }
}

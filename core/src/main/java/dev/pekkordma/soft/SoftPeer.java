package dev.pekkordma.soft;

import dev.pekkordma.verbs.Gid;

/**
 * How a requester reaches the responder QPs of one device: in memory for a device of this JVM,
 * over the fabric for one in another process. An RC request is answered exactly once, through
 * the {@code response} filled in (in memory, before returning) or later through {@link
 * Requester#onResponse}; a request nobody answers is the transport timer's business.
 */
interface SoftPeer {
  /** {@link #request}'s and {@link #datagram}'s outcomes. */
  int SENT = 0;
  /** The requester's memory was deregistered while it was read: the request is void. */
  int SOURCE_GONE = 1;
  /** The peer's process cannot be reached now. */
  int UNREACHABLE = 2;

  /**
   * Whether responses arrive by filling {@code response} before {@link #request} returns: so
   * for every peer in this JVM; a peer in another process answers later.
   */
  default boolean synchronous() {
    return true;
  }

  /**
   * The engine that works the send queues of QPs talking to this peer: the requester's own
   * device's for a peer in this JVM; a peer in another process has its link's.
   */
  default SoftEngine engine(SoftDevice requesterDevice) {
    return requesterDevice.engine;
  }

  int request(SoftQp requester, RequestHeader header, Segments payload, Response response);

  /** An unreliable datagram (UD) or unacknowledged message (UC): no answer. */
  int datagram(SoftQp requester, RequestHeader header, Segments payload);

  /** A connected QP's route is set: failures of the peer's process reach it from now on. */
  default void attach(SoftQp qp) {}

  /** The QP is reset or destroyed. */
  default void detach(SoftQp qp) {}

  /** Where the device with {@code gid} is, for messages ("soft0 in this JVM", an address). */
  String describe(Gid gid);

  /** One request's fields, reused by its requester. */
  final class RequestHeader {
    int destQpn;
    int srcQpn;
    int psn;
    int opcode; // WrOpcode code
    int sendFlags;
    int immOrRkeyBigEndian;
    long remoteAddress;
    int rkey;
    long compareAdd;
    long swap;
    long readLength;
    long payloadLength;
    int qkey;
    /**
     * A UD datagram's destination GID (its AH's), which the receiver's GRH shows; null where
     * the fabric does not carry it (the receiving device's own GID then).
     */
    byte[] dgid;
    /** The requester's GID: set by the requester in this JVM, by the link that vouches for it. */
    final byte[] srcGid = new byte[16];
  }

  /** The answer to one RC request. */
  final class Response {
    static final int ACK = 0;
    static final int RNR_NAK = 1;
    static final int NAK_INVALID_REQUEST = 2;
    static final int NAK_REMOTE_ACCESS = 3;
    static final int NAK_REMOTE_OPERATION = 4;
    /** Not an IB packet: the request was silently dropped, so the requester must time out. */
    static final int DROPPED = 5;

    int psn;
    int code;
    int rnrTimer;
    long atomicValue;
    long readLength;
    /** Where an RDMA READ's data lies in the responder's memory, fenced. */
    final Segments readSource = new Segments(1);
  }
}

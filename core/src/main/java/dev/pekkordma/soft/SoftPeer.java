package dev.pekkordma.soft;

/**
 * How a requester reaches the responder QPs of one device: in memory for a device of this JVM,
 * over TCP for one in another process. An RC request is answered exactly once, through the
 * {@code response} filled in (in memory, before returning) or later through {@link
 * SoftQp#onResponse}.
 */
interface SoftPeer {
  /** Whether responses arrive by filling {@code response} before {@link #request} returns. */
  boolean synchronous();

  void request(SoftQp requester, RequestHeader header, Segments payload, Response response);

  /** An unreliable datagram (UD) or unacknowledged message (UC): no answer. */
  void datagram(SoftQp requester, RequestHeader header, Segments payload);

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
    int readLength;
    int qkey;
    byte[] srcGid = new byte[16];
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
    long readAddress; // where the read data lies (responder memory, or a receive buffer)
    int readLength;
  }
}

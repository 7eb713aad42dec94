package dev.pekkordma.verbs;

/**
 * A verb failed. Carries the verb's name and, where the failure maps to one, the errno a C
 * program would have seen (EINVAL, ENOMEM, ...), so messages read the same on both providers.
 */
public class RdmaException extends RuntimeException {
  public static final int EPERM = 1;
  public static final int ENOENT = 2;
  public static final int EIO = 5;
  public static final int EAGAIN = 11;
  public static final int ENOMEM = 12;
  public static final int EFAULT = 14;
  public static final int EBUSY = 16;
  public static final int ENODEV = 19;
  public static final int EINVAL = 22;
  public static final int ENOSPC = 28;
  public static final int EPROTONOSUPPORT = 93;
  public static final int EOPNOTSUPP = 95;
  public static final int EADDRINUSE = 98;
  public static final int EADDRNOTAVAIL = 99;
  public static final int EPROTO = 71;
  public static final int ENETUNREACH = 101;
  public static final int ECONNRESET = 104;
  public static final int ETIMEDOUT = 110;
  public static final int ECONNREFUSED = 111;
  public static final int EHOSTUNREACH = 113;

  private final String verb;
  private final int errno;

  public RdmaException(String verb, int errno, String message) {
    super(verb + ": " + message + (errno != 0 ? " (" + errnoName(errno) + ")" : ""));
    this.verb = verb;
    this.errno = errno;
  }

  public RdmaException(String verb, int errno, String message, Throwable cause) {
    this(verb, errno, message);
    initCause(cause);
  }

  public String verb() {
    return verb;
  }

  public int errno() {
    return errno;
  }

  public static String errnoName(int errno) {
    switch (errno) {
      case EPERM: return "EPERM";
      case ENOENT: return "ENOENT";
      case EIO: return "EIO";
      case EAGAIN: return "EAGAIN";
      case ENOMEM: return "ENOMEM";
      case EFAULT: return "EFAULT";
      case EBUSY: return "EBUSY";
      case ENODEV: return "ENODEV";
      case EINVAL: return "EINVAL";
      case ENOSPC: return "ENOSPC";
      case EPROTO: return "EPROTO";
      case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
      case EOPNOTSUPP: return "EOPNOTSUPP";
      case EADDRINUSE: return "EADDRINUSE";
      case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
      case ENETUNREACH: return "ENETUNREACH";
      case ECONNRESET: return "ECONNRESET";
      case ETIMEDOUT: return "ETIMEDOUT";
      case ECONNREFUSED: return "ECONNREFUSED";
      case EHOSTUNREACH: return "EHOSTUNREACH";
      default: return "errno " + errno;
    }
  }
}

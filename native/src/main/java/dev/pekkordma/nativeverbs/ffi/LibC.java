package dev.pekkordma.nativeverbs.ffi;

import dev.pekkordma.annotation.InternalApi;
import jnr.ffi.annotations.SaveError;

/** What the provider needs from libc. */
@InternalApi
@SaveError
public interface LibC {
  int poll(long fds, long nfds, int timeoutMs);
  String strerror(int errnum);
  int getrlimit(int resource, long rlimit);
  int eventfd(int initval, int flags);
  long write(int fd, long buf, long count);
  int close(int fd);
}

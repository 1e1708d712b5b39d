/* Writing a whole buffer to a file descriptor: the one loop of the exit
 * report, the log and the trace writer.
 *
 * DESIGN: header-only and libc-only like every file of util/ (see grow.h).
 * write(2) may write less than asked or be interrupted by a signal; both are
 * continued. Allocates nothing and calls only write(2), so the log may use it
 * from any thread. */
#ifndef GRAPE_UTIL_WRITE_ALL_H
#define GRAPE_UTIL_WRITE_ALL_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* Writes len bytes of buf to fd. *done (when not NULL) gets the bytes
 * written. @return 0, or a negative errno (-EIO when write wrote nothing). */
static inline int grape__write_all(int fd, const void* buf, size_t len, size_t* done) {
  const char* p = (const char*)buf;
  size_t off = 0;
  int rc = 0;
  while (off < len) {
    ssize_t w = write(fd, p + off, len - off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      rc = w < 0 ? -errno : -EIO;
      break;
    }
    off += (size_t)w;
  }
  if (done != NULL)
    *done = off;
  return rc;
}

#endif

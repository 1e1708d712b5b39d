/* errcap.c: see errcap.h.
 *
 * DESIGN: the token packs the saved copy of fd 2 and the temporary file's fd
 * (both below 2^15), so callers hold one int; the file is unlinked at once. */
#include "errcap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int errcap_begin(void) {
  char path[] = "/tmp/grape-errcap-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  unlink(path);
  fflush(stderr);
  int saved = dup(2);
  if (saved < 0 || dup2(fd, 2) < 0) {
    close(fd);
    if (saved >= 0)
      close(saved);
    return -1;
  }
  return saved << 15 | fd;
}

char* errcap_end(int token) {
  if (token < 0)
    return calloc(1, 1);
  int saved = token >> 15, fd = token & 0x7fff;
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  off_t n = lseek(fd, 0, SEEK_END);
  char* text = calloc(1, n > 0 ? (size_t)n + 1 : 1);
  if (text != NULL && n > 0 && pread(fd, text, (size_t)n, 0) != n)
    text[0] = '\0';
  close(fd);
  return text;
}

int errcap_count(const char* text, const char* needle) {
  int n = 0;
  for (const char* p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

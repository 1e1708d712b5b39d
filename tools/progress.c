/* The status line of long commands (progress.h). */
#include "progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void progress_start(progress_t* p) {
  const char* term = getenv("TERM");
  memset(p, 0, sizeof(*p));
  p->on = isatty(STDERR_FILENO) && (term == NULL || strcmp(term, "dumb") != 0);
}

void progress_say(progress_t* p, int force, const char* fmt, ...) {
  if (!p->on)
    return;
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  double since = (double)(now.tv_sec - p->last.tv_sec) + (now.tv_nsec - p->last.tv_nsec) / 1e9;
  if (p->shown && !force && since < 0.1)
    return;
  p->last = now;
  char line[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof(line), fmt, ap);
  va_end(ap);
  /* \r\033[K: back to the line's start, erase it; no newline, so the next
   * status or the command's own output takes the line. */
  fprintf(stderr, "\r\033[K%s", line);
  fflush(stderr);
  p->shown = 1;
}

void progress_clear(progress_t* p) {
  if (!p->shown)
    return;
  fputs("\r\033[K", stderr);
  fflush(stderr);
  p->shown = 0;
}

/* A status line for long commands: what they are doing now, redrawn in place
 * on stderr and erased before their next line of output. Only when stderr is
 * a terminal (and TERM is not "dumb"): never in a pipe or a log. */
#ifndef GRAPE_TOOLS_PROGRESS_H
#define GRAPE_TOOLS_PROGRESS_H

#include <time.h>

typedef struct progress_s {
  int on;                  /* stderr is a terminal */
  int shown;               /* a status line is on the screen */
  struct timespec last;    /* when it was last drawn */
} progress_t;

void progress_start(progress_t* p);
/* Draws the status; at most ten times a second unless force is set. */
__attribute__((format(printf, 3, 4)))
void progress_say(progress_t* p, int force, const char* fmt, ...);
/* Erases the status line, if one is shown. */
void progress_clear(progress_t* p);

#endif

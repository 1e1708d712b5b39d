/* The exit report: one JSON object written to GRAPE_REPORT at exit. */
#ifndef GRAPE_INTERPOSE_REPORT_H
#define GRAPE_INTERPOSE_REPORT_H

#include <stddef.h>

/* Formats the report into a malloc'd NUL-terminated string (caller frees);
 * NULL when out of memory. sig: the signal that ended the process (named in
 * the report), or 0. */
char* grape__report_json(int sig);

/* Writes the report where GRAPE_REPORT says ('stderr' or a path); nothing when
 * unset. sig as for grape__report_json. @return 0 or a negative errno. */
int grape__report_write(int sig);

/* In a fork child: leaves "<report path>.forked" beside where the child's
 * report will go, removed when the report is written, so that `grape run` can
 * tell a child that left through _exit (no destructors, no report). Uses only
 * open/close on the child side of fork. */
void grape__report_mark_forked(void);

#endif

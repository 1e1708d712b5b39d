/* The exit report: one JSON object written to GRAPE_REPORT at exit. */
#ifndef GRAPE_INTERPOSE_REPORT_H
#define GRAPE_INTERPOSE_REPORT_H

#include <stddef.h>

/* Formats the report into a malloc'd NUL-terminated string (caller frees);
 * NULL when out of memory. */
char* grape__report_json(void);

/* Writes the report where GRAPE_REPORT says ('stderr' or a path); nothing when
 * unset. @return 0 or a negative errno. */
int grape__report_write(void);

#endif

/* Writing a CSV field: the one quoting of `grape replay -o` and the kernel
 * tables of `grape run --kernels-csv` / `grape report --csv`.
 *
 * DESIGN: header-only and libc-only like every file of util/ (see grow.h).
 * Every text field is quoted (RFC 4180), so commas and newlines in kernel
 * names need no special case; a quote is doubled. */
#ifndef GRAPE_UTIL_CSV_STR_H
#define GRAPE_UTIL_CSV_STR_H

#include <stdio.h>

/* Writes s to f as a quoted CSV field; NULL is written as "". */
static inline void grape__csv_put_str(FILE* f, const char* s) {
  fputc('"', f);
  for (; s != NULL && *s; s++) {
    if (*s == '"')
      fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

#endif

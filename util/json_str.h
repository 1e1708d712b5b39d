/* Writing a JSON string: the one escaper of the exit report, `grape export`
 * and `grape cubin-info`.
 *
 * DESIGN: header-only and libc-only like every file of util/ (see grow.h), so
 * that the shim, replay/ and the CLI include it without an arrow against the
 * map in docs/design.md. Bytes are written as they are (UTF-8 passes through);
 * only what JSON forbids in a string is escaped. */
#ifndef GRAPE_UTIL_JSON_STR_H
#define GRAPE_UTIL_JSON_STR_H

#include <stdio.h>

/* Writes s to f as a JSON string, quotes included: '"' and '\' escaped,
 * control characters as \u00XX. NULL is written as "". */
static inline void grape__json_put_str(FILE* f, const char* s) {
  fputc('"', f);
  for (; s != NULL && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

#endif

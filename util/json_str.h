/* Writing a JSON string: the one escaper of the exit report, `grape export`
 * and `grape cubin-info`.
 *
 * DESIGN: header-only and libc-only like every file of util/ (see grow.h), so
 * that the shim, replay/ and the CLI include it without an arrow against the
 * map in docs/design.md. Valid UTF-8 is written as it is; what JSON forbids
 * in a string is escaped, and so is every byte that is not part of a valid
 * UTF-8 sequence (a program's path or a kernel name may hold any bytes), as
 * \u00XX, its Latin-1 reading: the output is always valid JSON, and no byte
 * is lost. */
#ifndef GRAPE_UTIL_JSON_STR_H
#define GRAPE_UTIL_JSON_STR_H

#include <stdio.h>
#include <stdlib.h>

/* Length of the valid UTF-8 sequence at s (2-4), or 0 (RFC 3629: no
 * overlong forms, no surrogates, nothing above U+10FFFF). */
static inline int grape__utf8_len(const unsigned char* s) {
  unsigned c = s[0];
  int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
  for (int i = 1; i < n; i++)
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) || (c == 0xf0 && s[1] < 0x90) ||
      (c == 0xf4 && s[1] > 0x8f))
    return 0;
  return n;
}

/* Writes s to f as a JSON string, quotes included: '"' and '\' escaped,
 * control characters and bytes outside valid UTF-8 as \u00XX. NULL is
 * written as "". */
static inline void grape__json_put_str(FILE* f, const char* s) {
  fputc('"', f);
  for (const unsigned char* p = (const unsigned char*)s; p != NULL && *p;) {
    unsigned char c = *p;
    int n = c >= 0x80 ? grape__utf8_len(p) : 1;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20 || n == 0)
      fprintf(f, "\\u%04x", c);
    else
      fwrite(p, 1, (size_t)n, f);
    p += n > 0 ? n : 1;
  }
  fputc('"', f);
}

/* Writes v to f as a JSON number in the fewest digits that read back as
 * the same double (5.699, not 5.6989999999999998), as Python's repr and
 * JavaScript do; a value JSON cannot hold (inf, nan) as null. */
static inline void grape__json_put_num(FILE* f, double v) {
  char buf[32];
  if (v != v || v - v != 0) {
    fputs("null", f);
    return;
  }
  if (v == (double)(long long)v && v > -1e15 && v < 1e15) {
    fprintf(f, "%lld", (long long)v);   /* 320, not %g's 3.2e+02 */
    return;
  }
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(buf, sizeof(buf), "%.*g", digits, v);
    if (strtod(buf, NULL) == v)
      break;
  }
  fputs(buf, f);
}

#endif

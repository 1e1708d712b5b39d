/* File name patterns: GRAPE_LOG_FILE, GRAPE_REPORT and GRAPE_TRACE name one
 * file per process with "%p" (the pid); GRAPE_TRACE also with "%r" (the
 * rank); "%%" is a '%', and any other '%' stands for itself. The shim
 * expands them (interpose/log.c, report.c; replay/'s grape_trace_expand_path
 * for traces), and `grape run` finds every process's report by matching file
 * names against the pattern it gave.
 *
 * DESIGN: one definition of the syntax for the side that writes and the side
 * that looks, so that they cannot disagree on a name; header-only and
 * libc-only like every file of util/ (see grow.h). Matching walks the pattern
 * and the name together; the first "%p" tries every length of the digit run
 * it faces, longest first (the pattern may go on with digits of its own), and
 * each later "%p" must repeat the digits it took. Patterns are short, so the
 * backtracking costs nothing. */
#ifndef GRAPE_UTIL_PATTERN_H
#define GRAPE_UTIL_PATTERN_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Copies pattern into out (cap bytes), with "%p" replaced by pid, "%r" by
 * *rank (left as written when rank is NULL) and "%%" by "%". Allocates
 * nothing (a fork child's mark uses it). @return 0, or -ENAMETOOLONG when it
 * does not fit. */
static inline int grape__pattern_expand(const char* pattern, long pid, const long* rank, char* out,
                                        size_t cap) {
  size_t n = 0;
  for (const char* p = pattern; *p; p++) {
    char num[24];
    const char* piece = p;
    size_t len = 1;
    if (p[0] == '%' && (p[1] == 'p' || (p[1] == 'r' && rank != NULL))) {
      len = (size_t)snprintf(num, sizeof(num), "%ld", p[1] == 'p' ? pid : *rank);
      piece = num;
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      p++;
    }
    if (n + len + 1 > cap)
      return -ENAMETOOLONG;
    memcpy(out + n, piece, len);
    n += len;
  }
  if (cap == 0)
    return -ENAMETOOLONG;
  out[n] = '\0';
  return 0;
}

/* 1 when pattern names one file per process (it holds a "%p"), else 0. */
static inline int grape__pattern_per_process(const char* pattern) {
  for (const char* p = pattern; *p; p++) {
    if (p[0] == '%' && p[1] == 'p')
      return 1;
    if (p[0] == '%' && p[1] == '%')
      p++;
  }
  return 0;
}

/* Matches name against pattern p; *pid is the digit run the first "%p" took
 * (NULL before it), *pid_len its length. */
static inline int grape__pattern_match_from(const char* p, const char* name, const char** pid,
                                            size_t* pid_len) {
  for (;;) {
    if (p[0] == '%' && p[1] == 'p') {
      if (*pid != NULL) {
        if (strncmp(name, *pid, *pid_len) != 0)
          return 0;
        name += *pid_len;
        p += 2;
        continue;
      }
      for (size_t len = strspn(name, "0123456789"); len > 0; len--) {
        *pid = name;
        *pid_len = len;
        if (grape__pattern_match_from(p + 2, name + len, pid, pid_len))
          return 1;
      }
      *pid = NULL;
      return 0;
    }
    if (*p == '\0')
      return *name == '\0';
    if (*name != *p)
      return 0;
    p += p[0] == '%' && p[1] == '%' ? 2 : 1;   /* "%%" stands for one '%' */
    name++;
  }
}

/* 1 when name is what pattern (without "%r") expands to for some pid
 * (decimal digits, the same at every "%p"), else 0. */
static inline int grape__pattern_match(const char* pattern, const char* name) {
  const char* pid = NULL;
  size_t pid_len = 0;
  return grape__pattern_match_from(pattern, name, &pid, &pid_len);
}

#endif

/* File name patterns: GRAPE_LOG_FILE, GRAPE_REPORT and GRAPE_TRACE name one
 * file per process, per rank or per host with the nsys-style escapes
 *   %p  the pid                 %r  the rank (RANK, OMPI_COMM_WORLD_RANK, ...)
 *   %h  the host name           %q{VAR}  the value of environment variable VAR
 *   %%  a '%'
 * and any other '%' stands for itself. The shim expands them
 * (interpose/outfile.c); replay/'s grape_trace_expand_path offers %p and %r
 * to other writers of traces.
 *
 * DESIGN: one definition of the syntax for every writer, header-only and
 * libc-only like every file of util/ (see grow.h). Expanding allocates
 * nothing, so a fork child may use it. What the caller does not supply
 * (a NULL rank, host or environment reader) is left as written, so that a
 * name never silently loses a part the user asked for. An unset %q{VAR}
 * expands to nothing, as in nsys. */
#ifndef GRAPE_UTIL_PATTERN_H
#define GRAPE_UTIL_PATTERN_H

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct grape_pattern_vars_s {
  long pid;
  const long* rank;                           /* NULL: "%r" stays as written */
  const char* host;                           /* NULL: "%h" stays as written */
  const char* (*env)(const char* name);       /* NULL: "%q{VAR}" stays as written */
} grape_pattern_vars_t;

/* Copies pattern into out (cap bytes) with every escape above replaced from
 * v. @return 0, or -ENAMETOOLONG when it does not fit. */
static inline int grape__pattern_expand_vars(const char* pattern, const grape_pattern_vars_t* v,
                                             char* out, size_t cap) {
  size_t n = 0;
  for (const char* p = pattern; *p; p++) {
    char num[24], var[128];
    const char* piece = p;
    size_t len = 1;
    if (p[0] == '%' && (p[1] == 'p' || (p[1] == 'r' && v->rank != NULL))) {
      len = (size_t)snprintf(num, sizeof(num), "%ld", p[1] == 'p' ? v->pid : *v->rank);
      piece = num;
      p++;
    } else if (p[0] == '%' && p[1] == 'h' && v->host != NULL) {
      piece = v->host;
      len = strlen(piece);
      p++;
    } else if (p[0] == '%' && p[1] == 'q' && p[2] == '{' && v->env != NULL &&
               strchr(p + 3, '}') != NULL && (size_t)(strchr(p + 3, '}') - (p + 3)) < sizeof(var)) {
      const char* end = strchr(p + 3, '}');
      memcpy(var, p + 3, (size_t)(end - (p + 3)));
      var[end - (p + 3)] = '\0';
      piece = v->env(var);
      if (piece == NULL)
        piece = "";
      len = strlen(piece);
      p = end;
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

/* grape__pattern_expand_vars with the pid and the rank only. */
static inline int grape__pattern_expand(const char* pattern, long pid, const long* rank, char* out,
                                        size_t cap) {
  grape_pattern_vars_t v = {pid, rank, NULL, NULL};
  return grape__pattern_expand_vars(pattern, &v, out, cap);
}

/* Writes into out (cap bytes) the k-th numbered form of name: ".k" inserted
 * before the extension of its last component ("r.json" -> "r.1.json", "t" ->
 * "t.1"), for outputs that must not replace a file of the same name.
 * @return 0, or -ENAMETOOLONG. */
static inline int grape__pattern_numbered(const char* name, unsigned k, char* out, size_t cap) {
  const char* base = strrchr(name, '/');
  base = base ? base + 1 : name;
  const char* dot = strrchr(base, '.');
  if (dot == NULL || dot == base)
    dot = base + strlen(base);
  char num[16];
  size_t head = (size_t)(dot - name), nlen = (size_t)snprintf(num, sizeof(num), ".%u", k);
  size_t tail = strlen(dot);
  if (head + nlen + tail + 1 > cap)
    return -ENAMETOOLONG;
  memmove(out, name, head);
  memcpy(out + head, num, nlen);
  memcpy(out + head + nlen, dot, tail + 1);
  return 0;
}

#endif

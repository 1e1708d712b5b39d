/* File name patterns (see pattern.h for the syntax).
 *
 * DESIGN: matching walks the pattern and the name together; the first "%p"
 * tries every length of the digit run it faces, longest first (the pattern
 * may go on with digits of its own), and each later "%p" must repeat the
 * digits it took. Patterns are short, so the backtracking costs nothing. */
#include "pattern.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int grape__pattern_expand(const char* pattern, long pid, char* out, size_t cap) {
  size_t n = 0;
  for (const char* p = pattern; *p; p++) {
    char num[24];
    const char* piece = p;
    size_t len = 1;
    if (p[0] == '%' && p[1] == 'p') {
      len = (size_t)snprintf(num, sizeof(num), "%ld", pid);
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

int grape__pattern_per_process(const char* pattern) {
  for (const char* p = pattern; *p; p++) {
    if (p[0] == '%' && p[1] == 'p')
      return 1;
    if (p[0] == '%' && p[1] == '%')
      p++;
  }
  return 0;
}

/* Matches name against pattern; *pid is the digit run the first "%p" took
 * (NULL before it), *pid_len its length. */
static int match(const char* p, const char* name, const char** pid, size_t* pid_len) {
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
        if (match(p + 2, name + len, pid, pid_len))
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

int grape__pattern_match(const char* pattern, const char* name) {
  const char* pid = NULL;
  size_t pid_len = 0;
  return match(pattern, name, &pid, &pid_len);
}

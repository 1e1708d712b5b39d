/* Growing an array by doubling: the one helper for the idiom the shim, the
 * graph cache and the CLI each need.
 *
 * DESIGN: header-only (static inline) and libc-only, so that every folder may
 * include it without linking anything (util/ sits below every other folder of
 * the map in docs/design.md). The caller keeps its typed pointer:
 * grape__grow returns the array rather than writing through a void**, which
 * would reach a T* through another pointer type. */
#ifndef GRAPE_UTIL_GROW_H
#define GRAPE_UTIL_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* The capacity that holds need elements: cap (first when cap is 0) doubled
 * until it does, cap itself when it already does; 0 when doubling would
 * overflow. */
static inline size_t grape__grow_cap(size_t cap, size_t need, size_t first) {
  size_t n = cap ? cap : first;
  while (n < need) {
    if (n > SIZE_MAX / 2)
      return 0;
    n *= 2;
  }
  return n;
}

/* Makes array v (*cap elements of elem bytes allocated) hold need >= 1
 * elements, doubling from first. @return the array, moved or not, with *cap
 * updated; NULL when out of memory, with v and *cap unchanged (v stays valid
 * and owned by the caller). */
static inline void* grape__grow(void* v, size_t* cap, size_t need, size_t elem, size_t first) {
  if (need <= *cap)
    return v;
  size_t n = grape__grow_cap(*cap, need, first);
  void* p = n != 0 && n <= SIZE_MAX / elem ? realloc(v, n * elem) : NULL;
  if (p != NULL)
    *cap = n;
  return p;
}

#endif

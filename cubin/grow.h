/* grow.h: growing arrays by doubling, for cubin/ and the folders that may
 * include it (predict/).
 *
 * DESIGN: one helper instead of the realloc-and-double idiom at every
 * growing array; it refuses a size that would overflow, and leaves the array
 * and its capacity as they were when it fails, so a caller's error path
 * frees what it had. A pointer comes back (not an int through a void**), so
 * no array pointer is written through a pointer of another type.
 */
#ifndef GRAPE_CUBIN_GROW_H
#define GRAPE_CUBIN_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Grows the array v of *cap elements of elem bytes to hold `need` (call it
 * when need > *cap): *cap doubles, starting from first, until it does, and v
 * is reallocated to it. NULL (v and *cap unchanged, v still valid) when
 * memory runs out or the size overflows. */
static inline void* grape__grow(void* v, size_t* cap, size_t need, size_t elem, size_t first) {
  size_t nc = *cap ? *cap : first;
  while (nc < need) {
    if (nc > SIZE_MAX / 2)
      return NULL;
    nc *= 2;
  }
  if (nc > SIZE_MAX / elem)
    return NULL;
  void* nv = realloc(v, nc * elem);
  if (nv != NULL)
    *cap = nc;
  return nv;
}

#endif

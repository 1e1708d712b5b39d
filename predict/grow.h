/* grow.h: growing arrays by doubling, for the files of predict/. */
#ifndef GRAPE_PREDICT_GROW_H
#define GRAPE_PREDICT_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* Grows a full array v of *cap elements of elem bytes: *cap doubles (to
 * first, from 0) and v is reallocated to it. NULL (v and *cap unchanged, v
 * still valid) when memory runs out or the size overflows. */
static inline void* grape__predict_grow(void* v, size_t* cap, size_t elem, size_t first) {
  size_t nc = *cap ? *cap * 2 : first;
  if (nc < *cap || nc > SIZE_MAX / elem)
    return NULL;
  void* nv = realloc(v, nc * elem);
  if (nv != NULL)
    *cap = nc;
  return nv;
}

#endif

/* The graph cache's hash tables (table.h). */
#include "table.h"

#include <errno.h>
#include <stdlib.h>

int grape__table_grow(table_t* t, grape_table_hash_fn h) {
  size_t ncap = t->cap ? t->cap * 2 : 64;
  void** nv = calloc(ncap, sizeof(*nv));
  if (nv == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < t->cap; i++) {
    if (t->v[i] == NULL)
      continue;
    size_t j = (size_t)grape__hash_mix(h(t->v[i])) & (ncap - 1);
    while (nv[j] != NULL)
      j = (j + 1) & (ncap - 1);
    nv[j] = t->v[i];
  }
  free(t->v);
  t->v = nv;
  t->cap = ncap;
  return 0;
}

void grape__table_remove(table_t* t, const void* e, grape_table_hash_fn h) {
  size_t mask = t->cap - 1, i = grape__table_home(t, h(e));
  while (t->v[i] != e)
    i = (i + 1) & mask;
  t->v[i] = NULL;
  t->len--;
  /* Entries after the hole that probed past it move back into it. */
  for (size_t j = (i + 1) & mask; t->v[j] != NULL; j = (j + 1) & mask) {
    size_t home = grape__table_home(t, h(t->v[j]));
    if (((j - home) & mask) >= ((j - i) & mask)) {
      t->v[i] = t->v[j];
      t->v[j] = NULL;
      i = j;
    }
  }
}

void grape__table_put(table_t* t, uint64_t hash, void* e) {
  size_t mask = t->cap - 1, i = grape__table_home(t, hash);
  while (t->v[i] != NULL)
    i = (i + 1) & mask;
  t->v[i] = e;
  t->len++;
}

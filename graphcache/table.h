/* Open-addressing tables of pointers keyed by a 64-bit hash: the graph
 * cache's keys and paths by fingerprint.
 *
 * DESIGN: linear probing over a power-of-two array, home slot
 * grape__hash_mix(hash) & (cap - 1); entries are pointers (NULL = free) and
 * the table keeps no hashes: it asks the entry (grape_table_hash_fn) when it
 * moves one. Removal shifts the entries after the hole back (no tombstones),
 * so a probe stops at the first NULL. Lookups are the caller's (it compares
 * what makes two entries equal): probe from grape__table_home. Grown by the
 * caller at half full. Not thread-safe: the cache's lock guards it. */
#ifndef GRAPE_GRAPHCACHE_TABLE_H
#define GRAPE_GRAPHCACHE_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "util/hash_mix.h"

typedef struct table_s {
  void** v;
  size_t cap, len;
} table_t;

/* The hash of an entry (what it was put with). */
typedef uint64_t (*grape_table_hash_fn)(const void* e);

/* The first slot a probe for hash looks at (cap > 0). */
static inline size_t grape__table_home(const table_t* t, uint64_t hash) {
  return (size_t)grape__hash_mix(hash) & (t->cap - 1);
}

/* Doubles t's slots (64 at first), moving every entry. @return 0 or -ENOMEM
 * (t unchanged). */
int grape__table_grow(table_t* t, grape_table_hash_fn h);

/* Puts e (hash) into the first free slot of its probe; there must be room. */
void grape__table_put(table_t* t, uint64_t hash, void* e);

/* Removes e, which is in t. */
void grape__table_remove(table_t* t, const void* e, grape_table_hash_fn h);

#endif

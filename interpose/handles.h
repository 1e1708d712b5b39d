/* A lock-free map from a handle to a pointer, of a fixed size: the function
 * table (funcinfo.c) and the image registry (images.c) are two of them.
 *
 * DESIGN: open addressing with linear probing over GRAPE_HANDLE_SLOTS slots
 * (handles are CUDA object pointers: a few thousand in a big program, so the
 * table is touched sparsely). A slot's key is claimed by compare-and-swap and
 * never released; its value is published after the key (release) and read
 * with acquire, and is what the owner of the table says it is (a
 * grape_func_t*, an image_t*): the map stores void* and the owner converts.
 * Nothing is removed: a forgotten handle's value is set to NULL or replaced.
 * Inlined: the launch path looks functions up here when its per-thread cache
 * misses. */
#ifndef GRAPE_INTERPOSE_HANDLES_H
#define GRAPE_INTERPOSE_HANDLES_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/hash_mix.h"

#define GRAPE_HANDLE_BITS 16   /* 65536 handles: 1 MiB a table */
#define GRAPE_HANDLE_SLOTS ((size_t)1 << GRAPE_HANDLE_BITS)

typedef struct grape_handle_slot_s {
  const void* key;   /* NULL = free; claimed by CAS */
  void* value;       /* published after the key */
} grape_handle_slot_t;

static inline size_t grape__handle_hash(const void* p) {
  return (size_t)grape__hash_mix((uint64_t)(uintptr_t)p) & (GRAPE_HANDLE_SLOTS - 1);
}

/* The table at *t, made (zeroed) under lock on first use; NULL when out of
 * memory. */
static inline grape_handle_slot_t* grape__handle_table(grape_handle_slot_t** t,
                                                       pthread_mutex_t* lock) {
  grape_handle_slot_t* p = __atomic_load_n(t, __ATOMIC_ACQUIRE);
  if (__builtin_expect(p != NULL, 1))
    return p;
  pthread_mutex_lock(lock);
  if (*t == NULL)
    __atomic_store_n(t, calloc(GRAPE_HANDLE_SLOTS, sizeof(**t)), __ATOMIC_RELEASE);
  p = *t;
  pthread_mutex_unlock(lock);
  return p;
}

/* key's slot in t (GRAPE_HANDLE_SLOTS slots); with create, a free slot is
 * claimed for it. NULL when absent, or when the table is full. */
static inline grape_handle_slot_t* grape__handle_slot(grape_handle_slot_t* t, const void* key,
                                                      int create) {
  size_t i = grape__handle_hash(key);
  for (size_t n = 0; n < GRAPE_HANDLE_SLOTS; n++, i = (i + 1) & (GRAPE_HANDLE_SLOTS - 1)) {
    const void* k = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE);
    if (k == key)
      return &t[i];
    if (k == NULL) {
      if (!create)
        return NULL;
      const void* expected = NULL;
      if (__atomic_compare_exchange_n(&t[i].key, &expected, key, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return &t[i];
      if (expected == key)
        return &t[i];
    }
  }
  return NULL;
}

/* The value of slot s (acquire). */
static inline void* grape__handle_value(const grape_handle_slot_t* s) {
  return __atomic_load_n(&s->value, __ATOMIC_ACQUIRE);
}

#endif

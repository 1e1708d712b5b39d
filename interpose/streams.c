/* Streams as the shim sees them (see streams.h for the design). */
#include "streams.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "util/grow.h"
#include "util/hash_mix.h"

#define TOMBSTONE UINTPTR_MAX   /* a removed key: probes go on past it */

typedef struct entry_s {
  uintptr_t key;                /* 0 = free; written last (release) */
  grape_stream_t* slot;
} entry_t;

typedef struct table_s {
  size_t mask;                  /* capacity - 1 (a power of two) */
  size_t used;                  /* live keys + tombstones */
  struct table_s* older;        /* replaced tables, kept until reset */
  entry_t e[];
} table_t;

static table_t* table;                       /* current; read with acquire */
static size_t live;                          /* live streams (under the mutex) */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static grape_stream_t* free_slots;           /* recycled slots (under the mutex) */
static grape_stream_t** all_slots;           /* every slot ever made (freed at reset) */
static size_t nall, all_cap;

__thread char grape__thread_stream_tag __attribute__((tls_model("initial-exec")));

unsigned grape__streams_generation = 1;
__thread uintptr_t grape__streams_cache_key __attribute__((tls_model("initial-exec")));
__thread grape_stream_t* grape__streams_cache_slot __attribute__((tls_model("initial-exec")));
__thread unsigned grape__streams_cache_gen __attribute__((tls_model("initial-exec")));

int grape__stream_key_is_per_thread(uintptr_t key) {
  return key == (uintptr_t)&grape__thread_stream_tag;
}

static inline size_t mix(uintptr_t k) {
  return (size_t)grape__hash_mix((uint64_t)k);
}

/* The slot of key in t, or NULL. No lock. */
static grape_stream_t* probe(const table_t* t, uintptr_t key) {
  if (t == NULL)
    return NULL;
  for (size_t i = mix(key) & t->mask, n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
    uintptr_t k = __atomic_load_n(&t->e[i].key, __ATOMIC_ACQUIRE);
    if (k == key)
      return t->e[i].slot;
    if (k == 0)
      return NULL;
  }
  return NULL;
}

static table_t* table_new(size_t cap) {
  table_t* t = calloc(1, sizeof(*t) + cap * sizeof(entry_t));
  if (t != NULL)
    t->mask = cap - 1;
  return t;
}

/* Puts (key, slot) in t, which has room. Under the mutex. */
static void place(table_t* t, uintptr_t key, grape_stream_t* slot) {
  size_t i = mix(key) & t->mask;
  while (t->e[i].key != 0 && t->e[i].key != TOMBSTONE)
    i = (i + 1) & t->mask;
  if (t->e[i].key == 0)
    t->used++;
  t->e[i].slot = slot;
  __atomic_store_n(&t->e[i].key, key, __ATOMIC_RELEASE);   /* the slot is visible first */
}

/* Makes room for one more key: a new table (twice the live keys' room, at
 * least as big as now) without tombstones. Under the mutex. */
static int make_room(void) {
  table_t* t = table;
  if (t != NULL && (t->used + 1) * 2 <= t->mask + 1)
    return 0;
  size_t cap = 64;
  while (cap < (live + 1) * 4)
    cap *= 2;
  if (t != NULL && cap < t->mask + 1)
    cap = t->mask + 1;
  table_t* n = table_new(cap);
  if (n == NULL)
    return -ENOMEM;
  for (size_t i = 0; t != NULL && i <= t->mask; i++)
    if (t->e[i].key != 0 && t->e[i].key != TOMBSTONE)
      place(n, t->e[i].key, t->e[i].slot);
  n->older = t;
  __atomic_store_n(&table, n, __ATOMIC_RELEASE);
  return 0;
}

static grape_stream_t* slot_new(uintptr_t key) {
  grape_stream_t* s = free_slots;
  if (s != NULL) {
    free_slots = s->free_next;
  } else {
    s = calloc(1, sizeof(*s));
    if (s == NULL)
      return NULL;
    grape_stream_t** v = grape__grow(all_slots, &all_cap, nall + 1, sizeof(*all_slots), 64);
    if (v == NULL) {
      free(s);
      return NULL;
    }
    all_slots = v;
    all_slots[nall++] = s;
  }
  s->key = key;
  __atomic_store_n(&s->kind, GRAPE_STREAM_UNKNOWN, __ATOMIC_RELAXED);
  s->handle = NULL;
  s->ctx = NULL;
  s->holder = NULL;
  s->phase_known = 0;
  s->phase_from = UINT32_MAX;
  s->phase_memo_n = 0;
  s->free_next = NULL;
  return s;
}

grape_stream_t* grape__stream_slow(uintptr_t key) {
  grape_stream_t* s = probe(__atomic_load_n(&table, __ATOMIC_ACQUIRE), key);
  if (s == NULL) {
    pthread_mutex_lock(&table_lock);
    s = probe(table, key);
    if (s == NULL && make_room() == 0 && (s = slot_new(key)) != NULL) {
      place(table, key, s);
      live++;
    }
    pthread_mutex_unlock(&table_lock);
    if (s == NULL) {
      grape_log_warn_once("out of memory in the stream table: some ops go unrecorded");
      return NULL;
    }
  }
  grape__streams_cache_key = key;
  grape__streams_cache_slot = s;
  grape__streams_cache_gen = __atomic_load_n(&grape__streams_generation, __ATOMIC_RELAXED);
  return s;
}

grape_stream_t* grape__stream_peek(uintptr_t key) {
  return probe(__atomic_load_n(&table, __ATOMIC_ACQUIRE), key);
}

void grape__stream_forget(uintptr_t key) {
  pthread_mutex_lock(&table_lock);
  table_t* t = table;
  for (size_t i = t ? mix(key) & t->mask : 0, n = 0; t != NULL && n <= t->mask;
       n++, i = (i + 1) & t->mask) {
    if (t->e[i].key == 0)
      break;
    if (t->e[i].key != key)
      continue;
    grape_stream_t* s = t->e[i].slot;
    __atomic_store_n(&t->e[i].key, TOMBSTONE, __ATOMIC_RELEASE);
    live--;
    spin_lock(&s->lock);
    grape__region_free(&s->region);   /* a destroyed stream returns its memory */
    s->key = 0;
    spin_unlock(&s->lock);
    s->free_next = free_slots;
    free_slots = s;
    __atomic_add_fetch(&grape__streams_generation, 1, __ATOMIC_RELAXED);
    break;
  }
  pthread_mutex_unlock(&table_lock);
}

void grape__streams_each(void (*fn)(grape_stream_t* s, void* arg), void* arg) {
  pthread_mutex_lock(&table_lock);
  table_t* t = table;
  for (size_t i = 0; t != NULL && i <= t->mask; i++)
    if (t->e[i].key != 0 && t->e[i].key != TOMBSTONE)
      fn(t->e[i].slot, arg);
  pthread_mutex_unlock(&table_lock);
}

size_t grape__streams_count(size_t* capacity) {
  pthread_mutex_lock(&table_lock);
  size_t n = live;
  if (capacity != NULL)
    *capacity = table ? table->mask + 1 : 0;
  pthread_mutex_unlock(&table_lock);
  return n;
}

void grape__streams_reset(int free_memory) {
  if (free_memory) {
    for (size_t i = 0; i < nall; i++) {
      grape__region_free(&all_slots[i]->region);
      free(all_slots[i]);
    }
    free(all_slots);
    for (table_t* t = table; t != NULL;) {
      table_t* older = t->older;
      free(t);
      t = older;
    }
  }
  table = NULL;
  all_slots = NULL;
  nall = all_cap = 0;
  free_slots = NULL;
  live = 0;
  pthread_mutex_init(&table_lock, NULL);
  __atomic_add_fetch(&grape__streams_generation, 1, __ATOMIC_RELAXED);
  grape__streams_cache_key = 0;
}

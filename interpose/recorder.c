/* Per-stream regions and the path table (see recorder.h for the design). */
#include "recorder.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "log.h"
#include "options.h"

typedef struct stream_slot_s {
  uintptr_t key;               /* 0 = free; claimed by CAS, never freed */
  grape_region_t* region;            /* published after the key (release) */
} stream_slot_t;

typedef struct path_s {
  uint64_t fp;
  uint32_t nops;
  uint64_t count;
  grape_op_sig_t* sigs;        /* the first sighting's signatures (collision check) */
  uint8_t* params;             /* and its parameters: one representative set */
  size_t plen;
  uint32_t* poff;              /* nops + 1 offsets into params: op i's bytes are [poff[i], poff[i+1]) */
  uint64_t alloc_epoch;        /* grape__alloc_epoch() when the first sighting ended */
} path_t;

static stream_slot_t* streams;       /* power-of-two table, allocated on first use */
static size_t streams_mask;
static pthread_mutex_t streams_init_lock = PTHREAD_MUTEX_INITIALIZER;
static grape_region_t overflow;

static pthread_mutex_t paths_lock = PTHREAD_MUTEX_INITIALIZER;
static path_t* paths;                /* open addressing on fp; cap a power of two */
static size_t paths_cap, paths_len;
static grape_rec_stats_t stats;      /* under paths_lock, except ops (atomic) */

static __thread char thread_stream_tag __attribute__((tls_model("initial-exec")));   /* its address keys this thread's own stream */

uintptr_t grape__stream_key(const void* stream, int ptds) {
  uintptr_t s = (uintptr_t)stream;
  if (s == 0)
    s = ptds ? 2 : 1;   /* CU_STREAM_PER_THREAD : CU_STREAM_LEGACY */
  if (s == 2)
    return (uintptr_t)&thread_stream_tag;
  return s;
}

static inline size_t mix(uintptr_t k) {
  uint64_t x = (uint64_t)k;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x;
}

static int streams_init(void) {
  pthread_mutex_lock(&streams_init_lock);
  if (streams == NULL) {
    long want = grape__option_get(grape_option_max_streams);
    size_t cap = 16;
    while ((long)cap < want && cap < ((size_t)1 << 24))
      cap <<= 1;
    stream_slot_t* t = calloc(cap, sizeof(*t));
    if (t != NULL) {
      streams_mask = cap - 1;
      __atomic_store_n(&streams, t, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&streams_init_lock);
  return streams ? 0 : -ENOMEM;
}

static grape_region_t* region_new(void) {
  return calloc(1, sizeof(grape_region_t));
}

/* The per-thread cache of the last stream (recorder.h). */
unsigned grape__rec_generation = 1;
__thread uintptr_t grape__rec_cache_key __attribute__((tls_model("initial-exec")));
__thread grape_region_t* grape__rec_cache_region __attribute__((tls_model("initial-exec")));
__thread unsigned grape__rec_cache_gen __attribute__((tls_model("initial-exec")));
long grape__rec_chunk;

static grape_region_t* region_lookup(uintptr_t key);

grape_region_t* grape__rec_region_slow(uintptr_t key) {
  grape_region_t* r = region_lookup(key);
  if (r != &overflow) {
    grape__rec_cache_key = key;
    grape__rec_cache_region = r;
    grape__rec_cache_gen = __atomic_load_n(&grape__rec_generation, __ATOMIC_RELAXED);
  }
  return r;
}

static inline grape_region_t* region_of(uintptr_t key) {
  return grape__rec_region(key);
}

static grape_region_t* region_lookup(uintptr_t key) {
  stream_slot_t* t = __atomic_load_n(&streams, __ATOMIC_ACQUIRE);
  if (__builtin_expect(t == NULL, 0)) {
    if (streams_init())
      return &overflow;
    t = streams;
  }
  size_t mask = streams_mask;
  size_t i = mix(key) & mask;
  for (size_t probe = 0; probe <= mask; probe++, i = (i + 1) & mask) {
    uintptr_t k = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE);
    if (k == 0) {
      uintptr_t expected = 0;
      if (__atomic_compare_exchange_n(&t[i].key, &expected, key, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
        grape_region_t* r = region_new();
        if (r == NULL)
          r = &overflow;
        __atomic_store_n(&t[i].region, r, __ATOMIC_RELEASE);
        return r;
      }
      k = expected;
    }
    if (k == key) {
      grape_region_t* r;
      while ((r = __atomic_load_n(&t[i].region, __ATOMIC_ACQUIRE)) == NULL)
        ;   /* the claiming thread is allocating it */
      return r;
    }
  }
  grape_log_warn_once("more than %zu streams: the rest share one region (raise GRAPE_MAX_STREAMS)",
                      mask + 1);
  return &overflow;
}

/* ---- Paths ---- */

static int paths_grow(void) {
  size_t ncap = paths_cap ? paths_cap * 2 : 64;
  path_t* n = calloc(ncap, sizeof(*n));
  if (n == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < paths_cap; i++) {
    if (paths[i].nops == 0)
      continue;
    size_t j = mix((uintptr_t)paths[i].fp) & (ncap - 1);
    while (n[j].nops != 0)
      j = (j + 1) & (ncap - 1);
    n[j] = paths[i];
  }
  free(paths);
  paths = n;
  paths_cap = ncap;
  return 0;
}

/* Counts region r's ops as one sighting of its path. Called with r->lock held. */
static void path_add(grape_region_t* r) {
  uint64_t fp = grape__fp_ops(r->sigs, r->nops);
  pthread_mutex_lock(&paths_lock);
  stats.regions++;
  stats.ops += r->nops;
  if (paths_len * 2 >= paths_cap && paths_grow()) {
    pthread_mutex_unlock(&paths_lock);
    grape_log_warn_once("out of memory in the path table; paths are no longer counted");
    return;
  }
  size_t mask = paths_cap - 1;
  size_t i = mix((uintptr_t)fp) & mask;
  for (;; i = (i + 1) & mask) {
    path_t* p = &paths[i];
    if (p->nops == 0)
      break;
    if (p->fp != fp)
      continue;
    if (p->nops == r->nops && memcmp(p->sigs, r->sigs, r->nops * sizeof(*r->sigs)) == 0) {
      p->count++;
      pthread_mutex_unlock(&paths_lock);
      return;
    }
    stats.collisions++;
    grape_log_warn_once("two different paths share fingerprint %016llx; kept apart",
                        (unsigned long long)fp);
  }
  path_t* p = &paths[i];
  p->sigs = malloc(r->nops * sizeof(*r->sigs));
  p->params = r->plen ? malloc(r->plen) : NULL;
  p->poff = malloc((r->nops + 1) * sizeof(*p->poff));
  if (p->sigs == NULL || (r->plen && p->params == NULL) || p->poff == NULL) {
    free(p->sigs);
    free(p->params);
    free(p->poff);
    p->sigs = NULL;
    p->params = NULL;
    p->poff = NULL;
    pthread_mutex_unlock(&paths_lock);
    grape_log_warn_once("out of memory in the path table; a path was not recorded");
    return;
  }
  memcpy(p->sigs, r->sigs, r->nops * sizeof(*r->sigs));
  if (r->plen)
    memcpy(p->params, r->params, r->plen);
  memcpy(p->poff, r->poff, r->nops * sizeof(*p->poff));
  p->poff[r->nops] = (uint32_t)r->plen;
  p->plen = r->plen;
  p->alloc_epoch = grape__alloc_epoch();
  p->fp = fp;
  p->nops = r->nops;
  p->count = 1;
  paths_len++;
  stats.paths++;
  pthread_mutex_unlock(&paths_lock);
}

/* Ends r's region. Called with r->lock held. */
static void region_end_locked(grape_region_t* r) {
  if (r->nops == 0)
    return;
  path_add(r);
  r->nops = 0;
  r->plen = 0;
}

static int region_reserve(grape_region_t* r, size_t nbytes) {
  if (r->nops == r->cap) {
    uint32_t ncap = r->cap ? r->cap * 2 : 64;
    grape_op_sig_t* s = realloc(r->sigs, ncap * sizeof(*s));
    if (s == NULL)
      return -ENOMEM;
    r->sigs = s;
    uint32_t* o = realloc(r->poff, ncap * sizeof(*o));
    if (o == NULL)
      return -ENOMEM;
    r->poff = o;
    r->cap = ncap;
  }
  if (r->plen + nbytes > r->pcap) {
    size_t ncap = r->pcap ? r->pcap * 2 : 4096;
    while (ncap < r->plen + nbytes)
      ncap *= 2;
    uint8_t* p = realloc(r->params, ncap);
    if (p == NULL)
      return -ENOMEM;
    r->params = p;
    r->pcap = ncap;
  }
  return 0;
}

long grape__rec_chunk_slow(void) {
  long c = grape__option_get(grape_option_chunk);
  if (c <= 0)
    c = 1;
  __atomic_store_n(&grape__rec_chunk, c, __ATOMIC_RELAXED);
  return c;
}

int grape__rec_make_room(grape_region_t* r, size_t max_bytes) {
  if (r->nops >= (uint32_t)grape__rec_chunk_limit())
    region_end_locked(r);
  if (region_reserve(r, max_bytes) != 0) {
    spin_unlock(&r->lock);
    grape_log_warn_once("out of memory while recording a region; ops go unrecorded");
    return -ENOMEM;
  }
  return 0;
}

int grape__rec_op(uintptr_t key, const grape_op_sig_t* sig, const void* params, size_t nbytes) {
  grape_op_sig_t* slot;
  uint8_t* dst;
  grape_region_t* r = grape__rec_begin(key, nbytes, &slot, &dst);
  if (r == NULL)
    return -ENOMEM;
  *slot = *sig;
  if (nbytes)
    memcpy(dst, params, nbytes);
  grape__rec_commit(r, nbytes);
  return 0;
}

void grape__rec_end_stream(uintptr_t key) {
  grape_region_t* r = region_of(key);
  spin_lock(&r->lock);
  region_end_locked(r);
  spin_unlock(&r->lock);
}

void grape__rec_end_all(void) {
  stream_slot_t* t = __atomic_load_n(&streams, __ATOMIC_ACQUIRE);
  if (t != NULL) {
    for (size_t i = 0; i <= streams_mask; i++) {
      grape_region_t* r = __atomic_load_n(&t[i].region, __ATOMIC_ACQUIRE);
      if (r == NULL)
        continue;
      spin_lock(&r->lock);
      region_end_locked(r);
      spin_unlock(&r->lock);
    }
  }
  spin_lock(&overflow.lock);
  region_end_locked(&overflow);
  spin_unlock(&overflow.lock);
}

static int path_cmp(const void* a, const void* b) {
  const grape_path_info_t* x = a;
  const grape_path_info_t* y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->fp < y->fp ? -1 : x->fp > y->fp;
}

size_t grape__rec_each_path(void (*fn)(const grape_rec_path_view_t* p, void* arg), void* arg) {
  size_t n = 0;
  pthread_mutex_lock(&paths_lock);
  for (size_t i = 0; i < paths_cap; i++) {
    const path_t* p = &paths[i];
    if (p->nops == 0)
      continue;
    grape_rec_path_view_t v = {p->fp, p->count, p->nops, p->sigs, p->params, p->poff,
                               p->alloc_epoch};
    fn(&v, arg);
    n++;
  }
  pthread_mutex_unlock(&paths_lock);
  return n;
}

size_t grape__rec_stats(grape_rec_stats_t* st, grape_path_info_t* top, size_t n) {
  pthread_mutex_lock(&paths_lock);
  *st = stats;
  size_t k = 0;
  grape_path_info_t* all = paths_len ? malloc(paths_len * sizeof(*all)) : NULL;
  if (all != NULL) {
    for (size_t i = 0; i < paths_cap; i++)
      if (paths[i].nops)
        all[k++] = (grape_path_info_t){paths[i].fp, paths[i].nops, paths[i].count, paths[i].sigs};
    qsort(all, k, sizeof(*all), path_cmp);
    if (k > n)
      k = n;
    memcpy(top, all, k * sizeof(*all));
    free(all);
  }
  pthread_mutex_unlock(&paths_lock);
  return k;
}

static void region_clear(grape_region_t* r, int free_memory) {
  if (free_memory) {
    free(r->sigs);
    free(r->poff);
    free(r->params);
  }
  r->sigs = NULL;
  r->poff = NULL;
  r->params = NULL;
  r->nops = r->cap = 0;
  r->plen = r->pcap = 0;
}

void grape__rec_reset(int free_memory) {
  if (streams != NULL) {
    for (size_t i = 0; i <= streams_mask; i++) {
      grape_region_t* r = streams[i].region;
      if (r != NULL && free_memory) {
        region_clear(r, 1);
        free(r);
      }
    }
    if (free_memory)
      free(streams);
  }
  streams = NULL;
  streams_mask = 0;
  __atomic_add_fetch(&grape__rec_generation, 1, __ATOMIC_RELAXED);
  pthread_mutex_init(&streams_init_lock, NULL);
  region_clear(&overflow, free_memory);
  overflow.lock.taken = 0;
  grape__rec_cache_key = 0;
  if (free_memory) {
    for (size_t i = 0; i < paths_cap; i++) {
      free(paths[i].sigs);
      free(paths[i].params);
      free(paths[i].poff);
    }
    free(paths);
  }
  paths = NULL;
  paths_cap = paths_len = 0;
  memset(&stats, 0, sizeof(stats));
  pthread_mutex_init(&paths_lock, NULL);
}

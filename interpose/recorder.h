/* Per-stream regions and the table of distinct paths (observe mode).
 *
 * DESIGN: each stream has an open region: the signatures and captured parameter
 * bytes of the ops submitted since the stream's last region end, and their
 * running fingerprint. The stream -> region map is a fixed open-addressing table
 * whose slots are claimed with one compare-and-swap and never freed, so finding
 * a stream's region takes no lock; each region has its own mutex, which only
 * threads launching on the same stream (or a device-wide sync) contend for.
 * Ending a region looks its fingerprint up in the path table (one mutex: this
 * happens once per region, not per launch) and compares the signature arrays,
 * so a hash collision is counted, never merged. Streams beyond the table's size
 * share one overflow region (logged once). */
#ifndef GRAPE_INTERPOSE_RECORDER_H
#define GRAPE_INTERPOSE_RECORDER_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "graphcache/fingerprint.h"

/* Key of a stream handle as a launch names it: 0 means the legacy stream, or,
 * for a per-thread-default-stream call, this thread's own stream. Never 0. */
uintptr_t grape__stream_key(const void* stream, int ptds);

/* Appends op sig (with nbytes of captured parameters) to the region of stream
 * key. Ends the region first when it holds GRAPE_CHUNK ops.
 * @return 0, or -ENOMEM (the op is counted but not recorded). */
int grape__rec_op(uintptr_t key, const grape_op_sig_t* sig, const void* params, size_t nbytes);

/* ---- The launch path's way in (inlined) ----
 * A launch records in two steps, so that its signature is written in place and
 * its parameters are copied once, straight into the region:
 *   r = grape__rec_begin(key, max_bytes, &sig, &dst);   (NULL: out of memory)
 *   ... fill *sig, write up to max_bytes at dst ...
 *   grape__rec_commit(r, nbytes);
 * begin locks the region (a spinlock: threads launching on one stream are the
 * only contenders), commit appends and unlocks. */

typedef struct grape_spin_s {
  int taken;
} grape_spin_t;

static inline void spin_lock(grape_spin_t* l) {
  while (__atomic_exchange_n(&l->taken, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&l->taken, __ATOMIC_RELAXED))
      sched_yield();
}

static inline void spin_unlock(grape_spin_t* l) {
  __atomic_store_n(&l->taken, 0, __ATOMIC_RELEASE);
}

typedef struct grape_region_s {
  grape_spin_t lock;
  uint32_t nops, cap;          /* ops recorded, capacity of sigs/poff */
  grape_op_sig_t* sigs;
  uint32_t* poff;              /* each op's offset into params */
  uint8_t* params;             /* captured parameter bytes */
  size_t plen, pcap;
} grape_region_t;

/* The stream this thread recorded on last (most threads feed one stream); the
 * generation number drops it when the tables are reset. */
extern unsigned grape__rec_generation;
extern __thread uintptr_t grape__rec_cache_key __attribute__((tls_model("initial-exec")));
extern __thread grape_region_t* grape__rec_cache_region __attribute__((tls_model("initial-exec")));
extern __thread unsigned grape__rec_cache_gen __attribute__((tls_model("initial-exec")));
extern long grape__rec_chunk;   /* GRAPE_CHUNK, 0 until read */

grape_region_t* grape__rec_region_slow(uintptr_t key);
long grape__rec_chunk_slow(void);
/* Makes room in locked r (ending it at GRAPE_CHUNK ops, growing buffers);
 * @return 0, or -ENOMEM after unlocking r. */
int grape__rec_make_room(grape_region_t* r, size_t max_bytes);

static inline grape_region_t* grape__rec_region(uintptr_t key) {
  if (grape__rec_cache_key == key &&
      grape__rec_cache_gen == __atomic_load_n(&grape__rec_generation, __ATOMIC_RELAXED))
    return grape__rec_cache_region;
  return grape__rec_region_slow(key);
}

static inline long grape__rec_chunk_limit(void) {
  long c = __atomic_load_n(&grape__rec_chunk, __ATOMIC_RELAXED);
  return __builtin_expect(c > 0, 1) ? c : grape__rec_chunk_slow();
}

static inline __attribute__((always_inline)) grape_region_t* grape__rec_begin(
    uintptr_t key, size_t max_bytes, grape_op_sig_t** sig, uint8_t** dst) {
  grape_region_t* r = grape__rec_region(key);
  spin_lock(&r->lock);
  if (__builtin_expect(r->nops >= r->cap || r->plen + max_bytes > r->pcap ||
                           r->nops >= (uint32_t)grape__rec_chunk_limit(), 0) &&
      grape__rec_make_room(r, max_bytes) != 0)
    return NULL;
  *sig = &r->sigs[r->nops];
  *dst = r->params + r->plen;
  return r;
}

static inline __attribute__((always_inline)) void grape__rec_commit(grape_region_t* r, size_t nbytes) {
  r->poff[r->nops] = (uint32_t)r->plen;
  r->plen += nbytes;
  r->nops++;
  spin_unlock(&r->lock);
}

/* Ends the open region of one stream / of every stream (sync points). */
void grape__rec_end_stream(uintptr_t key);
void grape__rec_end_all(void);

typedef struct grape_path_info_s {
  uint64_t fp;
  uint32_t nops;
  uint64_t count;
  const grape_op_sig_t* sigs;   /* the path's ops (valid until grape__rec_reset) */
} grape_path_info_t;

typedef struct grape_rec_stats_s {
  uint64_t regions;      /* non-empty regions ended */
  uint64_t paths;        /* distinct paths among them */
  uint64_t ops;          /* ops recorded (in ended regions) */
  uint64_t collisions;   /* equal fingerprints with different signatures */
} grape_rec_stats_t;

/* One distinct path as the trace writer sees it (interpose/trace.c). */
typedef struct grape_rec_path_view_s {
  uint64_t fp;
  uint64_t count;               /* sightings */
  uint32_t nops;
  const grape_op_sig_t* sigs;   /* nops signatures */
  const uint8_t* params;        /* the first sighting's captured bytes: one representative set */
  const uint32_t* poff;         /* nops + 1 offsets: op i's bytes are params[poff[i] .. poff[i+1]):
                                   its parameter block (sigs[i].param_bytes), then any launch
                                   attributes as captured */
  uint64_t alloc_epoch;         /* grape__alloc_epoch() when those bytes were recorded: their
                                   pointer words name allocations live then */
} grape_rec_path_view_t;

/* Calls fn for every distinct path, under the path table's lock (fn must not
 * call back into the recorder). The view itself lives for the call; the
 * arrays it points to stay valid until grape__rec_reset, as top paths' sigs
 * do. @return how many paths were visited. */
size_t grape__rec_each_path(void (*fn)(const grape_rec_path_view_t* p, void* arg), void* arg);

/* Totals and the n most frequent paths (count desc, then fingerprint) into top;
 * @return how many were written to top. */
size_t grape__rec_stats(grape_rec_stats_t* st, grape_path_info_t* top, size_t n);

/* Frees everything (tests), or forgets it without freeing (fork child: other
 * threads' locks may be held). */
void grape__rec_reset(int free_memory);

#endif

/* Streams as the shim sees them: each stream's open region and what graph
 * mode needs to know of it.
 *
 * DESIGN: a stream key (the CUstream handle; 1 for the legacy stream; a
 * thread's own tag for its per-thread default stream) maps to one slot in an
 * open-addressing table. Lookups take no lock: a per-thread cache of the last
 * stream answers most launches with one compare, and a probe of the current
 * table the rest. Inserts and removals take the table mutex: a destroyed
 * stream's slot becomes a tombstone and its slot object goes to a free list
 * for the next new stream; the table grows by rehashing into a new table
 * (old ones are kept until exit, since a lookup may still be probing them;
 * a lookup that misses retries under the mutex). Slot objects are never
 * freed, only recycled, so a pointer to one stays valid; a generation number
 * drops the per-thread caches when a slot is recycled.
 *
 * Each slot has a spinlock (held for a few dozen instructions per op; only
 * threads using the same stream contend), its region (graphcache/region.h),
 * and graph mode's view of it: kind (legacy, per-thread, blocking,
 * non-blocking: found once from the driver), the handle and context its held
 * ops are submitted with, and its place on the list of streams that hold ops
 * (the watchdog's and the legacy-stream rules' list). */
#ifndef GRAPE_INTERPOSE_STREAMS_H
#define GRAPE_INTERPOSE_STREAMS_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "graphcache/region.h"
#include "util/list.h"

typedef struct grape_spin_s {
  int taken;
} grape_spin_t;

static inline __attribute__((always_inline)) void spin_lock(grape_spin_t* l) {
  while (__atomic_exchange_n(&l->taken, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&l->taken, __ATOMIC_RELAXED))
      sched_yield();
}

static inline int spin_trylock(grape_spin_t* l) {
  return !__atomic_exchange_n(&l->taken, 1, __ATOMIC_ACQUIRE);
}

static inline __attribute__((always_inline)) void spin_unlock(grape_spin_t* l) {
  __atomic_store_n(&l->taken, 0, __ATOMIC_RELEASE);
}

#define GRAPE_STREAM_LEGACY_KEY ((uintptr_t)1)

typedef enum grape_stream_kind_e {
  GRAPE_STREAM_UNKNOWN = 0,    /* not asked yet */
  GRAPE_STREAM_LEGACY,         /* the legacy NULL stream */
  GRAPE_STREAM_PER_THREAD,     /* a thread's default stream: never held (see graph.c) */
  GRAPE_STREAM_BLOCKING,       /* synchronises with the legacy stream */
  GRAPE_STREAM_NON_BLOCKING,   /* independent of the legacy stream */
} grape_stream_kind_t;

typedef struct grape_stream_s {
  grape_spin_t lock;
  uintptr_t key;
  grape_region_t region;
  int kind;                           /* grape_stream_kind_t */
  void* handle;                       /* CUstream to submit its ops on */
  void* ctx;                          /* CUcontext its work belongs to (NULL: not known yet) */
  const void* holder;                 /* tag of the thread that held its ops (graph_driver.h) */
  grape_list_t hold;                  /* on the holding list (graph.c's lock) */
  int on_hold_list;
  uint32_t wd_nops;                   /* the watchdog's last look: ops then */
  uint64_t chunks;                    /* chunks ended (the watchdog tells them apart) */
  uint64_t wd_chunks;
  int holder_tid;                     /* the holding thread's id (the watchdog reads its state) */
  struct grape_counters_s* holder_counters;   /* its counters block (where its mark of a
                                                  driver call that cannot wait is; state.h) */
  uint64_t wd_cpu;                    /* its CPU time (ns) at the watchdog's last look */
  uint32_t wd_waits;                  /* looks it was left alone, its holder waiting for a CPU
                                         or in a driver call that cannot wait */
  /* The last two ops of the last chunk that ended full (no sync ended it),
   * and where the current chunk last passed the same two: launch.h,
   * grape__chunk_done, cuts a loop that never synchronises at one phase of
   * its step. Under the stream's lock. */
  grape_op_key_t phase[2];
  int phase_known;
  uint32_t phase_from;                /* ops from which a chunk may end at the phase: half the
                                         chunk (at least 2) once known, else UINT32_MAX */
  uint32_t phase_at;                  /* ops then */
  int phase_end;                      /* whether the chunk ends there */
  uint64_t phase_chunk;               /* in chunk number `chunks` this */
  /* grape__chunk_done's last answer past half the chunk: a held op asks it
   * after its push and the next op again before its own, at the same count. */
  uint32_t phase_memo_gen;            /* region.ops.gen then (bumped when it clears) */
  uint32_t phase_memo_n;              /* its ops then (>= 2: 0 never matches) */
  int phase_memo;
  struct grape_stream_s* free_next;   /* on the free list */
} grape_stream_t;

/* Key of a stream handle as a call names it: 1 for the legacy stream; for a
 * per-thread-default-stream call (or CU_STREAM_PER_THREAD), this thread's own
 * stream. Never 0. */
/* Thread-local: only its address is used (the key of this thread's own stream). */
extern __thread char grape__thread_stream_tag __attribute__((tls_model("initial-exec")));
static inline __attribute__((always_inline)) uintptr_t
grape__stream_key(const void* stream, int ptds) {
  uintptr_t s = (uintptr_t)stream;
  if (s == 0)
    s = ptds ? 2 : 1;   /* CU_STREAM_PER_THREAD : CU_STREAM_LEGACY */
  if (s == 2)
    return (uintptr_t)&grape__thread_stream_tag;   /* its address keys this thread's own stream */
  return s;
}

/* True for this thread's per-thread default stream key. */
int grape__stream_key_is_per_thread(uintptr_t key);

/* The per-thread cache of the last stream (see the DESIGN note). */
/* Threads: bumped (relaxed) under the table mutex when a slot is recycled or the table reset,
 * loaded (relaxed) by every lookup: a stale value needs a stream used while another thread
 * destroys it, which CUDA leaves undefined. The caches below are thread-local. */
extern unsigned grape__streams_generation;
extern __thread uintptr_t grape__streams_cache_key __attribute__((tls_model("initial-exec")));
extern __thread grape_stream_t* grape__streams_cache_slot __attribute__((tls_model("initial-exec")));
extern __thread unsigned grape__streams_cache_gen __attribute__((tls_model("initial-exec")));

grape_stream_t* grape__stream_slow(uintptr_t key);

/* The slot of stream key, made on first use. NULL only when out of memory
 * (the op then goes unrecorded). */
static inline grape_stream_t* grape__stream_of(uintptr_t key) {
  if (grape__streams_cache_key == key &&
      grape__streams_cache_gen == __atomic_load_n(&grape__streams_generation, __ATOMIC_RELAXED))
    return grape__streams_cache_slot;
  return grape__stream_slow(key);
}

/* The slot of key if it has one, without making it. */
grape_stream_t* grape__stream_peek(uintptr_t key);

/* Reclaims a destroyed stream's slot (the caller ended its region first). */
void grape__stream_forget(uintptr_t key);

/* Calls fn on every stream's slot, under the table mutex (never call it with
 * a slot's lock held). */
void grape__streams_each(void (*fn)(grape_stream_t* s, void* arg), void* arg);

/* Live streams, and the table's size now (tests, the report). */
size_t grape__streams_count(size_t* capacity);

/* Frees everything (tests), or forgets it without freeing (fork child: other
 * threads' locks may be held). */
void grape__streams_reset(int free_memory);

#endif

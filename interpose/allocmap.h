/* Allocation map: which address ranges are device (or device-visible) memory.
 *
 * DESIGN: a sorted array of disjoint intervals under a reader-writer lock.
 * Allocation calls are rare next to launches and never on the launch path;
 * queries (cudaMemcpyAsync asking whether both ends are device memory, the
 * trace writer at exit) take the read lock. A new
 * interval that overlaps stale ones (a free the shim did not see) replaces them.
 * Host-pinned and registered ranges are kept too, marked as host.
 * With GRAPE_TRACE set, every interval ever added is also kept in a history
 * with the epochs (a counter of adds and removes) of its birth and death, so
 * that the trace writer can tell, at exit, which allocation a parameter word
 * pointed into when it was recorded, even after the program freed it and
 * reused the address. */
#ifndef GRAPE_INTERPOSE_ALLOCMAP_H
#define GRAPE_INTERPOSE_ALLOCMAP_H

#include <stddef.h>
#include <stdint.h>

typedef enum grape_alloc_kind_e {
  GRAPE_ALLOC_DEVICE = 1,     /* cuMemAlloc / cudaMalloc */
  GRAPE_ALLOC_ASYNC,          /* stream-ordered (cuMemAllocAsync / cudaMallocAsync) */
  GRAPE_ALLOC_MANAGED,        /* unified memory */
  GRAPE_ALLOC_MAPPED,         /* cuMemMap of a reserved range (expandable segments) */
  GRAPE_ALLOC_HOST_PINNED,    /* cuMemHostAlloc / cudaMallocHost */
  GRAPE_ALLOC_HOST_REGISTERED,/* cuMemHostRegister / cudaHostRegister */
  GRAPE_ALLOC_FOREIGN         /* another process's memory (cuIpcOpenMemHandle) */
} grape_alloc_kind_t;

typedef struct grape_alloc_s {
  uint64_t start;
  uint64_t size;
  int kind;                   /* grape_alloc_kind_t */
  uint64_t id;                /* allocation serial number (segment id in traces) */
} grape_alloc_t;

/* Adds [start, start+size). @return 0 or -ENOMEM / -EINVAL (size 0). */
int grape__alloc_add(uint64_t start, uint64_t size, grape_alloc_kind_t kind);

/* Removes the interval that starts at start. @return 0 or -ENOENT. */
int grape__alloc_remove(uint64_t start);

/* Removes every interval inside [start, start+size) (cuMemUnmap). @return how many. */
int grape__alloc_remove_range(uint64_t start, uint64_t size);

/* The interval containing addr into *out. @return 0 or -ENOENT. */
int grape__alloc_find(uint64_t addr, grape_alloc_t* out);

/* Which 8-byte-aligned words of a parameter block hold device-visible pointers
 * (an address inside any interval; grape__alloc_find tells its kind): bit i of mask[i / 64] for the word at
 * offset 8*i. mask must hold (nbytes/8 + 63)/64 words. @return how many. */
int grape__alloc_pointer_words(const void* params, size_t nbytes, uint64_t* mask);

size_t grape__alloc_count(void);

/* ---- Shared memory: what the host or another process may read or write
 * while a kernel runs (host-pinned, registered and foreign ranges) ----
 * A kernel whose parameters point there may wait on, or be waited on by,
 * something outside the stream (a host thread spinning on a flag, a peer
 * rank): graph mode never holds it (collective.h). The lookup is lock-free:
 * the set is a sorted snapshot published at each change (allocations of
 * such memory are rare), and older snapshots live until exit. */

typedef struct grape_alloc_shared_s {
  size_t n;                /* followed by n starts, then n ends, sorted (one block) */
} grape_alloc_shared_t;

/* Threads: swapped (acq_rel exchange) under the map's lock by any thread that changes shared
 * memory, loaded (acquire) lock-free by launching threads: a reader sees a whole snapshot, and
 * old ones live until exit; cleared plainly only by a reset (fork child, tests: one thread). */
extern grape_alloc_shared_t* grape__alloc_shared_now;

/* True when any shared range exists (one load). */
static inline int grape__alloc_shared_any(void) {
  return __atomic_load_n(&grape__alloc_shared_now, __ATOMIC_ACQUIRE) != NULL;
}

/* True when addr lies in a shared range. */
int grape__alloc_is_shared(uint64_t addr);

/* ---- History (kept only when GRAPE_TRACE is set) ---- */

typedef struct grape_alloc_life_s {
  grape_alloc_t a;
  uint64_t born;              /* epoch of its add */
  uint64_t died;              /* epoch of its removal; 0 while live */
} grape_alloc_life_t;

/* The current epoch: an interval was live at epoch e when born <= e and
 * (died == 0 or died > e). Lock-free. */
uint64_t grape__alloc_epoch(void);

/* A malloc'd copy of the history (in order of addition) into *out, *n.
 * @return 0, -ENOENT when no history is kept, or -ENOMEM. */
int grape__alloc_history(grape_alloc_life_t** out, size_t* n);

/* Forgets every interval (fork child keeps memory; tests free it). */
void grape__alloc_reset(int free_memory);

#endif

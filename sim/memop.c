/* memop.c: stream memory operations of the simulated driver:
 * cuStreamWaitValue32/64, cuStreamWriteValue32/64 (v1 and _v2 names, each
 * with its _ptsz form) and cuStreamBatchMemOp, which frameworks use for
 * flags between streams (one stream waits until another has written a value).
 *
 * DESIGN: each operation is one host-function op on its stream, so it runs in
 * stream order on the stream's worker, after the work before it and before
 * the work after it, and a captured one becomes a node of the graph (a host
 * node; cuGraphNodeGetType does not say BATCH_MEM_OP). A write stores the
 * value atomically when its turn comes. A wait blocks its stream's worker
 * until the condition holds: it sleeps on the sim's completion condition
 * variable, which every finished op broadcasts (a write of another stream, a
 * kernel body or a copy into the flag), and looks again at least every
 * millisecond for values the host writes directly. Work queued behind a wait
 * does not start before it, exactly as on a GPU; a wait nobody satisfies
 * blocks its stream forever, as it would there (exit still gives up after
 * the usual 2 s). While a wait blocks, queries answer from the real state
 * rather than wait for the stream, as while a host function runs (the host
 * itself may be the writer; stream.c).
 *
 * Simulated time: each operation is costed as a host-function op on the
 * device (device_host_func) and its call as a launch (cost.c). The sim does
 * not know which op wrote a value, so a wait's simulated end does not include
 * the writer's: only real execution is ordered by the value.
 *
 * With SIMCU_SYNC=1 every op runs in the thread that submits it, so a wait
 * whose value is written by work the same thread submits later can never
 * finish: after a second the sim says so once.
 *
 * The operation records of eager ops are freed after they run; those captured
 * into a graph live until the process exits (a graph may be launched any
 * number of times and copies its host nodes' data pointer, not the data).
 */
#include "internal.h"

#include <stdlib.h>
#include <time.h>

enum { MEMOP_WAIT, MEMOP_WRITE };

typedef struct memop_s {
  int kind;
  int bits;                  /* 32 or 64 */
  void* addr;
  uint64_t value;
  unsigned flags;            /* CUstreamWaitValue_flags / CUstreamWriteValue_flags */
  int keep;                  /* captured: owned by the graph, never freed before exit */
  struct memop_s* next;      /* list of kept records */
} memop_t;

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static memop_t* kept;        /* records captured into graphs, reachable until exit */
static atomic_int sync_wait_warned;

/* kept_lock is a leaf lock: taken last before fork, released first after
 * (core.c), so a child never inherits it held by a thread it does not have. */
void grape__sim_memop_atfork(int phase) {
  grape__sim_fork_lock(&kept_lock, phase);
}

static uint64_t load(const memop_t* m) {
  if (m->bits == 32)
    return __atomic_load_n((const uint32_t*)m->addr, __ATOMIC_ACQUIRE);
  return __atomic_load_n((const uint64_t*)m->addr, __ATOMIC_ACQUIRE);
}

/* The wait conditions of cuda.h, on 32 or 64 bits. */
static int holds(const memop_t* m) {
  uint64_t v = load(m), x = m->value;
  uint64_t mask = m->bits == 32 ? 0xffffffffull : ~0ull;
  switch (m->flags & 3u) {
  case CU_STREAM_WAIT_VALUE_GEQ:
    /* (int32_t)(*addr - value) >= 0: a cyclic comparison, as documented. */
    return m->bits == 32 ? (int32_t)(uint32_t)(v - x) >= 0 : (int64_t)(v - x) >= 0;
  case CU_STREAM_WAIT_VALUE_EQ:
    return (v & mask) == (x & mask);
  case CU_STREAM_WAIT_VALUE_AND:
    return (v & x & mask) != 0;
  default: /* CU_STREAM_WAIT_VALUE_NOR */
    return (~(v | x) & mask) != 0;
  }
}

static void wait_value(const memop_t* m) {
  struct timespec start;
  clock_gettime(CLOCK_MONOTONIC, &start);
  pthread_mutex_lock(&grape__sim.lock);
  while (!holds(m)) {
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 1000000L;
    if (dl.tv_nsec >= 1000000000L) {
      dl.tv_sec++;
      dl.tv_nsec -= 1000000000L;
    }
    (void)pthread_cond_timedwait(&grape__sim.done_cv, &grape__sim.lock, &dl);
    if (grape__sim.sync_mode && !atomic_load(&sync_wait_warned)) {
      struct timespec now;
      clock_gettime(CLOCK_MONOTONIC, &now);
      long ms = (long)(now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000;
      if (ms >= 1000 && atomic_exchange(&sync_wait_warned, 1) == 0)
        grape__sim_logf("a stream wait on %p has not been satisfied after a second: with "
                        "SIMCU_SYNC=1 work runs in the thread that submits it, so a value that "
                        "work submitted later by the same thread writes can never arrive",
                        m->addr);
    }
  }
  pthread_mutex_unlock(&grape__sim.lock);
}

static void run_memop(void* p) {
  memop_t* m = p;
  if (m->kind == MEMOP_WAIT) {
    wait_value(m);
  } else if (m->bits == 32) {
    __atomic_store_n((uint32_t*)m->addr, (uint32_t)m->value, __ATOMIC_RELEASE);
  } else {
    __atomic_store_n((uint64_t*)m->addr, m->value, __ATOMIC_RELEASE);
  }
  if (!m->keep)
    free(m);
}

/* Checks one operation: an aligned word of device memory or of pinned or
 * registered host memory (what the device can reach), and known flags. */
static CUresult check(int kind, int bits, CUdeviceptr addr, unsigned flags) {
  size_t n = (size_t)bits / 8;
  if (addr == 0 || addr % n != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_dev_range(addr, n) && !grape__sim_host_range((const void*)(uintptr_t)addr, n))
    return CUDA_ERROR_INVALID_VALUE;
  if (kind == MEMOP_WAIT)
    return (flags & ~(3u | (unsigned)CU_STREAM_WAIT_VALUE_FLUSH)) ? CUDA_ERROR_INVALID_VALUE
                                                                  : CUDA_SUCCESS;
  return (flags & ~(unsigned)CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER) ? CUDA_ERROR_INVALID_VALUE
                                                                     : CUDA_SUCCESS;
}

/* Queues one checked operation on s. */
static CUresult submit(struct CUstream_st* s, int kind, int bits, CUdeviceptr addr,
                       uint64_t value, unsigned flags) {
  memop_t* m = calloc(1, sizeof(*m));
  if (m == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  /* Read before submitting: an eager op may run and free m before submit returns. */
  int keep = grape__sim_capturing(s);
  *m = (memop_t){kind, bits, (void*)(uintptr_t)addr, value, flags, keep, NULL};
  sim_work_t w = {.kind = OP_HOSTFN};
  w.u.host.fn = run_memop;
  w.u.host.data = m;
  /* A wait may block its worker on memory the host writes, as host code can:
   * queries must then stop waiting for the stream (stream.c); a write never
   * blocks, and counting it would make queries answer from real timing. */
  w.u.host.blocks = kind == MEMOP_WAIT;
  CUresult r = grape__sim_submit(s, &w, NULL, 0);
  if (r != CUDA_SUCCESS) {
    free(m);
  } else if (keep) {
    pthread_mutex_lock(&kept_lock);
    m->next = kept;
    kept = m;
    pthread_mutex_unlock(&kept_lock);
  }
  return r;
}

static CUresult one(CUstream h, int ptds, int kind, int bits, CUdeviceptr addr, uint64_t value,
                    unsigned flags) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  SIM_TRY(check(kind, bits, addr, flags));
  return submit(s, kind, bits, addr, value, flags);
}

#define MEMOP_API(name, kind, bits, T, ptds)                                       \
  SIM_EXPORT CUresult name(CUstream s, CUdeviceptr addr, T value, unsigned int flags) { \
    SIM_COUNT(name);                                                               \
    return one(s, ptds, kind, bits, addr, value, flags);                           \
  }
/* The v1 names (CUDA 8) and the _v2 ones (11.7) behave alike on the sim. */
MEMOP_API(cuStreamWaitValue32, MEMOP_WAIT, 32, cuuint32_t, 0)
MEMOP_API(cuStreamWaitValue32_ptsz, MEMOP_WAIT, 32, cuuint32_t, 1)
MEMOP_API(cuStreamWaitValue32_v2, MEMOP_WAIT, 32, cuuint32_t, 0)
MEMOP_API(cuStreamWaitValue32_v2_ptsz, MEMOP_WAIT, 32, cuuint32_t, 1)
MEMOP_API(cuStreamWaitValue64, MEMOP_WAIT, 64, cuuint64_t, 0)
MEMOP_API(cuStreamWaitValue64_ptsz, MEMOP_WAIT, 64, cuuint64_t, 1)
MEMOP_API(cuStreamWaitValue64_v2, MEMOP_WAIT, 64, cuuint64_t, 0)
MEMOP_API(cuStreamWaitValue64_v2_ptsz, MEMOP_WAIT, 64, cuuint64_t, 1)
MEMOP_API(cuStreamWriteValue32, MEMOP_WRITE, 32, cuuint32_t, 0)
MEMOP_API(cuStreamWriteValue32_ptsz, MEMOP_WRITE, 32, cuuint32_t, 1)
MEMOP_API(cuStreamWriteValue32_v2, MEMOP_WRITE, 32, cuuint32_t, 0)
MEMOP_API(cuStreamWriteValue32_v2_ptsz, MEMOP_WRITE, 32, cuuint32_t, 1)
MEMOP_API(cuStreamWriteValue64, MEMOP_WRITE, 64, cuuint64_t, 0)
MEMOP_API(cuStreamWriteValue64_ptsz, MEMOP_WRITE, 64, cuuint64_t, 1)
MEMOP_API(cuStreamWriteValue64_v2, MEMOP_WRITE, 64, cuuint64_t, 0)
MEMOP_API(cuStreamWriteValue64_v2_ptsz, MEMOP_WRITE, 64, cuuint64_t, 1)

#define MEMOP_MAX_BATCH 256   /* cuStreamBatchMemOp's documented limit */

/* All operations are checked before any is queued, so a bad one queues none. */
static CUresult batch(CUstream h, unsigned count, CUstreamBatchMemOpParams* ops, unsigned flags,
                      int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if (flags != 0 || count > MEMOP_MAX_BATCH || (count > 0 && ops == NULL))
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; i++) {
    const CUstreamBatchMemOpParams* o = &ops[i];
    switch (o->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
      SIM_TRY(check(MEMOP_WAIT, o->operation == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 32 : 64,
                    o->waitValue.address, o->waitValue.flags));
      break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
      SIM_TRY(check(MEMOP_WRITE, o->operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 32 : 64,
                    o->writeValue.address, o->writeValue.flags));
      break;
    case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
    case CU_STREAM_MEM_OP_BARRIER:
      break;   /* orderings the sim's in-order streams already give */
    default:
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (unsigned i = 0; i < count; i++) {
    const CUstreamBatchMemOpParams* o = &ops[i];
    CUresult r = CUDA_SUCCESS;
    switch (o->operation) {
    case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      r = submit(s, MEMOP_WAIT, 32, o->waitValue.address, o->waitValue.value, o->waitValue.flags);
      break;
    case CU_STREAM_MEM_OP_WAIT_VALUE_64:
      r = submit(s, MEMOP_WAIT, 64, o->waitValue.address, o->waitValue.value64,
                 o->waitValue.flags);
      break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      r = submit(s, MEMOP_WRITE, 32, o->writeValue.address, o->writeValue.value,
                 o->writeValue.flags);
      break;
    case CU_STREAM_MEM_OP_WRITE_VALUE_64:
      r = submit(s, MEMOP_WRITE, 64, o->writeValue.address, o->writeValue.value64,
                 o->writeValue.flags);
      break;
    default:
      break;
    }
    if (r != CUDA_SUCCESS)
      return r;
  }
  return CUDA_SUCCESS;
}

#define BATCH_API(name, ptds)                                                      \
  SIM_EXPORT CUresult name(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops, \
                           unsigned int flags) {                                   \
    SIM_COUNT(name);                                                               \
    return batch(s, count, ops, flags, ptds);                                      \
  }
BATCH_API(cuStreamBatchMemOp, 0)
BATCH_API(cuStreamBatchMemOp_ptsz, 1)
BATCH_API(cuStreamBatchMemOp_v2, 0)
BATCH_API(cuStreamBatchMemOp_v2_ptsz, 1)

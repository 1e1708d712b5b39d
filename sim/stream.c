/* stream.c: streams, their worker threads, events, host functions, and the
 * rules that tie work to streams (legacy NULL stream, per-thread default
 * stream, capture-time restrictions).
 *
 * DESIGN: grape__sim_submit() is the one door for stream work. Under the
 * global lock it either turns the work into a node of the stream's capture
 * graph, or gives it the next sequence number of the stream, adds the implicit
 * dependencies of the legacy stream (an op on the legacy stream waits for all
 * prior work of blocking streams; an op on a blocking stream waits for prior
 * legacy work) and queues it. A stream's worker thread, started on its first
 * op, runs ops in order once their dependencies are done. With SIMCU_SYNC=1
 * the submitting thread runs the op itself, in stream order.
 *
 * Simulated time: each stream has a clock; an op starts at the later of the
 * stream's clock and its dependencies' finish times and lasts a modelled
 * duration (grape__sim_run_work), so event timings are deterministic. A kernel
 * run as a graph node is modelled without the eager launch overhead.
 */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static _Thread_local struct CUstream_st* tls_ptds;
static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;
static _Thread_local CUstreamCaptureMode tls_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static _Thread_local int tls_own_strict;   /* this thread's non-relaxed captures */

/* ---- Stream objects ---- */

static struct CUstream_st* stream_new(unsigned flags, int prio) {
  struct CUstream_st* s = calloc(1, sizeof(*s));
  if (s == NULL)
    return NULL;
  if (pthread_cond_init(&s->cv, NULL) != 0) {
    free(s);
    return NULL;
  }
  s->flags = flags;
  s->priority = prio;
  pthread_mutex_lock(&grape__sim.lock);
  s->id = ++grape__sim.next_stream_id;
  s->all_next = grape__sim.all_streams;
  grape__sim.all_streams = s;
  pthread_mutex_unlock(&grape__sim.lock);
  return s;
}

static void ptds_exit(void* p) {
  struct CUstream_st* s = p;
  pthread_mutex_lock(&grape__sim.lock);
  s->destroyed = 1;
  pthread_cond_signal(&s->cv);
  pthread_mutex_unlock(&grape__sim.lock);
}

static void ptds_key_init(void) {
  (void)pthread_key_create(&ptds_key, ptds_exit);
}

static struct CUstream_st* legacy_stream(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  void init_legacy(void);
  pthread_once(&once, init_legacy);
  return grape__sim.legacy;
}

void init_legacy(void) {
  grape__sim.legacy = stream_new(CU_STREAM_DEFAULT, 0);
  if (grape__sim.legacy != NULL)
    grape__sim.legacy->legacy = 1;
}

/* Resolves a stream handle as the driver does for the plain (ptds == 0) or
 * per-thread (ptds == 1) entry point. */
CUresult grape__sim_stream(CUstream h, int ptds, struct CUstream_st** out) {
  SIM_TRY(grape__sim_check_init());
  if (grape__sim_current_ctx() == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (h == CU_STREAM_LEGACY || (h == NULL && !ptds)) {
    *out = legacy_stream();
    return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (h == CU_STREAM_PER_THREAD || h == NULL) {
    if (tls_ptds == NULL) {
      pthread_once(&ptds_once, ptds_key_init);
      tls_ptds = stream_new(CU_STREAM_DEFAULT, 0);
      if (tls_ptds == NULL)
        return CUDA_ERROR_OUT_OF_MEMORY;
      tls_ptds->per_thread = 1;
      (void)pthread_setspecific(ptds_key, tls_ptds);
    }
    *out = tls_ptds;
    return CUDA_SUCCESS;
  }
  if (!grape__sim_reg_has(h, K_STREAM))
    return CUDA_ERROR_INVALID_HANDLE;
  *out = h;
  return CUDA_SUCCESS;
}

/* ---- Execution ---- */

static uint64_t dep_time(const sim_dep_t* d) {
  struct CUstream_st* t = d->s;
  if (t->completed - d->seq < SIM_RING)
    return t->ring[d->seq % SIM_RING];
  return 0;
}

static int deps_done(const sim_op_t* op) {
  for (int i = 0; i < op->ndeps; i++)
    if (op->deps[i].s->completed < op->deps[i].seq)
      return 0;
  return 1;
}

/* Modelled durations in ns: launch overhead plus work; deterministic. */
void grape__sim_run_work(sim_work_t* w, uint64_t* clock) {
  uint64_t dur = 0;
  switch (w->kind) {
  case OP_KERNEL: {
    struct CUfunc_st* f = w->u.k.f;
    void* argv[f->nparams > 0 ? f->nparams : 1];
    for (uint32_t i = 0; i < f->nparams; i++)
      argv[i] = w->u.k.params + f->poff[i];
    simcu_block_t b = {
      .grid = {w->u.k.grid[0], w->u.k.grid[1], w->u.k.grid[2]},
      .block = {w->u.k.block[0], w->u.k.block[1], w->u.k.block[2]},
      .shared_bytes = w->u.k.smem,
    };
    void* shm = w->u.k.smem ? malloc(w->u.k.smem) : NULL;
    b.shared = shm;
    for (unsigned z = 0; z < b.grid.z; z++)
      for (unsigned y = 0; y < b.grid.y; y++)
        for (unsigned x = 0; x < b.grid.x; x++) {
          b.idx = (simcu_dim3_t){x, y, z};
          if (shm != NULL)
            memset(shm, 0, w->u.k.smem);
          f->body(&b, argv);
        }
    free(shm);
    uint64_t threads = (uint64_t)b.grid.x * b.grid.y * b.grid.z * b.block.x * b.block.y * b.block.z;
    /* A kernel node of a graph skips the per-launch overhead an eager launch
     * pays (2 us vs 0.5 us): what graph replay saves on a GPU. */
    dur = (w->u.k.from_graph ? 500 : 2000) + threads / 16;
    atomic_fetch_add(&grape__sim.kernels_executed, 1);
    if (w->u.k.from_graph)
      atomic_fetch_add(&grape__sim.graph_kernel_nodes_executed, 1);
    break;
  }
  case OP_MEMCPY:
    if (w->u.cp.rows <= 1 && w->u.cp.depth <= 1) {
      memmove(w->u.cp.dst, w->u.cp.src, w->u.cp.n);
      dur = 1000 + w->u.cp.n / 25;
    } else {
      grape__sim_copy_rows(w);
      dur = 1000 + w->u.cp.n * w->u.cp.rows * (w->u.cp.depth ? w->u.cp.depth : 1) / 25;
    }
    break;
  case OP_MEMSET: {
    unsigned char* row = w->u.ms.dst;
    for (size_t y = 0; y < w->u.ms.height; y++, row += w->u.ms.pitch) {
      if (w->u.ms.esize == 1) {
        memset(row, (int)(w->u.ms.value & 0xff), w->u.ms.n);
      } else if (w->u.ms.esize == 2) {
        uint16_t v = (uint16_t)w->u.ms.value;
        for (size_t i = 0; i < w->u.ms.n; i++)
          memcpy(row + 2 * i, &v, 2);
      } else {
        uint32_t v = w->u.ms.value;
        for (size_t i = 0; i < w->u.ms.n; i++)
          memcpy(row + 4 * i, &v, 4);
      }
    }
    dur = 800 + (w->u.ms.n * w->u.ms.esize * w->u.ms.height) / 100;
    break;
  }
  case OP_HOSTFN:
    w->u.host.fn(w->u.host.data);
    dur = 1000;
    break;
  case OP_FREE:
    (void)grape__sim_free_now(w->u.fr.p);
    break;
  default:
    break;
  }
  *clock += dur;
}

void grape__sim_event_unref_locked(struct CUevent_st* e) {
  if (--e->refs == 0) {
    free(e->cap_nodes);
    free(e);
  }
}

/* Frees what the work owns; the event reference needs the lock held. */
void grape__sim_work_release(sim_work_t* w) {
  if (w->kind == OP_KERNEL)
    free(w->u.k.params);
  else if (w->kind == OP_MEMCPY)
    free(w->u.cp.owned);
  else if (w->kind == OP_EVENT && w->u.ev.ev != NULL)
    grape__sim_event_unref_locked(w->u.ev.ev);
  memset(w, 0, sizeof(*w));
}

int grape__sim_work_copy(sim_work_t* dst, const sim_work_t* src) {
  *dst = *src;
  if (src->kind == OP_KERNEL && src->u.k.params_size > 0) {
    dst->u.k.params = malloc(src->u.k.params_size);
    if (dst->u.k.params == NULL)
      return -ENOMEM;
    memcpy(dst->u.k.params, src->u.k.params, src->u.k.params_size);
  }
  if (src->kind == OP_MEMCPY)
    dst->u.cp.owned = NULL;
  return 0;
}

/* Runs op on stream s (lock held on entry and exit) and marks it complete. */
static void execute_locked(struct CUstream_st* s, sim_op_t* op) {
  uint64_t start = s->clock_ns;
  for (int i = 0; i < op->ndeps; i++) {
    uint64_t t = dep_time(&op->deps[i]);
    if (t > start)
      start = t;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  uint64_t clock = start;
  grape__sim_run_work(&op->w, &clock);
  pthread_mutex_lock(&grape__sim.lock);
  if (op->w.kind == OP_EVENT) {
    struct CUevent_st* e = op->w.u.ev.ev;
    if (e->s == s && e->seq == op->seq) {
      e->time_ns = start;
      e->timed = 1;
    }
  }
  s->clock_ns = clock;
  s->ring[op->seq % SIM_RING] = clock;
  s->completed = op->seq;
  grape__sim_work_release(&op->w);
  free(op->deps);
  free(op);
  pthread_cond_broadcast(&grape__sim.done_cv);
}

static void* worker(void* arg) {
  struct CUstream_st* s = arg;
  pthread_mutex_lock(&grape__sim.lock);
  for (;;) {
    while (s->head == NULL && !s->destroyed)
      pthread_cond_wait(&s->cv, &grape__sim.lock);
    if (s->head == NULL)
      break;   /* destroyed and drained */
    sim_op_t* op = s->head;
    while (!deps_done(op))
      pthread_cond_wait(&grape__sim.done_cv, &grape__sim.lock);
    s->head = op->next;
    if (s->head == NULL)
      s->tail = NULL;
    execute_locked(s, op);
  }
  s->has_thread = 0;
  pthread_mutex_unlock(&grape__sim.lock);
  return NULL;
}

static int add_dep(sim_op_t* op, int* cap, struct CUstream_st* t, uint64_t seq) {
  if (t->completed >= seq)
    return 0;   /* already done; its time is already in the past of every clock that matters */
  if (op->ndeps == *cap) {
    int nc = *cap ? *cap * 2 : 4;
    sim_dep_t* nd = realloc(op->deps, (size_t)nc * sizeof(*nd));
    if (nd == NULL)
      return -ENOMEM;
    op->deps = nd;
    *cap = nc;
  }
  op->deps[op->ndeps++] = (sim_dep_t){t, seq};
  return 0;
}

static int node_type_of(int kind) {
  switch (kind) {
  case OP_KERNEL: return N_KERNEL;
  case OP_MEMCPY: return N_MEMCPY;
  case OP_MEMSET: return N_MEMSET;
  case OP_HOSTFN: return N_HOST;
  default: return -1;
  }
}

/* Lock held. Takes ownership of *w on success (and on failure frees nothing of it). */
static CUresult submit_locked(struct CUstream_st* s, sim_work_t* w, const sim_dep_t* extra,
                              int nextra, int* run_inline, sim_op_t** out) {
  *run_inline = 0;
  if (s->cap != NULL) {
    if (s->cap->invalidated)
      return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    if (w->kind == OP_EVENT)
      return grape__sim_capture_record_event(s, w->u.ev.ev);
    int type = node_type_of(w->kind);
    if (type < 0)
      return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    return grape__sim_capture_add(s, w, type, NULL);
  }
  if (s->legacy) {
    /* The legacy stream may not join work of a capturing blocking stream. */
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
      if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING) && t->cap != NULL) {
        grape__sim_capture_invalidate(t);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
  }
  sim_op_t* op = calloc(1, sizeof(*op));
  if (op == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  int cap = 0;
  int err = 0;
  for (int i = 0; i < nextra && !err; i++)
    err = add_dep(op, &cap, extra[i].s, extra[i].seq);
  if (s->legacy) {
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL && !err; t = t->all_next)
      if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING))
        err = add_dep(op, &cap, t, t->submitted);
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && grape__sim.legacy != NULL) {
    err = add_dep(op, &cap, grape__sim.legacy, grape__sim.legacy->submitted);
  }
  if (err) {
    free(op->deps);
    free(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->w = *w;
  op->seq = ++s->submitted;
  if (w->kind == OP_EVENT) {
    struct CUevent_st* e = w->u.ev.ev;
    e->s = s;
    e->seq = op->seq;
    e->timed = 0;
    e->cap = NULL;
    e->refs++;
  }
  memset(w, 0, sizeof(*w));
  if (grape__sim.sync_mode) {
    *run_inline = 1;
    *out = op;
    return CUDA_SUCCESS;
  }
  if (s->tail != NULL)
    s->tail->next = op;
  else
    s->head = op;
  s->tail = op;
  if (!s->has_thread) {
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&s->thread, &a, worker, s) == 0)
      s->has_thread = 1;
    pthread_attr_destroy(&a);
    if (!s->has_thread) {
      /* No thread: run the queue here, in order, as SIMCU_SYNC would. */
      s->head = s->tail = NULL;
      *run_inline = 1;
      *out = op;
      return CUDA_SUCCESS;
    }
  }
  pthread_cond_signal(&s->cv);
  return CUDA_SUCCESS;
}

/* Lock held. SIMCU_SYNC or no worker thread: the submitting thread runs the
 * op once the stream's previous op and the op's dependencies are done. Waits
 * only point at earlier submissions, each run by a thread that is already
 * inside this function, so they cannot form a cycle. */
static void run_inline_op(struct CUstream_st* s, sim_op_t* op) {
  while (!deps_done(op) || s->completed + 1 != op->seq)
    pthread_cond_wait(&grape__sim.done_cv, &grape__sim.lock);
  execute_locked(s, op);
}

CUresult grape__sim_submit(struct CUstream_st* s, sim_work_t* w, const sim_dep_t* extra,
                           int nextra) {
  int inl;
  sim_op_t* op = NULL;
  pthread_mutex_lock(&grape__sim.lock);
  CUresult r = submit_locked(s, w, extra, nextra, &inl, &op);
  if (r == CUDA_SUCCESS && inl)
    run_inline_op(s, op);
  if (r != CUDA_SUCCESS)
    grape__sim_work_release(w);
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* Submits a batch (a graph launch) contiguously. works[] are consumed. */
CUresult grape__sim_submit_batch(struct CUstream_st* s, sim_work_t* works, sim_dep_t** deps,
                                 int* ndeps, int n);
CUresult grape__sim_submit_batch(struct CUstream_st* s, sim_work_t* works, sim_dep_t** deps,
                                 int* ndeps, int n) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  for (int i = 0; i < n; i++) {
    if (r != CUDA_SUCCESS) {
      grape__sim_work_release(&works[i]);
      continue;
    }
    int inl;
    sim_op_t* op = NULL;
    /* An event record's work must own a reference while it is handed over. */
    struct CUevent_st* ev = works[i].kind == OP_EVENT ? works[i].u.ev.ev : NULL;
    if (ev != NULL)
      ev->refs++;
    r = submit_locked(s, &works[i], deps ? deps[i] : NULL, ndeps ? ndeps[i] : 0, &inl, &op);
    if (r == CUDA_SUCCESS && ev != NULL)
      grape__sim_event_unref_locked(ev);
    if (r == CUDA_SUCCESS && inl)
      run_inline_op(s, op);
    if (r != CUDA_SUCCESS)
      grape__sim_work_release(&works[i]);
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

CUresult grape__sim_wait_stream(struct CUstream_st* s) {
  pthread_mutex_lock(&grape__sim.lock);
  uint64_t target = s->submitted;
  while (s->completed < target)
    pthread_cond_wait(&grape__sim.done_cv, &grape__sim.lock);
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

/* As grape__sim_wait_all, but gives up after ms milliseconds (exit must not
 * hang on a host function that never returns). */
void grape__sim_wait_all_timed(int ms) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += ms / 1000;
  dl.tv_nsec += (long)(ms % 1000) * 1000000L;
  if (dl.tv_nsec >= 1000000000L) {
    dl.tv_sec++;
    dl.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&grape__sim.lock);
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next) {
    uint64_t target = t->submitted;
    while (t->completed < target)
      if (pthread_cond_timedwait(&grape__sim.done_cv, &grape__sim.lock, &dl) != 0)
        goto out;
  }
out:
  pthread_mutex_unlock(&grape__sim.lock);
}

int grape__sim_capturing(struct CUstream_st* s) {
  pthread_mutex_lock(&grape__sim.lock);
  int c = s->cap != NULL;
  pthread_mutex_unlock(&grape__sim.lock);
  return c;
}

CUresult grape__sim_wait_all(void) {
  pthread_mutex_lock(&grape__sim.lock);
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next) {
    uint64_t target = t->submitted;
    while (t->completed < target)
      pthread_cond_wait(&grape__sim.done_cv, &grape__sim.lock);
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

/* ---- Capture-time rules ---- */

/* Lock held. */
static void invalidate_all_strict(void) {
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
    if (t->cap != NULL && t->cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED)
      t->cap->invalidated = 1;
}

/* A "potentially unsafe" call (cuMemAlloc, cuMemFree, cuCtxSynchronize, ...),
 * judged by the calling thread's capture interaction mode. */
CUresult grape__sim_unsafe_call(void) {
  if (tls_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (tls_own_strict > 0 ||
      (tls_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && grape__sim.active_global_captures > 0)) {
    invalidate_all_strict();
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* A synchronising operation on s: illegal if s is capturing (and that
 * invalidates the capture), or if it is the legacy stream while a blocking
 * stream captures. */
CUresult grape__sim_capture_check(struct CUstream_st* s, int legacy_ok) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (s->cap != NULL) {
    s->cap->invalidated = 1;
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (s->legacy && !legacy_ok) {
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
      if (!(t->flags & CU_STREAM_NON_BLOCKING) && t->cap != NULL) {
        t->cap->invalidated = 1;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
  }
  pthread_mutex_unlock(&grape__sim.lock);
  if (r == CUDA_SUCCESS)
    r = grape__sim_unsafe_call();
  return r;
}

/* Called by graph.c when a capture begins (delta = 1) or ends (-1) on this thread. */
void grape__sim_capture_thread_account(CUstreamCaptureMode mode, int delta);
void grape__sim_capture_thread_account(CUstreamCaptureMode mode, int delta) {
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    tls_own_strict += delta;
}

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  SIM_COUNT(cuThreadExchangeStreamCaptureMode);
  if (mode == NULL || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = tls_mode;
  tls_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* ---- Stream entry points ---- */

static CUresult stream_create(CUstream* out, unsigned flags, int prio) {
  SIM_TRY(grape__sim_check_init());
  if (grape__sim_current_ctx() == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (out == NULL || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
    return CUDA_ERROR_INVALID_VALUE;
  if (prio > 0)
    prio = 0;
  if (prio < -5)
    prio = -5;
  struct CUstream_st* s = stream_new(flags, prio);
  if (s == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  if (grape__sim_reg_add(s, K_STREAM) != 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *out = s;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamCreate(CUstream* out, unsigned int flags) {
  SIM_COUNT(cuStreamCreate);
  return stream_create(out, flags, 0);
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream* out, unsigned int flags, int prio) {
  SIM_COUNT(cuStreamCreateWithPriority);
  return stream_create(out, flags, prio);
}

/* Work already queued still runs, as with CUDA; the handle dies at once. */
SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream h) {
  SIM_COUNT(cuStreamDestroy_v2);
  SIM_TRY(grape__sim_check_init());
  if (h == NULL || h == CU_STREAM_LEGACY || h == CU_STREAM_PER_THREAD ||
      !grape__sim_reg_has(h, K_STREAM))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_reg_del(h);
  pthread_mutex_lock(&grape__sim.lock);
  if (h->cap != NULL) {
    h->cap->invalidated = 1;
    h->cap = NULL;
  }
  h->destroyed = 1;
  pthread_cond_signal(&h->cv);
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream h, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  r = grape__sim_capture_check(s, 0);
  if (r != CUDA_SUCCESS)
    return r;
  return grape__sim_wait_stream(s);
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream h) {
  SIM_COUNT(cuStreamSynchronize);
  return stream_sync(h, 0);
}
SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream h) {
  SIM_COUNT(cuStreamSynchronize_ptsz);
  return stream_sync(h, 1);
}

static CUresult stream_query(CUstream h, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  pthread_mutex_lock(&grape__sim.lock);
  if (s->cap != NULL) {
    s->cap->invalidated = 1;
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else {
    r = s->completed >= s->submitted ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_EXPORT CUresult cuStreamQuery(CUstream h) {
  SIM_COUNT(cuStreamQuery);
  return stream_query(h, 0);
}
SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream h) {
  SIM_COUNT(cuStreamQuery_ptsz);
  return stream_query(h, 1);
}

static CUresult stream_wait_event(CUstream h, CUevent e, unsigned flags, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&grape__sim.lock);
  if (grape__sim_cap_live(e->cap) || s->cap != NULL) {
    r = grape__sim_capture_wait_event(s, e);
    pthread_mutex_unlock(&grape__sim.lock);
    return r;
  }
  sim_dep_t d = {e->s, e->seq};
  int has = e->s != NULL;
  pthread_mutex_unlock(&grape__sim.lock);
  if (!has)
    return CUDA_SUCCESS;   /* never recorded: nothing to wait for */
  sim_work_t w = {.kind = OP_NOP};
  return grape__sim_submit(s, &w, &d, 1);
}

SIM_EXPORT CUresult cuStreamWaitEvent(CUstream h, CUevent e, unsigned int flags) {
  SIM_COUNT(cuStreamWaitEvent);
  return stream_wait_event(h, e, flags, 0);
}
SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream h, CUevent e, unsigned int flags) {
  SIM_COUNT(cuStreamWaitEvent_ptsz);
  return stream_wait_event(h, e, flags, 1);
}

#define STREAM_GETTER(name, T, expr, ptds)                                         \
  SIM_EXPORT CUresult name(CUstream h, T* out) {                                   \
    SIM_COUNT(name);                                                               \
    struct CUstream_st* s;                                                         \
    CUresult r = grape__sim_stream(h, ptds, &s);                                   \
    if (r != CUDA_SUCCESS)                                                         \
      return r;                                                                    \
    if (out == NULL)                                                               \
      return CUDA_ERROR_INVALID_VALUE;                                             \
    *out = (expr);                                                                 \
    return CUDA_SUCCESS;                                                           \
  }
STREAM_GETTER(cuStreamGetFlags, unsigned int, s->flags, 0)
STREAM_GETTER(cuStreamGetFlags_ptsz, unsigned int, s->flags, 1)
STREAM_GETTER(cuStreamGetPriority, int, s->priority, 0)
STREAM_GETTER(cuStreamGetPriority_ptsz, int, s->priority, 1)
STREAM_GETTER(cuStreamGetId, unsigned long long, s->id, 0)
STREAM_GETTER(cuStreamGetId_ptsz, unsigned long long, s->id, 1)
STREAM_GETTER(cuStreamGetCtx, CUcontext, &grape__sim.primary, 0)
STREAM_GETTER(cuStreamGetCtx_ptsz, CUcontext, &grape__sim.primary, 1)

static CUresult host_func(CUstream h, CUhostFn fn, void* data, int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if (fn == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w = {.kind = OP_HOSTFN};
  w.u.host.fn = fn;
  w.u.host.data = data;
  return grape__sim_submit(s, &w, NULL, 0);
}

SIM_EXPORT CUresult cuLaunchHostFunc(CUstream h, CUhostFn fn, void* data) {
  SIM_COUNT(cuLaunchHostFunc);
  return host_func(h, fn, data, 0);
}
SIM_EXPORT CUresult cuLaunchHostFunc_ptsz(CUstream h, CUhostFn fn, void* data) {
  SIM_COUNT(cuLaunchHostFunc_ptsz);
  return host_func(h, fn, data, 1);
}

/* cuStreamAddCallback: a host function that also receives the stream and a status. */
typedef struct cb_s {
  CUstreamCallback fn;
  CUstream h;
  void* data;
} cb_t;

static void cb_trampoline(void* p) {
  cb_t* c = p;
  c->fn(c->h, CUDA_SUCCESS, c->data);
  free(c);
}

static CUresult add_callback(CUstream h, CUstreamCallback fn, void* data, unsigned flags, int ptds) {
  if (fn == NULL || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  cb_t* c = malloc(sizeof(*c));
  if (c == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *c = (cb_t){fn, h, data};
  CUresult r = host_func(h, cb_trampoline, c, ptds);
  if (r != CUDA_SUCCESS)
    free(c);
  return r;
}

SIM_EXPORT CUresult cuStreamAddCallback(CUstream h, CUstreamCallback fn, void* data, unsigned int flags) {
  SIM_COUNT(cuStreamAddCallback);
  return add_callback(h, fn, data, flags, 0);
}
SIM_EXPORT CUresult cuStreamAddCallback_ptsz(CUstream h, CUstreamCallback fn, void* data,
                                             unsigned int flags) {
  SIM_COUNT(cuStreamAddCallback_ptsz);
  return add_callback(h, fn, data, flags, 1);
}

/* ---- Events ---- */

SIM_EXPORT CUresult cuEventCreate(CUevent* out, unsigned int flags) {
  SIM_COUNT(cuEventCreate);
  SIM_TRY(grape__sim_check_init());
  if (grape__sim_current_ctx() == NULL)
    return CUDA_ERROR_INVALID_CONTEXT;
  if (out == NULL || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                          CU_EVENT_INTERPROCESS)))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st* e = grape__sim_reg_new(sizeof(*e), K_EVENT);
  if (e == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  e->flags = flags;
  e->refs = 1;
  e->live = 1;
  *out = e;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  SIM_COUNT(cuEventDestroy_v2);
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_reg_del(e);
  pthread_mutex_lock(&grape__sim.lock);
  e->live = 0;
  grape__sim_event_unref_locked(e);
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream h, unsigned flags, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_EVENT_RECORD_EXTERNAL) {
    pthread_mutex_lock(&grape__sim.lock);
    int capturing = s->cap != NULL;
    if (capturing) {
      r = grape__sim_capture_add(s, NULL, N_EVENT_RECORD, e);
      pthread_mutex_unlock(&grape__sim.lock);
      return r;
    }
    pthread_mutex_unlock(&grape__sim.lock);
  }
  sim_work_t w = {.kind = OP_EVENT};
  w.u.ev.ev = e;
  /* submit takes its own reference for a queued record; the capture path needs none. */
  pthread_mutex_lock(&grape__sim.lock);
  e->refs++;
  pthread_mutex_unlock(&grape__sim.lock);
  r = grape__sim_submit(s, &w, NULL, 0);   /* on failure, the work's reference is dropped */
  if (r == CUDA_SUCCESS) {
    pthread_mutex_lock(&grape__sim.lock);
    grape__sim_event_unref_locked(e);
    pthread_mutex_unlock(&grape__sim.lock);
  }
  return r;
}

SIM_EXPORT CUresult cuEventRecord(CUevent e, CUstream h) {
  SIM_COUNT(cuEventRecord);
  return event_record(e, h, 0, 0);
}
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h) {
  SIM_COUNT(cuEventRecord_ptsz);
  return event_record(e, h, 0, 1);
}
SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int flags) {
  SIM_COUNT(cuEventRecordWithFlags);
  return event_record(e, h, flags, 0);
}
SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int flags) {
  SIM_COUNT(cuEventRecordWithFlags_ptsz);
  return event_record(e, h, flags, 1);
}

SIM_EXPORT CUresult cuEventQuery(CUevent e) {
  SIM_COUNT(cuEventQuery);
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult r;
  pthread_mutex_lock(&grape__sim.lock);
  if (grape__sim_cap_live(e->cap))
    r = CUDA_ERROR_CAPTURED_EVENT;
  else
    r = e->s == NULL || e->s->completed >= e->seq ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent e) {
  SIM_COUNT(cuEventSynchronize);
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (grape__sim_cap_live(e->cap)) {
    r = CUDA_ERROR_CAPTURED_EVENT;
  } else if (e->s != NULL) {
    struct CUstream_st* s = e->s;
    uint64_t seq = e->seq;
    while (s->completed < seq)
      pthread_cond_wait(&grape__sim.done_cv, &grape__sim.lock);
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

static CUresult elapsed(float* ms, CUevent a, CUevent b) {
  if (ms == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(a, K_EVENT) || !grape__sim_reg_has(b, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (a->s == NULL || b->s == NULL)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (a->s->completed < a->seq || b->s->completed < b->seq)
    r = CUDA_ERROR_NOT_READY;
  else if (!a->timed || !b->timed)
    r = CUDA_ERROR_INVALID_HANDLE;
  else
    *ms = (float)(((double)b->time_ns - (double)a->time_ns) / 1e6);
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  SIM_COUNT(cuEventElapsedTime);
  return elapsed(ms, a, b);
}
SIM_EXPORT CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  SIM_COUNT(cuEventElapsedTime_v2);
  return elapsed(ms, a, b);
}

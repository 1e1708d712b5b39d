/* stream.c: streams, their worker threads, events, host functions, and the
 * rules that tie work to streams (legacy NULL stream, per-thread default
 * stream).
 *
 * DESIGN: grape__sim_submit() is the one door for stream work. Under the
 * global lock it either hands the work to the stream's capture (capture.c,
 * through the hooks it registers: streams sit below capture and graphs),
 * which makes it a graph node, or gives it the next sequence number of the stream, adds the implicit
 * dependencies of the legacy stream (an op on the legacy stream waits for all
 * prior work of blocking streams; an op on a blocking stream waits for prior
 * legacy work) and queues it. A stream's worker thread, started on its first
 * op, runs ops in order once their dependencies are done. With SIMCU_SYNC=1
 * the submitting thread runs the op itself, in stream order.
 *
 * Simulated time: each stream has a clock; an op starts at the latest of the
 * stream's clock, its dependencies' finish times and its submission (the
 * submitting thread's host clock plus a latency, cost.h) and lasts a modelled
 * duration (grape__sim_run_work). A dependency already finished when it is
 * taken contributes its finish time at once; one still pending holds the
 * op's "done" cell. So times never depend on real scheduling. A kernel run as
 * a graph node is modelled without the eager launch overhead.
 *
 * Waiting for the device (syncs) moves the waiting thread's host clock to the
 * finish time of what it waited for. A query waits (really) for the work to
 * finish and then answers by simulated time: ready only if the work finished
 * by the time the query was made (the caller's host clock); when the work
 * waits on the host (a host function is running, or a stream wait for a value
 * in memory, memop.c, which the host may be the one to write), it answers from
 * the real state instead: waiting could deadlock.
 *
 * A kernel body may raise a device fault (SIMCU_FAULT): the fault becomes the
 * context's sticky error, later work of every stream is skipped, and calls
 * that use the context return it (core.c, grape__sim_sticky).
 */
#include "internal.h"
#include "cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const sim_capture_ops_t* capture_ops;   /* capture.c's, set at load */

void grape__sim_capture_ops_set(const sim_capture_ops_t* ops) {
  capture_ops = ops;
}

static _Thread_local struct CUstream_st* tls_ptds;
static pthread_key_t ptds_key;
static pthread_once_t ptds_once = PTHREAD_ONCE_INIT;

/* ---- Stream objects ---- */

/* Lock held: a destroyed stream whose work has all finished, off the free list.
 * Its sequence numbers keep counting; the finish time of its earlier work is
 * kept in retired_*_ns for the legacy stream and the exit report. */
static struct CUstream_st* take_reusable_locked(void) {
  for (struct CUstream_st** pp = &grape__sim.free_streams; *pp != NULL; pp = &(*pp)->free_next) {
    struct CUstream_st* t = *pp;
    if (t->head != NULL || t->completed != t->submitted)
      continue;
    *pp = t->free_next;
    t->free_next = NULL;
    if (t->clock_ns > grape__sim.retired_all_ns)
      grape__sim.retired_all_ns = t->clock_ns;
    if (!(t->flags & CU_STREAM_NON_BLOCKING) && t->clock_ns > grape__sim.retired_blocking_ns)
      grape__sim.retired_blocking_ns = t->clock_ns;
    free(t->cap_deps);
    t->cap_deps = NULL;
    t->ncap_deps = 0;
    t->cap = NULL;
    t->legacy = 0;
    t->per_thread = 0;
    t->destroyed = 0;
    t->clock_ns = 0;
    t->plan_ns = 0;
    return t;
  }
  return NULL;
}

/* Lock held: s is destroyed; its object may serve a later stream. */
static void retire_locked(struct CUstream_st* s) {
  s->destroyed = 1;
  pthread_cond_signal(&s->cv);
  if (!grape__sim.no_reuse) {
    s->free_next = grape__sim.free_streams;
    grape__sim.free_streams = s;
  }
}

static struct CUstream_st* stream_new(unsigned flags, int prio) {
  pthread_mutex_lock(&grape__sim.lock);
  struct CUstream_st* s = take_reusable_locked();
  if (s != NULL) {
    s->flags = flags;
    s->priority = prio;
    s->id = ++grape__sim.next_stream_id;
    pthread_mutex_unlock(&grape__sim.lock);
    return s;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  s = calloc(1, sizeof(*s));
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
  retire_locked(s);
  pthread_mutex_unlock(&grape__sim.lock);
}

static void ptds_key_init(void) {
  (void)pthread_key_create(&ptds_key, ptds_exit);
}

static void init_legacy(void) {
  grape__sim.legacy = stream_new(CU_STREAM_DEFAULT, 0);
  if (grape__sim.legacy != NULL)
    grape__sim.legacy->legacy = 1;
}

static struct CUstream_st* legacy_stream(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_legacy);
  return grape__sim.legacy;
}

/* Resolves a stream handle as the driver does for the plain (ptds == 0) or
 * per-thread (ptds == 1) entry point. */
CUresult grape__sim_stream(CUstream h, int ptds, struct CUstream_st** out) {
  SIM_TRY(grape__sim_need_ctx());
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

CUresult grape__sim_op_stream(CUstream h, int ptds, int async, struct CUstream_st** out) {
  SIM_TRY(grape__sim_stream(h, ptds, out));
  return async ? CUDA_SUCCESS : grape__sim_capture_check(*out, 0);
}

/* ---- Execution ---- */

/* Lock held: op's finish time will be wanted; returns its cell with a
 * reference for the caller, or NULL without memory (the time then reads 0). */
static sim_done_t* op_watch_locked(sim_op_t* op) {
  if (op == NULL)
    return NULL;
  if (op->done == NULL) {
    op->done = calloc(1, sizeof(*op->done));
    if (op->done == NULL)
      return NULL;
    op->done->refs = 1;   /* the op's own */
    if (op->planned)
      op->done->t = op->plan_end;
  }
  op->done->refs++;
  return op->done;
}

static void done_put_locked(sim_done_t* d) {
  if (d != NULL && --d->refs == 0)
    free(d);
}

void grape__sim_deps_drop_locked(sim_dep_t* d, int n) {
  for (int i = 0; i < n; i++)
    done_put_locked(d[i].done);
}

/* Lock held: a dependency on the last record of e; 0 if e was never recorded. */
int grape__sim_dep_on_event_locked(struct CUevent_st* e, sim_dep_t* d) {
  if (e->s == NULL)
    return 0;
  *d = (sim_dep_t){e->s, e->seq, NULL, 0};
  if (e->s->completed >= e->seq)
    d->at = e->time_ns;
  else
    d->done = op_watch_locked(e->rec_op);
  return 1;
}

/* Lock held: frees an op that is done with (its work already released). */
static void op_free_locked(sim_op_t* op) {
  grape__sim_deps_drop_locked(op->deps, op->ndeps);
  done_put_locked(op->done);
  free(op->deps);
  free(op);
}

static int deps_done(const sim_op_t* op) {
  for (int i = 0; i < op->ndeps; i++)
    if (op->deps[i].s->completed < op->deps[i].seq)
      return 0;
  return 1;
}

/* A fault code a body may raise, or CUDA_ERROR_LAUNCH_FAILED for any other. */
static int fault_code(int code) {
  switch (code) {
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
    return code;
  default:
    return CUDA_ERROR_LAUNCH_FAILED;
  }
}

/* Runs a kernel's blocks in blockIdx order until one raises a fault; returns it or 0. */
static int run_kernel(sim_work_t* w) {
  struct CUfunc_st* f = w->u.k.f;
  if (grape__sim_time_only() || f->timed)   /* timed kernels write nothing */
    return 0;
  void* argv[f->nparams > 0 ? f->nparams : 1];
  int fault = 0;
  simcu_block_t b;
  grape__sim_kernel_view(w, argv, &b, &fault);
  void* shm = w->u.k.smem ? malloc(w->u.k.smem) : NULL;
  b.shared = shm;
  for (unsigned z = 0; z < b.grid.z && !fault; z++)
    for (unsigned y = 0; y < b.grid.y && !fault; y++)
      for (unsigned x = 0; x < b.grid.x && !fault; x++) {
        b.idx = (simcu_dim3_t){x, y, z};
        if (shm != NULL)
          memset(shm, 0, w->u.k.smem);
        f->body(&b, argv);
      }
  free(shm);
  if (fault == 0)
    return 0;
  int code = fault_code(fault);
  const char* name = grape__sim_err_name((CUresult)code);
  grape__sim_logf("kernel %s raised %s at block (%u,%u,%u): the context is unusable from now on",
                  f->name, name != NULL ? name : "a fault", b.idx.x, b.idx.y, b.idx.z);
  return code;
}

/* Runs a 2-D/3-D copy (copy.c's boxes): rows x depth rows of n bytes. */
static void copy_rows(const sim_work_t* w) {
  size_t rows = w->u.cp.rows ? w->u.cp.rows : 1;
  size_t depth = w->u.cp.depth ? w->u.cp.depth : 1;
  for (size_t z = 0; z < depth; z++) {
    char* d = (char*)w->u.cp.dst + z * w->u.cp.dslice;
    const char* s = (const char*)w->u.cp.src + z * w->u.cp.sslice;
    for (size_t y = 0; y < rows; y++)
      memmove(d + y * w->u.cp.dpitch, s + y * w->u.cp.spitch, w->u.cp.n);
  }
}

/* Runs the work and adds its modelled duration (grape__sim_work_ns) to *clock.
 * Returns a device fault raised by a kernel body, or 0. */
int grape__sim_run_work(sim_work_t* w, uint64_t* clock) {
  uint64_t dur = grape__sim_work_ns(w, 0);
  int fault = 0;
  switch (w->kind) {
  case OP_KERNEL:
    fault = run_kernel(w);
    atomic_fetch_add(&grape__sim.kernels_executed, 1);
    if (grape__sim_stats_counts(w))
      grape__sim_kstat_add(w->u.k.f->name, dur, w->u.k.from_graph);
    if (w->u.k.from_graph)
      atomic_fetch_add(&grape__sim.graph_kernel_nodes_executed, 1);
    break;
  case OP_MEMCPY:
    if ((w->u.cp.rows ? w->u.cp.rows : 1) == 1 && (w->u.cp.depth ? w->u.cp.depth : 1) == 1)
      memmove(w->u.cp.dst, w->u.cp.src, w->u.cp.n);
    else
      copy_rows(w);
    if (grape__sim_stats_counts(w))
      grape__sim_mstat_add(0, w->u.cp.dir,
                           w->u.cp.n * (w->u.cp.rows ? w->u.cp.rows : 1) *
                               (w->u.cp.depth ? w->u.cp.depth : 1), dur);
    break;
  case OP_MEMSET: {
    if (grape__sim_stats_counts(w))
      grape__sim_mstat_add(1, 0, (uint64_t)w->u.ms.n * w->u.ms.esize * w->u.ms.height, dur);
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
    break;
  }
  case OP_HOSTFN:
    w->u.host.fn(w->u.host.data);
    break;
  case OP_FREE:
    (void)w->u.fr.free(w->u.fr.p);
    break;
  default:
    break;
  }
  *clock += dur;
  return fault;
}

/* Runs op on stream s (lock held on entry and exit) and marks it complete.
 * After a device fault the op is skipped: a faulted context runs nothing. */
static void execute_locked(struct CUstream_st* s, sim_op_t* op) {
  uint64_t start = s->clock_ns > op->not_before ? s->clock_ns : op->not_before;
  for (int i = 0; i < op->ndeps; i++) {
    uint64_t t = grape__sim_dep_time(&op->deps[i]);
    if (t > start)
      start = t;
  }
  if (op->planned)
    start = op->plan_start;   /* the device model fixed it at submission (device.c) */
  int skip = atomic_load(&grape__sim.sticky) != 0;
  int host = op->w.kind == OP_HOSTFN && op->w.u.host.blocks && !skip;
  if (host) {
    grape__sim.host_blocked++;   /* queries stop waiting for work behind the host */
    pthread_cond_broadcast(&grape__sim.done_cv);
  }
  s->running = op;
  pthread_mutex_unlock(&grape__sim.lock);
  uint64_t clock = start;
  int fault = skip ? 0 : grape__sim_run_work(&op->w, &clock);
  if (op->planned)
    clock = op->plan_end;
  grape__sim_bound_busy(clock - start);
  pthread_mutex_lock(&grape__sim.lock);
  s->running = NULL;
  if (host)
    grape__sim.host_blocked--;
  if (fault != 0) {
    int none = 0;
    atomic_compare_exchange_strong(&grape__sim.sticky, &none, fault);
  }
  if (op->w.kind == OP_EVENT) {
    struct CUevent_st* e = op->w.u.ev.ev;
    if (e->s == s && e->seq == op->seq) {
      e->time_ns = start;
      e->timed = 1;
    }
    if (e->rec_op == op)
      e->rec_op = NULL;
  }
  /* A graph's branches may finish out of order: the stream's clock keeps the latest. */
  if (!op->planned || clock > s->clock_ns)
    s->clock_ns = clock;
  if (op->done != NULL)
    op->done->t = clock;
  if (s->last_op == op)
    s->last_op = NULL;
  s->completed = op->seq;
  grape__sim_work_release(&op->w);
  op_free_locked(op);
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
    /* An earlier op may still be pending inline (a batch whose first ops
     * found no worker): stream order first. */
    while (!deps_done(op) || s->completed + 1 != op->seq)
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

static void fold(sim_op_t* op, uint64_t t) {
  if (t > op->not_before)
    op->not_before = t;
}

/* Lock held. Takes over d's cell: a finished dependency only moves the op's
 * earliest start; a pending one is kept. */
static int add_dep(sim_op_t* op, size_t* cap, const sim_dep_t* d) {
  if (d->s->completed >= d->seq) {
    fold(op, grape__sim_dep_time(d));
    done_put_locked(d->done);
    return 0;
  }
  if ((size_t)op->ndeps == *cap) {
    sim_dep_t* nd = grape__grow(op->deps, cap, *cap + 1, sizeof(*nd), 4);
    if (nd == NULL) {
      done_put_locked(d->done);
      return -ENOMEM;
    }
    op->deps = nd;
  }
  op->deps[op->ndeps++] = *d;
  return 0;
}

/* Lock held: op waits for all work submitted to t so far. */
static int add_stream_dep(sim_op_t* op, size_t* cap, struct CUstream_st* t) {
  if (t->completed >= t->submitted) {
    fold(op, t->clock_ns);
    return 0;
  }
  sim_dep_t d = {t, t->submitted, op_watch_locked(t->last_op), 0};
  return add_dep(op, cap, &d);
}

/* Lock held. Takes ownership of *w on success (and on failure frees nothing
 * of it); the extra dependencies' cells are taken over either way. With the
 * device model, the op's times are fixed here unless defer is set (a graph
 * launch plans its ops together). */
static CUresult submit_locked(struct CUstream_st* s, sim_work_t* w, const sim_dep_t* extra,
                              int nextra, int defer, int* run_inline, sim_op_t** out) {
  *run_inline = 0;
  *out = NULL;
  if (s->cap != NULL) {
    grape__sim_deps_drop_locked((sim_dep_t*)extra, nextra);
    return capture_ops->submit_locked(s, w);
  }
  if (s->legacy) {
    /* The legacy stream may not join work of a capturing blocking stream. */
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
      if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING) && t->cap != NULL) {
        grape__sim_capture_invalidate(t);
        grape__sim_deps_drop_locked((sim_dep_t*)extra, nextra);
        return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
  }
  sim_op_t* op = calloc(1, sizeof(*op));
  if (op == NULL) {
    grape__sim_deps_drop_locked((sim_dep_t*)extra, nextra);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->not_before = grape__sim_submit_time();
  size_t cap = 0;
  int err = 0;
  for (int i = 0; i < nextra; i++) {
    if (err)
      done_put_locked(extra[i].done);
    else
      err = add_dep(op, &cap, &extra[i]);
  }
  if (s->legacy) {
    fold(op, grape__sim.retired_blocking_ns);
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL && !err; t = t->all_next)
      if (t != s && !(t->flags & CU_STREAM_NON_BLOCKING))
        err = add_stream_dep(op, &cap, t);
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && grape__sim.legacy != NULL) {
    err = add_stream_dep(op, &cap, grape__sim.legacy);
  }
  if (err) {
    op_free_locked(op);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  op->w = *w;
  grape__sim_stats_stamp(&op->w);
  op->seq = ++s->submitted;
  s->last_op = op;
  grape__sim_bound_submit_locked(s, w);
  if (w->kind == OP_EVENT) {
    struct CUevent_st* e = w->u.ev.ev;
    e->s = s;
    e->seq = op->seq;
    e->rec_op = op;
    e->timed = 0;
    e->cap = NULL;
    e->refs++;
    grape__sim_bound_record_locked(e, s);
  }
  memset(w, 0, sizeof(*w));
  if (!defer && grape__sim_dm_on())
    grape__sim_dm_plan_locked(s, op);
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
  *out = op;
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

/* The dependencies' cells are taken over whatever the result. */
CUresult grape__sim_submit(struct CUstream_st* s, sim_work_t* w, const sim_dep_t* extra,
                           int nextra) {
  int inl;
  sim_op_t* op = NULL;
  pthread_mutex_lock(&grape__sim.lock);
  CUresult r = submit_locked(s, w, extra, nextra, 0, &inl, &op);
  if (r == CUDA_SUCCESS && inl)
    run_inline_op(s, op);
  if (r != CUDA_SUCCESS)
    grape__sim_work_release(w);
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* Submits a batch (a graph launch) contiguously. works[] and the
 * dependencies' cells are consumed. With the device model the ops' times
 * are fixed together once all are queued (the graph's edges, not the
 * stream's order, decide them), and a last empty op joins the branches, so
 * that the stream's last op finishes with the whole graph. The lock is held
 * throughout, so no worker runs an op before its times are fixed. */
CUresult grape__sim_submit_batch(struct CUstream_st* s, sim_work_t* works, sim_dep_t** deps,
                                 int* ndeps, int n, const sim_batch_dag_t* dag) {
  CUresult r = CUDA_SUCCESS;
  sim_op_t** ops = calloc(n > 0 ? (size_t)n : 1, sizeof(*ops));
  char* inl = calloc(n > 0 ? (size_t)n : 1, 1);
  if (ops == NULL || inl == NULL) {
    free(ops);
    free(inl);
    pthread_mutex_lock(&grape__sim.lock);
    for (int i = 0; i < n; i++) {
      grape__sim_deps_drop_locked(deps ? deps[i] : NULL, ndeps ? ndeps[i] : 0);
      grape__sim_work_release(&works[i]);
    }
    pthread_mutex_unlock(&grape__sim.lock);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  int model = grape__sim_dm_on();
  pthread_mutex_lock(&grape__sim.lock);
  uint64_t base = s->plan_ns;
  for (int i = 0; i < n; i++) {
    sim_dep_t* d = deps ? deps[i] : NULL;
    int nd = ndeps ? ndeps[i] : 0;
    if (r != CUDA_SUCCESS) {
      grape__sim_deps_drop_locked(d, nd);
      grape__sim_work_release(&works[i]);
      continue;
    }
    int run_here;
    /* An event record's work must own a reference while it is handed over. */
    struct CUevent_st* ev = works[i].kind == OP_EVENT ? works[i].u.ev.ev : NULL;
    if (ev != NULL)
      ev->refs++;
    r = submit_locked(s, &works[i], d, nd, model, &run_here, &ops[i]);
    inl[i] = (char)run_here;
    if (r == CUDA_SUCCESS && ev != NULL)
      grape__sim_event_unref_locked(ev);
    if (r != CUDA_SUCCESS)
      grape__sim_work_release(&works[i]);
  }
  sim_op_t* join = NULL;
  int join_inl = 0;
  if (model && r == CUDA_SUCCESS && s->cap == NULL && n > 0) {
    sim_work_t nop = {.kind = OP_NOP};
    r = submit_locked(s, &nop, NULL, 0, 1, &join_inl, &join);
  }
  if (model) /* also after a failure: what was queued must have times */
    grape__sim_dm_plan_batch_locked(s, ops, n, dag, join, base);
  for (int i = 0; i < n; i++)
    if (inl[i])
      run_inline_op(s, ops[i]);
  if (join_inl)
    run_inline_op(s, join);
  pthread_mutex_unlock(&grape__sim.lock);
  free(ops);
  free(inl);
  return r;
}

/* ---- Waiting for the device ---- */

/* Lock held: waits until op seq of t has finished, or (give_up) until a
 * stream runs work that waits on the host; returns whether it finished and, if so, its finish
 * time in *at. op is that op while it is pending; known its time once done. */
static int finish_locked(struct CUstream_st* t, uint64_t seq, sim_op_t* op, uint64_t known,
                         int give_up, uint64_t* at) {
  if (t->completed >= seq) {
    *at = known;
    return 1;
  }
  sim_done_t* d = op_watch_locked(op);
  while (t->completed < seq && !(give_up && grape__sim.host_blocked > 0))
    pthread_cond_wait(&grape__sim.done_cv, &grape__sim.lock);
  int done = t->completed >= seq;
  *at = d != NULL ? d->t : t->clock_ns;
  done_put_locked(d);
  return done;
}

/* Lock held: the finish time of all work submitted to t so far, once done. */
static uint64_t wait_stream_locked(struct CUstream_st* t) {
  uint64_t at;
  (void)finish_locked(t, t->submitted, t->last_op, t->clock_ns, 0, &at);
  return at;
}

/* A host sync: the caller's clock moves to the finish of the stream's work.
 * Returns the sticky fault, if the device raised one. */
CUresult grape__sim_wait_stream(struct CUstream_st* s) {
  pthread_mutex_lock(&grape__sim.lock);
  uint64_t at = wait_stream_locked(s);
  grape__sim_bound_cut_locked(s, NULL);
  pthread_mutex_unlock(&grape__sim.lock);
  grape__sim_host_wait(at);
  return grape__sim_sticky();
}

/* As grape__sim_wait_all, but gives up after ms milliseconds (exit must not
 * hang on a host function that never returns) and leaves the host clock. */
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

/* A device-wide sync (cuCtxSynchronize, and the calls that imply one). */
CUresult grape__sim_wait_all(void) {
  uint64_t end = 0;
  pthread_mutex_lock(&grape__sim.lock);
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next) {
    uint64_t at = wait_stream_locked(t);
    if (at > end)
      end = at;
  }
  if (grape__sim.retired_all_ns > end)
    end = grape__sim.retired_all_ns;
  grape__sim_bound_cut_locked(NULL, NULL);
  pthread_mutex_unlock(&grape__sim.lock);
  grape__sim_host_wait(end);
  return grape__sim_sticky();
}

/* The latest finish time of any device work so far. */
static uint64_t device_end_ns(void) {
  pthread_mutex_lock(&grape__sim.lock);
  uint64_t end = grape__sim.retired_all_ns;
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
    if (t->clock_ns > end)
      end = t->clock_ns;
  pthread_mutex_unlock(&grape__sim.lock);
  return end;
}

/* The end-to-end simulated time: the latest host clock or finished device work. */
uint64_t grape__sim_end_ns(void) {
  uint64_t h = grape__sim_host_end_ns(), d = device_end_ns();
  return h > d ? h : d;
}

/* In a forked child (grape__sim.lock held by the forking thread): no worker
 * thread exists any more, so queued work is dropped and every stream reads as
 * idle; the child can exit at once. CUDA in a forked child is undefined, this
 * only keeps the sim consistent. An op that a parent thread was running is
 * dropped too: that thread does not exist here. */
void grape__sim_stream_atfork_child(void) {
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next) {
    if (t->running != NULL) {
      grape__sim_work_release(&t->running->w);
      op_free_locked(t->running);
      t->running = NULL;
    }
    for (sim_op_t* op = t->head; op != NULL;) {
      sim_op_t* next = op->next;
      grape__sim_work_release(&op->w);
      op_free_locked(op);
      op = next;
    }
    t->head = t->tail = NULL;
    t->last_op = NULL;
    t->has_thread = 0;
    t->completed = t->submitted;
    (void)pthread_cond_init(&t->cv, NULL);
  }
  grape__sim.host_blocked = 0;
}

/* ---- Stream entry points ---- */

static CUresult stream_create(CUstream* out, unsigned flags, int prio) {
  SIM_TRY(grape__sim_need_ctx());
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

/* Work already queued still runs, as with CUDA; the handle dies at once and
 * its value may come back from a later cuStreamCreate once that work is done. */
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
  retire_locked(h);
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

SIM_TWINS(cuStreamSynchronize, _ptsz, (CUstream h), stream_sync, h)

/* Lock held: the answer of a query for op seq of t (see the DESIGN note):
 * ready if the work finished no later than the moment the query was made
 * (the caller's clock before the query's own cost). */
static CUresult ready_locked(struct CUstream_st* t, uint64_t seq, sim_op_t* op, uint64_t known) {
  uint64_t at;
  if (!finish_locked(t, seq, op, known, 1, &at))
    return CUDA_ERROR_NOT_READY;
  CUresult r = grape__sim_sticky();
  if (r != CUDA_SUCCESS)
    return r;
  return grape__sim_host_call_start() >= at ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
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
    r = ready_locked(s, s->submitted, s->last_op, s->clock_ns);
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_TWINS(cuStreamQuery, _ptsz, (CUstream h), stream_query, h)

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
    r = capture_ops->wait_event_locked(s, e);
    pthread_mutex_unlock(&grape__sim.lock);
    return r;
  }
  sim_dep_t d;
  int has = grape__sim_dep_on_event_locked(e, &d);
  if (has)
    grape__sim_bound_join_locked(s, e);
  pthread_mutex_unlock(&grape__sim.lock);
  if (!has)
    return CUDA_SUCCESS;   /* never recorded: nothing to wait for */
  sim_work_t w = {.kind = OP_NOP};
  return grape__sim_submit(s, &w, &d, 1);
}

SIM_TWINS(cuStreamWaitEvent, _ptsz, (CUstream h, CUevent e, unsigned int flags),
          stream_wait_event, h, e, flags)

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
STREAM_GETTER(cuStreamGetCtx, CUcontext, grape__sim_primary(), 0)
STREAM_GETTER(cuStreamGetCtx_ptsz, CUcontext, grape__sim_primary(), 1)

static CUresult host_func(CUstream h, CUhostFn fn, void* data, int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if (fn == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w = {.kind = OP_HOSTFN};
  w.u.host.fn = fn;
  w.u.host.data = data;
  w.u.host.blocks = 1;
  return grape__sim_submit(s, &w, NULL, 0);
}

SIM_TWINS(cuLaunchHostFunc, _ptsz, (CUstream h, CUhostFn fn, void* data), host_func, h, fn, data)

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

SIM_TWINS(cuStreamAddCallback, _ptsz,
          (CUstream h, CUstreamCallback fn, void* data, unsigned int flags),
          add_callback, h, fn, data, flags)

/* ---- Events ---- */

SIM_EXPORT CUresult cuEventCreate(CUevent* out, unsigned int flags) {
  SIM_COUNT(cuEventCreate);
  SIM_TRY(grape__sim_need_ctx());
  if (out == NULL || (flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |
                                          CU_EVENT_INTERPROCESS)))
    return CUDA_ERROR_INVALID_VALUE;
  struct CUevent_st* e = grape__sim_reg_new(sizeof(*e), K_EVENT);
  if (e == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  e->flags = flags;
  e->refs = 1;
  e->live = 1;
  pthread_mutex_lock(&grape__sim.lock);
  e->live_next = grape__sim.live_events;
  if (e->live_next != NULL)
    e->live_next->live_prev = e;
  grape__sim.live_events = e;
  pthread_mutex_unlock(&grape__sim.lock);
  *out = e;
  return CUDA_SUCCESS;
}

/* Lock held: e's handle dies (the object lives on while work refers to it). */
static void event_kill_locked(struct CUevent_st* e) {
  if (e->live_prev != NULL)
    e->live_prev->live_next = e->live_next;
  else
    grape__sim.live_events = e->live_next;
  if (e->live_next != NULL)
    e->live_next->live_prev = e->live_prev;
  e->live_prev = e->live_next = NULL;
  e->live = 0;
  grape__sim_event_unref_locked(e);
}

SIM_EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  SIM_COUNT(cuEventDestroy_v2);
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_reg_del(e);
  pthread_mutex_lock(&grape__sim.lock);
  event_kill_locked(e);
  pthread_mutex_unlock(&grape__sim.lock);
  return CUDA_SUCCESS;
}

void grape__sim_stream_reset_locked(void) {
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next) {
    if (t->legacy || t->per_thread || !grape__sim_reg_has(t, K_STREAM))
      continue;
    grape__sim_reg_del(t);
    if (t->cap != NULL) {
      t->cap->invalidated = 1;
      t->cap = NULL;
    }
    retire_locked(t);
  }
  while (grape__sim.live_events != NULL) {
    grape__sim_reg_del(grape__sim.live_events);
    event_kill_locked(grape__sim.live_events);
  }
}

/* sym: the entry point, whose cost depends on the event's timing flag. */
static CUresult event_record(int sym, CUevent e, CUstream h, unsigned flags, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(h, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_charge_event_record(sym, !(e->flags & CU_EVENT_DISABLE_TIMING));
  if (flags & ~(unsigned)CU_EVENT_RECORD_EXTERNAL)
    return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_EVENT_RECORD_EXTERNAL) {
    pthread_mutex_lock(&grape__sim.lock);
    int capturing = s->cap != NULL;
    if (capturing) {
      r = capture_ops->record_node_locked(s, e);
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
  return event_record(SYM_cuEventRecord, e, h, 0, 0);
}
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream h) {
  SIM_COUNT(cuEventRecord_ptsz);
  return event_record(SYM_cuEventRecord_ptsz, e, h, 0, 1);
}
SIM_EXPORT CUresult cuEventRecordWithFlags(CUevent e, CUstream h, unsigned int flags) {
  SIM_COUNT(cuEventRecordWithFlags);
  return event_record(SYM_cuEventRecordWithFlags, e, h, flags, 0);
}
SIM_EXPORT CUresult cuEventRecordWithFlags_ptsz(CUevent e, CUstream h, unsigned int flags) {
  SIM_COUNT(cuEventRecordWithFlags_ptsz);
  return event_record(SYM_cuEventRecordWithFlags_ptsz, e, h, flags, 1);
}

/* Lock held: the query answer for e's last record (ready if never recorded). */
static CUresult event_ready_locked(struct CUevent_st* e) {
  if (e->s == NULL)
    return grape__sim_sticky();
  return ready_locked(e->s, e->seq, e->rec_op, e->time_ns);
}

SIM_EXPORT CUresult cuEventQuery(CUevent e) {
  SIM_COUNT(cuEventQuery);
  SIM_TRY(grape__sim_sticky());
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult r;
  pthread_mutex_lock(&grape__sim.lock);
  if (grape__sim_cap_live(e->cap))
    r = CUDA_ERROR_CAPTURED_EVENT;
  else
    r = event_ready_locked(e);
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent e) {
  SIM_COUNT(cuEventSynchronize);
  SIM_TRY(grape__sim_sticky());
  if (!grape__sim_reg_has(e, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = CUDA_SUCCESS;
  uint64_t at = 0;
  pthread_mutex_lock(&grape__sim.lock);
  if (grape__sim_cap_live(e->cap))
    r = CUDA_ERROR_CAPTURED_EVENT;
  else if (e->s != NULL)
    (void)finish_locked(e->s, e->seq, e->rec_op, e->time_ns, 0, &at);
  if (r == CUDA_SUCCESS)
    grape__sim_bound_cut_locked(NULL, e);
  pthread_mutex_unlock(&grape__sim.lock);
  if (r != CUDA_SUCCESS)
    return r;
  grape__sim_host_wait(at);
  return grape__sim_sticky();
}

/* Lock held: both events are complete. */
static CUresult elapsed_locked(struct CUevent_st* a, struct CUevent_st* b, float* ms) {
  if (!a->timed || !b->timed)
    return CUDA_ERROR_INVALID_HANDLE;
  *ms = (float)(((double)b->time_ns - (double)a->time_ns) / 1e6);
  return CUDA_SUCCESS;
}

/* Both events must be complete as a query would see them (simulated time). */
static CUresult elapsed(float* ms, CUevent a, CUevent b) {
  if (ms == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  SIM_TRY(grape__sim_sticky());
  if (!grape__sim_reg_has(a, K_EVENT) || !grape__sim_reg_has(b, K_EVENT))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if (a->s == NULL || b->s == NULL)
    r = CUDA_ERROR_INVALID_HANDLE;
  else if ((r = event_ready_locked(a)) == CUDA_SUCCESS && (r = event_ready_locked(b)) == CUDA_SUCCESS)
    r = elapsed_locked(a, b, ms);
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

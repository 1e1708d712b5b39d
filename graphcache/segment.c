/* Segments and their executable graphs: building (inline or by the builder
 * thread), variants, re-binding and launching, timing, eviction.
 *
 * DESIGN: a segment (internal.h) is installed at the trie node where it ends
 * (node->seg: that node is a cut) only once it has an executable, so a
 * region never meets a cut it cannot launch except after an eviction or a
 * failure (it then submits what it holds eagerly, and its key is repaired).
 * Segments a key needs for its next cuts are *staged*: built first, then
 * installed together (grape__gc_install_staged), replacing the segments they
 * split. A build from the builder thread works on a copy of the ops (a job)
 * and runs without the cache's lock; its executable joins its segment under
 * the lock, stamped with the builder's clock at its end (ready_at), and is
 * used only from then on. Executables are on one least-recently-used list:
 * eviction and removal are O(1).
 *
 * Mechanism, not policy: which layout of a segment a launch runs, and the
 * edges of any layout but the chain, come from the cache's policy through
 * policy.h (c->policy); this file never names the policy behind it.
 *
 * Invariants: every executable of a segment holds in dims/params/fns what its
 * nodes hold in the driver (updates go to the driver first). A segment with
 * queued builds is never freed (the job points at it); one that is neither
 * installed nor staged is freed when its last build ends. */
#include "internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/grow.h"
#include "util/hash_mix.h"
#include "util/moving_avg.h"

/* ---- Small helpers ---- */

grape_gc_op_t grape__gc_op_view(const grape_region_t* r, uint32_t i) {
  return (grape_gc_op_t){r->ops.keys[i].kind,         r->ops.keys[i].flags,       r->ops.fns[i], &r->ops.dims[i],
                         r->ops.params + r->ops.poff[i], r->ops.keys[i].param_bytes, r->ops.keys[i].attrs_bytes};
}

/* The parameter set of ops [from, from + n) of r: their functions,
 * dimensions and parameters, hashed (never 0; not the paths' fingerprints,
 * which a test build makes collide: a set is always confirmed byte by byte). */
static uint64_t set_hash(const grape_region_t* r, uint32_t from, uint32_t n) {
  size_t p0 = r->ops.poff[from], p1 = from + n < r->ops.n ? r->ops.poff[from + n] : r->ops.plen;
  uint64_t h = grape__hash_mix(grape__fp_bytes(r->ops.dims + from, n * sizeof(*r->ops.dims)));
  h = grape__hash_mix(h ^ grape__fp_bytes(r->ops.params + p0, p1 - p0));
  return grape__hash_mix(h ^ grape__fp_bytes(r->ops.fns + from, n * sizeof(*r->ops.fns))) | 1;
}

/* set_hash of the seg->n ops of r from `from`, hashed once per launch
 * (*memo: 0 until then). */
static uint64_t seg_set(const seg_t* seg, const grape_region_t* r, uint32_t from, uint64_t* memo) {
  if (*memo == 0)
    *memo = set_hash(r, from, seg->n);
  return *memo;
}

/* ---- The executables' LRU list ---- */

static void lru_unlink(exec_t* e) {
  grape__list_remove(&e->lru);
}

static void lru_push(grape_gc_t* c, exec_t* e) {
  grape__list_insert_tail(&c->exec_lru, &e->lru);
}

static void lru_touch(grape_gc_t* c, exec_t* e) {
  grape__list_move_tail(&c->exec_lru, &e->lru);
}

/* ---- Executables ---- */

static void exec_free(const grape_gc_driver_t* drv, exec_t* e, int with_driver) {
  if (with_driver) {
    if (e->exec)
      drv->exec_destroy(drv->self, e->exec);
    if (e->graph)
      drv->graph_destroy(drv->self, e->graph);
  }
  free(e->nodes);
  free(e->fns);
  free(e->dims);
  free(e->params);
  free(e);
}

void grape__gc_exec_free(grape_gc_t* c, exec_t* e, int with_driver) {
  exec_free(&c->drv, e, with_driver);
}

/* How urgent j is at simulated moment `start`: as queued, or as a hasten
 * made it. In deterministic mode only a hasten before `start` counts: one
 * at or after it may have happened yet or not, as the OS ran the program
 * and the builder. */
static int urgency_at(const grape_gc_t* c, const job_t* j, uint64_t start) {
  for (int u = 0; u < j->urgency; u++)
    if (j->hastened[u] != 0 && (!c->cfg.deterministic || j->hastened[u] < start))
      return u;
  return j->urgency;
}

/* The job to run now in place of j (taken from the queue's head): the
 * first of the most urgent jobs queued before `start`, j itself when none is
 * more urgent. j goes back to the head if another is taken. Under the lock.
 * In deterministic mode every job queued before `start` is in the queue
 * (the program's clock has reached it, and it queues in its own order); one
 * queued at `start` itself may be or not, as the OS ran the program and the
 * builder (the program reports its clock, then queues at the same moment):
 * it waits for the next pick, so that simulated time never depends on it. */
static job_t* job_most_urgent(grape_gc_t* c, job_t* j, uint64_t start) {
  job_t *best = NULL, *best_prev = NULL;
  int least = urgency_at(c, j, start);
  for (job_t *x = c->jobs, *prev = NULL; x != NULL; prev = x, x = x->next) {
    int u = urgency_at(c, x, start);
    if (u < least && (!c->cfg.deterministic || x->t_queued < start)) {
      best = x;
      best_prev = prev;
      least = u;
    }
  }
  if (best == NULL)
    return j;
  if (best_prev != NULL)
    best_prev->next = best->next;
  else
    c->jobs = best->next;
  if (c->jobs_tail == best)
    c->jobs_tail = best_prev;
  j->next = c->jobs;
  c->jobs = j;
  if (c->jobs_tail == NULL)
    c->jobs_tail = j;
  best->next = NULL;
  return best;
}

/* The earliest moment (the program's clock) at which job j may start: a
 * build of estimated cost B once the process has run B / build_share. A run
 * that ends while a build is in progress waits for it at exit (a build
 * cannot be stopped halfway), so that wait is at most that share of the run
 * however soon it ends. The estimate is the shim's first guess until a
 * build has been measured (est: the estimate for j's build; build_gate on
 * the builder thread reads it as of the builder's clock). Under the lock. */
static uint64_t build_gate_for(const grape_gc_t* c, double est) {
  if (c->cfg.build_share <= 0 || c->cfg.now == NULL)
    return 0;
  double ns = est / c->cfg.build_share;
  return c->t_start + (ns < 1e18 ? (uint64_t)ns : (uint64_t)1e18);
}
static uint64_t build_gate(grape_gc_t* c, const job_t* j) {
  return j->retire != NULL ? 0 : build_gate_for(c, grape__gc_build_ns_now(c, j->seg->n));
}

/* Queues job j for the builder thread, stamped now: in the order queued,
 * which the builder follows among jobs of the same urgency. */
static void job_queue(grape_gc_t* c, job_t* j) {
  j->t_queued = grape__gc_now(c);
  /* When the builder is estimated done with it, behind the builds before it:
   * the program's launches until then are timed (a build holding the
   * driver's lock stalls them). Reckoned here, on the program's thread, so
   * that which launches are timed never depends on how the OS ran the
   * builder (and before j is queued: the estimate waits for the builds
   * before it that may end by now, not for j). */
  double est = j->retire != NULL ? 0 : grape__gc_build_ns(c, j->seg->n);
  uint64_t from = j->t_queued, gate = j->retire != NULL ? 0 : build_gate_for(c, est);
  if (gate > from)
    from = gate;
  if (c->builds_until > from)
    from = c->builds_until;
  if (c->jobs_tail != NULL)
    c->jobs_tail->next = j;
  else
    c->jobs = j;
  c->jobs_tail = j;
  c->builds_until = from + (est < 1e15 ? (uint64_t)est : (uint64_t)1e15);
  if (c->cfg.wake != NULL)
    c->cfg.wake(c->builds_until);
}

/* Destroys e, or queues its destruction for the builder thread (in order
 * with the builds, so that the builder's clock stays deterministic): a
 * destroy on the program's thread would delay its next launch. */
static void exec_retire(grape_gc_t* c, exec_t* e) {
  if (c->stopping) {
    exec_free(&c->drv, e, 0);   /* the exit leaves it to the driver, as every executable */
    return;
  }
  job_t* j = c->cfg.async_builds ? calloc(1, sizeof(*j)) : NULL;
  if (j == NULL) {
    exec_free(&c->drv, e, 1);
    return;
  }
  j->retire = e;   /* no context to bind: a destroy needs none */
  job_queue(c, j);
}

/* Builds an executable of ops [from, from + n) of r (a chain in recorded
 * order, or the edges of concurrency plan p: conc.c). Touches nothing of the
 * cache: the builder thread calls it without the lock. @return it, or NULL
 * (*drv_err: the driver's code; 0 when out of memory). */
static exec_t* exec_make(const grape_gc_driver_t* drv, const grape_gc_policy_t* pol,
                         const grape_region_t* r, uint32_t from, uint32_t n, void* timer,
                         const void* layout, int* drv_err) {
  *drv_err = 0;
  exec_t* e = calloc(1, sizeof(*e));
  if (e == NULL)
    return NULL;
  size_t p0 = r->ops.poff[from], p1 = from + n < r->ops.n ? r->ops.poff[from + n] : r->ops.plen;
  e->nodes = calloc(n, sizeof(*e->nodes));
  e->fns = grape__gc_dup(r->ops.fns + from, n * sizeof(*r->ops.fns));
  e->dims = grape__gc_dup(r->ops.dims + from, n * sizeof(*r->ops.dims));
  e->params = grape__gc_dup(r->ops.params + p0, p1 - p0);
  e->plen = p1 - p0;
  e->bytes = (uint64_t)n * GRAPE_GC_NODE_BYTES + e->plen;
  e->set = n <= SET_MAX_OPS ? set_hash(r, from, n) : 0;
  if (e->nodes == NULL || e->fns == NULL || e->dims == NULL || e->params == NULL ||
      (*drv_err = drv->graph_create(drv->self, &e->graph)) != 0)
    goto fail;
  if (layout != NULL) {
    if ((*drv_err = pol->add_nodes(drv, e->graph, r, from, n, timer, layout, e->nodes)) != 0)
      goto fail;
    goto instantiate;
  }
  void* first = NULL;   /* the timer's first node, before the ops */
  if (timer != NULL &&
      (*drv_err = drv->graph_add_timer(drv->self, &first, e->graph, NULL, timer, 0)) != 0)
    goto fail;
  for (uint32_t i = 0; i < n; i++) {
    grape_gc_op_t op = grape__gc_op_view(r, from + i);
    if ((*drv_err = drv->graph_add(drv->self, &e->nodes[i], e->graph, i ? e->nodes[i - 1] : first,
                                   &op)) != 0)
      goto fail;
  }
  void* last;
  if (timer != NULL &&
      (*drv_err = drv->graph_add_timer(drv->self, &last, e->graph, e->nodes[n - 1], timer, 1)) != 0)
    goto fail;
instantiate:
  if ((*drv_err = drv->graph_instantiate(drv->self, &e->exec, e->graph)) != 0)
    goto fail;
  return e;
fail:
  exec_free(drv, e, 1);
  return NULL;
}

/* Takes e out of its segment and the cache's accounts. */
static void exec_unlink(grape_gc_t* c, exec_t* e) {
  seg_t* s = e->seg;
  for (int i = s->nvar; i-- > 0;)   /* (from the end: a segment being freed takes its last) */
    if (s->var[i] == e) {
      s->var[i] = s->var[--s->nvar];
      break;
    }
  s->npinned -= e->pinned;
  lru_unlink(e);
  c->nexecs--;
  c->st.graph_bytes -= e->bytes;
  if (s->nvar == 0 && s->installed)
    c->st.segments--;
}

void grape__gc_exec_drop(grape_gc_t* c, exec_t* e) {
  exec_unlink(c, e);
  exec_free(&c->drv, e, 1);
}

/* Evicts least recently used executables (never those of `keep`) until one
 * more of `bytes` fits the limits. @return 0, or -1 when it cannot fit. */
static int evict_for(grape_gc_t* c, uint64_t bytes, const seg_t* keep) {
  grape_list_t* q = grape__list_first(&c->exec_lru);
  while (((long)c->nexecs + 1 > c->cfg.max_graphs || c->st.graph_bytes + bytes > c->cfg.max_bytes) &&
         q != &c->exec_lru) {
    grape_list_t* next = q->next;
    exec_t* e = GRAPE_LIST_DATA(q, exec_t, lru);
    if (e->seg != keep) {
      exec_unlink(c, e);
      exec_retire(c, e);
      c->st.graphs_evicted++;
    }
    q = next;
  }
  return (long)c->nexecs + 1 > c->cfg.max_graphs || c->st.graph_bytes + bytes > c->cfg.max_bytes
             ? -1
             : 0;
}

/* Adds built executable e to seg, making room. @return 0, or -1 (e freed:
 * larger than the whole budget). */
static int exec_add(grape_gc_t* c, seg_t* seg, exec_t* e) {
  if (evict_for(c, e->bytes, seg) != 0 || seg->nvar == MAX_VARIANTS) {
    exec_free(&c->drv, e, 1);
    return -1;
  }
  e->seg = seg;
  seg->var[seg->nvar++] = e;
  seg->npinned += e->pinned;
  c->st.set_graphs += e->pinned;
  if (seg->nvar == 1 && seg->installed)
    c->st.segments++;
  lru_push(c, e);
  c->nexecs++;
  c->st.graph_bytes += e->bytes;
  if (c->st.graph_bytes > c->st.graph_bytes_peak)
    c->st.graph_bytes_peak = c->st.graph_bytes;
  c->st.graphs_built++;
  return 0;
}

/* ---- Segments ---- */

static seg_t* seg_new(grape_gc_t* c, grape_gc_node_t* end, uint32_t from) {
  seg_t* s = calloc(1, sizeof(*s));
  if (s == NULL)
    return NULL;
  s->end = end;
  s->from = from;
  s->n = end->depth - from;
  s->next = c->segs;
  c->segs = s;
  /* Timed when cuts may use it (no timer: no cut changes). */
  if (c->cfg.cuts && c->drv.timer_create != NULL && c->drv.timer_create(c->drv.self, &s->timer) != 0)
    s->timer = NULL;
  return s;
}

void grape__gc_seg_free(grape_gc_t* c, seg_t* seg, int with_driver) {
  while (seg->nvar > 0) {
    exec_t* e = seg->var[seg->nvar - 1];
    exec_unlink(c, e);
    if (with_driver == GRAPE_GC_RETIRE)
      exec_retire(c, e);
    else
      exec_free(&c->drv, e, with_driver);
  }
  free(seg->sets);
  if (seg->timer != NULL && with_driver && !(with_driver == GRAPE_GC_RETIRE && c->stopping))
    c->drv.timer_destroy(c->drv.self, seg->timer);
  c->policy->freed(seg);
  for (seg_t** p = &c->segs; *p != NULL; p = &(*p)->next)
    if (*p == seg) {
      *p = seg->next;
      break;
    }
  free(seg);
}

/* grape__gc_seg_build, of an executable pinned to its parameter set or not,
 * queued with the urgency given (JOB_*). */
static int seg_build_as(grape_gc_t* c, seg_t* seg, const grape_region_t* r, uint32_t from,
                        void* ctx, const void* layout, uint32_t gen, int pin, int urgency) {
  if (!c->cfg.async_builds) {
    int err;
    uint64_t t0 = grape__gc_now(c);
    exec_t* e = exec_make(&c->drv, c->policy, r, from, seg->n, seg->timer, layout, &err);
    if (e != NULL && t0 != 0)
      grape_gc_cost_sample(c, GRAPE_GC_COST_BUILD_NODE, (double)(grape__gc_now(c) - t0), seg->n);
    if (e == NULL) {
      if (err != 0) {
        c->st.build_failures++;
        seg->failed = 1;
        grape__gc_note(c, &c->noted_build, "a graph could not be built; its path runs eagerly from now on");
        return -EINVAL;
      }
      return -ENOMEM;
    }
    c->built_now = 1;
    e->gen = gen;
    e->pinned = pin;
    return exec_add(c, seg, e) == 0 ? 0 : -ENOMEM;
  }
  job_t* j = calloc(1, sizeof(*j));
  if (j == NULL || (layout != NULL && (j->layout = c->policy->layout_copy(layout)) == NULL)) {
    free(j);
    return -ENOMEM;
  }
  j->gen = gen;
  j->pin = pin;
  j->urgency = urgency;
  atomic_fetch_add_explicit(&c->queued_async, 1, memory_order_relaxed);
  for (uint32_t i = 0; i < seg->n; i++) {
    uint32_t at = from + i;
    size_t bytes = (at + 1 < r->ops.n ? r->ops.poff[at + 1] : r->ops.plen) - r->ops.poff[at];
    if (grape__region_reserve(&j->region, bytes) != 0) {
      grape__region_free(&j->region);
      if (j->layout != NULL)
        c->policy->layout_free(j->layout);
      free(j);
      return -ENOMEM;
    }
    grape__region_push(&j->region, &r->ops.keys[at], &r->ops.dims[at], r->ops.fns[at], r->ops.params + r->ops.poff[at],
                       bytes);
  }
  j->seg = seg;
  j->ctx = ctx;
  seg->queued++;
  /* Queued in order; the builder takes the most urgent first
   * (job_most_urgent): a key still running eagerly gains more from its
   * first graph than a replaying key from another layout or set. */
  job_queue(c, j);
  return 0;
}

int grape__gc_seg_build(grape_gc_t* c, seg_t* seg, const grape_region_t* r, uint32_t from,
                        void* ctx, const void* layout, uint32_t gen) {
  return seg_build_as(c, seg, r, from, ctx, layout, gen, 0, JOB_LAYOUT);
}

/* A build of seg queued already becomes as urgent as `urgency` from now
 * (the program's clock) on. */
static void seg_hasten(grape_gc_t* c, const seg_t* seg, int urgency) {
  uint64_t now = grape__gc_now(c);
  for (job_t* j = c->jobs; j != NULL; j = j->next)
    if (j->seg == seg && j->urgency > urgency && j->hastened[urgency] == 0)
      j->hastened[urgency] = now > 0 ? now : 1;
}

/* The builder waits (under the lock) until the program's clock reaches
 * `start`, or the cache stops. Deterministic mode: until a region's end
 * reports that moment (prog_now), so that a build never starts in the past
 * of what the program does; else the clock itself, in real time. */
static void builder_wait(grape_gc_t* c, uint64_t start) {
  if (c->cfg.deterministic) {
    while (!c->stopping && c->prog_now < start) {
      c->builder_wait_until = start;
      pthread_cond_broadcast(&c->built);   /* a program thread waiting for it may go on */
      pthread_cond_wait(&c->built, &c->lock);
    }
    c->builder_wait_until = 0;
    return;
  }
  for (uint64_t now = grape__gc_now(c); !c->stopping && now < start; now = grape__gc_now(c)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + (start - now);
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(&c->built, &c->lock, &ts);
  }
}

/* The builder's driver calls begin (on = 1) or end (cfg.driver_work). */
static void driver_work(grape_gc_t* c, int on) {
  if (c->cfg.driver_work != NULL)
    c->cfg.driver_work(on);
}

/* A segment that is neither installed nor staged nor being built goes. */
static void seg_maybe_free(grape_gc_t* c, seg_t* seg) {
  if (!seg->installed && seg->queued == 0 && seg->stagers == 0)
    grape__gc_seg_free(c, seg, GRAPE_GC_RETIRE);
}

int grape_gc_build_pending(grape_gc_t* c) {
  pthread_mutex_lock(&c->lock);
  job_t* j = c->jobs;
  if (j == NULL) {
    pthread_mutex_unlock(&c->lock);
    return 0;
  }
  c->jobs = j->next;   /* taken before any wait: no other thread takes it too */
  if (c->jobs == NULL)
    c->jobs_tail = NULL;
  c->building++;
  uint64_t start = j->t_queued > c->builder_clock ? j->t_queued : c->builder_clock;
  for (;;) {
    uint64_t gate = build_gate(c, j);
    if (gate > start)
      start = gate;
    builder_wait(c, start);
    job_t* best = job_most_urgent(c, j, start);
    if (best == j || build_gate(c, best) <= start) {
      j = best;
      break;
    }
    j = best;   /* more urgent, and due later: waited for in its turn */
  }
  c->building_from = start;
  int stopping = c->stopping;
  pthread_mutex_unlock(&c->lock);
  if (j->retire != NULL) {
    /* At exit the driver frees it with its context (as every executable). */
    if (!stopping && c->cfg.handoff != NULL)
      c->cfg.handoff(start);
    driver_work(c, 1);
    exec_free(&c->drv, j->retire, !stopping);
    driver_work(c, 0);
    pthread_mutex_lock(&c->lock);
    if (!stopping)
      c->builder_clock = grape__gc_now(c);
    c->building--;
    pthread_cond_broadcast(&c->built);
    pthread_mutex_unlock(&c->lock);
    free(j);
    return 1;
  }
  exec_t* e = NULL;
  int err = 0, sampled = 0;
  if (!stopping) {
    driver_work(c, 1);
    if (c->drv.bind != NULL)
      c->drv.bind(c->drv.self, j->ctx);
    if (c->cfg.handoff != NULL)
      c->cfg.handoff(start);
    uint64_t t0 = grape__gc_now(c);
    e = exec_make(&c->drv, c->policy, &j->region, 0, j->seg->n, j->seg->timer, j->layout, &err);
    driver_work(c, 0);
    if (e != NULL) {
      e->ready_at = grape__gc_now(c);
      e->gen = j->gen;
      e->pinned = j->pin;
      if ((sampled = t0 != 0))
        grape_gc_cost_sample(c, GRAPE_GC_COST_BUILD_NODE, (double)(e->ready_at - t0), j->seg->n);
    }
  }
  pthread_mutex_lock(&c->lock);
  if (e != NULL)
    c->builder_clock = e->ready_at;
  if (sampled && c->cfg.deterministic)
    grape__gc_build_seen(c, e->ready_at);
  seg_t* seg = j->seg;
  seg->queued--;
  c->building--;
  if (e != NULL && e->gen != 0 && c->policy->layout(seg, e->gen) == NULL) {
    exec_free(&c->drv, e, 1);   /* a layout given up while it was built */
  } else if (e != NULL) {
    if (exec_add(c, seg, e) == 0)
      c->st.builds_async++;
  } else if (err != 0 && j->layout != NULL) {
    /* A layout that cannot be built: the chain stays (the policy gives it up). */
  } else if (err != 0) {
    c->st.build_failures++;
    seg->failed = 1;
    grape__gc_note(c, &c->noted_build, "a graph could not be built; its path runs eagerly from now on");
  }
  if (!seg->installed)
    seg_maybe_free(c, seg);
  pthread_cond_broadcast(&c->built);
  pthread_mutex_unlock(&c->lock);
  grape__region_free(&j->region);
  if (j->layout != NULL)
    c->policy->layout_free(j->layout);
  free(j);
  return 1;
}

/* Deterministic mode: waits in real time until every build the builder
 * may begin by simulated time t has ended (its next start is at least the
 * one under way, or its last end), so that what the program does next is as
 * if the builder had kept pace in simulated time. Under the lock. */
static void builder_catch_up(grape_gc_t* c, uint64_t t) {
  if (!c->cfg.deterministic || !c->cfg.async_builds)
    return;
  while (!c->stopping && (c->jobs != NULL || c->building) && grape__gc_builder_at_or_before(c, t) &&
         (c->building ? c->building_from : c->builder_clock) < t) {
    c->st.build_waits++;
    pthread_cond_wait(&c->built, &c->lock);
  }
}

double grape__gc_build_ns(grape_gc_t* c, uint32_t n) {
  if (c->cfg.deterministic && c->cfg.async_builds) {
    /* The builds that may end by now have, before the estimate is read. */
    uint64_t t = grape__gc_now(c);
    grape__gc_progress(c, t);
    builder_catch_up(c, t);
  }
  return grape__gc_build_ns_now(c, n);
}

void grape_gc_settle(grape_gc_t* c) {
  pthread_mutex_lock(&c->lock);
  /* The builds begun by the program's last report of its progress, as at
   * exit (grape_gc_stop): a later one has not begun in simulated time. */
  builder_catch_up(c, c->prog_now);
  pthread_mutex_unlock(&c->lock);
}

void grape__gc_progress(grape_gc_t* c, uint64_t t) {
  if (t > c->prog_now) {
    c->prog_now = t;
    if (c->builder_wait_until != 0 && c->builder_wait_until <= t)
      pthread_cond_broadcast(&c->built);
  }
}

int grape__gc_seg_ready(grape_gc_t* c, seg_t* seg) {
  uint64_t t = grape__gc_now(c);
  if (c->cfg.deterministic) {
    /* Wait for the builder in real time, unless in simulated time it cannot
     * have started this build yet (it waits for a later moment). */
    grape__gc_progress(c, t);
    while (seg->queued > 0 && !c->stopping && grape__gc_builder_at_or_before(c, t)) {
      c->st.build_waits++;
      pthread_cond_wait(&c->built, &c->lock);
    }
  }
  if (seg->failed)
    return 0;
  for (int i = 0; i < seg->nvar; i++)
    if (seg->var[i]->ready_at <= t)
      return 1;
  return 0;
}

/* ---- Replay ---- */

/* True when op i (of the segment) of r, at region op `at`, is what e's node i holds. */
static inline int same_op(const exec_t* e, const grape_region_t* r, uint32_t i, uint32_t at,
                          size_t p0) {
  return e->fns[i] == r->ops.fns[at] &&
         __builtin_memcmp(&e->dims[i], &r->ops.dims[at], sizeof(r->ops.dims[at])) == 0 &&
         memcmp(e->params + (r->ops.poff[at] - p0), r->ops.params + r->ops.poff[at], r->ops.keys[at].param_bytes) == 0;
}

/* Ops of r's held range that executable e holds differently; counting stops
 * past `limit`. The common case (nothing changed) is three passes over
 * contiguous memory. */
static uint32_t exec_diff(const exec_t* e, const grape_region_t* r, uint32_t from, uint32_t n,
                          uint32_t limit) {
  size_t p0 = r->ops.poff[from], p1 = from + n < r->ops.n ? r->ops.poff[from + n] : r->ops.plen;
  if (e->plen == p1 - p0 && memcmp(e->dims, r->ops.dims + from, n * sizeof(*r->ops.dims)) == 0 &&
      memcmp(e->fns, r->ops.fns + from, n * sizeof(*r->ops.fns)) == 0 &&
      memcmp(e->params, r->ops.params + p0, p1 - p0) == 0)
    return 0;
  uint32_t d = 0;
  for (uint32_t i = 0; i < n && d <= limit; i++)
    d += !same_op(e, r, i, from + i, p0);
  return d;
}

/* The usable executable of seg of layout generation gen (0: the chain) whose
 * nodes differ least from r's ops from `from` on. A recurring set's own
 * executable (pinned) is found by its hash, and is re-bound only when no
 * other executable can be: re-binding it would lose the set it keeps. */
static exec_t* best_variant(const grape_gc_t* c, seg_t* seg, const grape_region_t* r,
                            uint32_t from, uint32_t gen, uint32_t* diff, uint64_t* set) {
  exec_t* best = NULL;
  uint32_t bd = UINT32_MAX;
  uint64_t t = grape__gc_now(c);
  if (gen == 0 && seg->npinned > 0) {
    uint64_t h = seg_set(seg, r, from, set);
    for (int i = 0; i < seg->nvar; i++) {
      exec_t* e = seg->var[i];
      if (e->set == h && e->gen == 0 && e->ready_at <= t && exec_diff(e, r, from, seg->n, 0) == 0) {
        *diff = 0;
        return e;
      }
    }
  }
  for (int pass = seg->npinned > 0 ? 0 : 1; pass < 2 && best == NULL; pass++)
    for (int i = 0; i < seg->nvar && bd > 0; i++) {
      exec_t* e = seg->var[i];
      if (e->ready_at > t || e->gen != gen || (pass == 0 && e->pinned))
        continue;
      uint32_t d = exec_diff(e, r, from, seg->n, bd);
      if (d < bd) {
        bd = d;
        best = e;
      }
    }
  *diff = bd;
  return best;
}

/* A replay of seg must update d nodes for the parameter set of r's held
 * range: true when that set has recurred enough to earn its own executable
 * (and there is room for one). Rent, then buy: once the updates made for it
 * have cost a build, or at its second recurrence when a builder thread
 * builds at no cost to the program (at the first, short runs under slow
 * instantiation ended waiting for such builds: beam's default-profile grid
 * lost 11 more regimes). A set that never recurs (a counter that
 * only grows) never earns one. */
/* Whether seg may keep executables per parameter set at all. */
static int sets_allowed(const grape_gc_t* c, const seg_t* seg) {
  return c->cfg.variants >= 2 && seg->n <= SET_MAX_OPS;   /* (one executable a path asked for) */
}

/* Deterministic mode: the builds of seg that the builder may begin by now
 * in simulated time have ended, however far the OS has run it; a build still
 * queued then begins later. */
static void seg_builds_settle(grape_gc_t* c, seg_t* seg) {
  if (seg->queued > 0 && c->cfg.deterministic)
    (void)grape__gc_seg_ready(c, seg);
}

static int set_earns_graph(grape_gc_t* c, seg_t* seg, const grape_region_t* r, uint32_t from,
                           uint32_t d, uint64_t* set) {
  if (!sets_allowed(c, seg) || seg->nvar >= MAX_VARIANTS)
    return 0;
  seg_builds_settle(c, seg);
  if (seg->queued > 0)
    return 0;   /* one build of it at a time: the builder's first builds go first */
  /* Where the policy lays segments out, its layouts need the builder: a set
   * then earns an executable only once its updates have cost one. */
  int free_build = grape__gc_builds_free(c) && !c->policy->laying_out(c, seg);
  if (seg->sets == NULL && (seg->sets = calloc(SET_SLOTS, sizeof(*seg->sets))) == NULL)
    return 0;
  uint64_t h = seg_set(seg, r, from, set);
  double cost = (double)d * grape__gc_cost(c, GRAPE_GC_COST_UPDATE);
  for (int i = 0; i < SET_SLOTS; i++) {
    set_seen_t* s = &seg->sets[i];
    if (s->set != h)
      continue;
    s->seen++;
    s->spent_ns += cost;
    if (free_build ? s->seen < 3 : s->spent_ns < grape__gc_build_ns(c, seg->n))
      return 0;
    s->set = 0;
    return 1;
  }
  seg->sets[seg->set_next++ % SET_SLOTS] = (set_seen_t){h, 1, cost};
  return 0;
}

/* Updates e's nodes to hold r's held range. @return updates made, or -1 with
 * *drv_err set (e is then unusable). */
static long exec_rebind(grape_gc_t* c, exec_t* e, const grape_region_t* r, uint32_t from,
                        int* drv_err, uint64_t* set) {
  long made = 0;
  size_t p0 = r->ops.poff[from];
  for (uint32_t i = 0; i < e->seg->n; i++) {
    uint32_t at = from + i;
    if (same_op(e, r, i, at, p0))
      continue;
    grape_gc_op_t op = grape__gc_op_view(r, at);
    uint64_t t0 = grape__gc_now(c);
    if ((*drv_err = c->drv.exec_update(c->drv.self, e->exec, e->nodes[i], &op)) != 0)
      return -1;
    if (t0 != 0)
      grape_gc_cost_sample(c, GRAPE_GC_COST_UPDATE, (double)(grape__gc_now(c) - t0), 1);
    e->fns[i] = r->ops.fns[at];
    e->dims[i] = r->ops.dims[at];
    memcpy(e->params + (r->ops.poff[at] - p0), r->ops.params + r->ops.poff[at], r->ops.keys[at].param_bytes);
    made++;
  }
  if (made > 0) {
    e->set = e->seg->n <= SET_MAX_OPS ? seg_set(e->seg, r, from, set) : 0;
    e->seg->npinned -= e->pinned;
    e->pinned = 0;   /* it holds another set now: the next replay's to re-bind */
  }
  c->st.node_updates += (uint64_t)made;
  c->st.submissions += (uint64_t)made;
  return made;
}

/* The device time of seg's last launch, if it has finished, joins its
 * average. */
static void seg_timer_poll(grape_gc_t* c, seg_t* seg) {
  uint64_t ns;
  if (!seg->timed || c->drv.timer_read(c->drv.self, seg->timer, &ns) != 0)
    return;
  seg->timed = 0;
  if (seg->timed_shared)
    return;   /* the device also ran the shim's own work: no measure of this layout */
  if (!c->policy->sampled(c, seg, ns))
    return;   /* a layout on trial, not the one replaying now */
  grape__avg_add(&seg->dev_ns, &seg->dev_n, (double)ns, 8);
}

static int key_cuts(grape_gc_t* c, gkey_t* k);

void grape__gc_seg_timers_poll(grape_gc_t* c, gkey_t* k) {
  int m = key_cuts(c, k);
  if (m < 0) {
    for (grape_gc_node_t* x = k->node; x != NULL && x->depth > 0; x = x->parent)
      if (x->seg != NULL && x->seg->timer != NULL)
        seg_timer_poll(c, x->seg);
    return;
  }
  for (int i = m - 1; i >= 0; i--)   /* (the path's order, from its end) */
    if (k->cut_end[i]->seg != NULL && k->cut_end[i]->seg->timer != NULL)
      seg_timer_poll(c, k->cut_end[i]->seg);
}

/* Another executable of seg for r's held range (of layout gen, pinned to
 * its parameter set or not); built inline, it is the one this launch takes
 * (*e, with no updates). */
static void seg_build_variant(grape_gc_t* c, seg_t* seg, const grape_region_t* r, const void* layout,
                              uint32_t gen, int pin, exec_t** e, uint32_t* d) {
  if (seg_build_as(c, seg, r, r->cursor.sub, r->cursor.ctx, layout, gen, pin, JOB_BETTER) == 0 &&
      !c->cfg.async_builds) {
    *e = seg->var[seg->nvar - 1];
    *d = 0;
  }
}

void grape_gc_device_shared(grape_gc_t* c, int on) {
  if (c != NULL)
    atomic_fetch_add_explicit(&c->device_shared, on ? 1 : -1, memory_order_relaxed);
}

__thread uint32_t grape_gc_launch_ops;

int grape__gc_seg_launch(grape_gc_t* c, seg_t* seg, grape_region_t* r, void* stream) {
  uint32_t d;
  if (seg->timer != NULL)
    seg_timer_poll(c, seg);   /* before this launch records the timer again */
  uint32_t gen = c->policy->pick(c, seg, r, r->cursor.sub);
  uint64_t set = 0;   /* the held range's parameter set, once hashed */
  exec_t* e = best_variant(c, seg, r, r->cursor.sub, gen, &d, &set);
  if (e == NULL && gen != 0)
    e = best_variant(c, seg, r, r->cursor.sub, gen = 0, &d, &set);
  if (e == NULL)
    return -1;
  /* Far from every variant: another one, while there is room, keeps the
   * others for the parameter sets they hold (ping-pong buffers, batch
   * sizes). Inline, it is built once the updates of far replays have cost
   * three builds (rent, then buy), up to FREE_VARIANTS (each stalls the
   * program); by the builder, the first FREE_VARIANTS at once, and each
   * further one once far replays have spent one build on updates: a
   * builder's time is not free when it delays other keys' builds, or the
   * exit that waits for a build in progress. */
  int far = d * 2 >= seg->n;
  if (d > 0 && gen == 0 && set_earns_graph(c, seg, r, r->cursor.sub, d, &set)) {
    far = 0;
    seg_build_variant(c, seg, r, NULL, 0, 1, &e, &d);
  }
  if (far) {
    seg->far_ns += (double)d * grape__gc_cost(c, GRAPE_GC_COST_UPDATE);
    int same = 0;   /* variants of the layout that replays */
    for (int i = 0; i < seg->nvar; i++)
      same += seg->var[i]->gen == gen;
    int have = same + seg->queued, free = grape__gc_builds_free(c);
    int cap = free || c->cfg.variants < FREE_VARIANTS ? c->cfg.variants : FREE_VARIANTS;
    double rent = !free ? 3.0 : have < FREE_VARIANTS ? 0.0 : 1.0;
    if (have < cap && seg->far_ns >= rent * grape__gc_build_ns(c, seg->n)) {
      seg->far_ns = 0;
      seg_build_variant(c, seg, r, c->policy->layout(seg, gen), gen, 0, &e, &d);
    }
  }
  int err = 0;
  uint64_t t0 = 0;
  if ((d > 0 && exec_rebind(c, e, r, r->cursor.sub, &err, &set) < 0) ||
      ((t0 = grape__gc_now(c)), (grape_gc_launch_ops = seg->n),
       (err = c->drv.exec_launch(c->drv.self, e->exec, stream)) != 0)) {
    grape__gc_note(c, &c->noted_launch, "a graph update or launch failed; its ops ran eagerly, "
                                        "and its key runs eagerly from now on");
    grape__gc_exec_drop(c, e);
    seg->failed = 1;
    return err ? err : -1;
  }
  if (t0 != 0 && e->ready_at <= t0)   /* (a launch that waited for its build is no sample) */
    grape_gc_cost_sample(c, GRAPE_GC_COST_GRAPH_LAUNCH, (double)(grape__gc_now(c) - t0), 1);
  seg->timed = seg->timer != NULL;
  seg->timed_shared = atomic_load_explicit(&c->device_shared, memory_order_relaxed) > 0;
  c->policy->launched(c, seg, gen);
  lru_touch(c, e);
  seg->launches++;
  r->cursor.updates += d;
  r->cursor.segs++;
  r->cursor.graphed += seg->n;
  c->st.graph_launches++;
  c->st.submissions++;
  return 0;
}

void grape__gc_submit_eager(grape_gc_t* c, const grape_region_t* r, uint32_t from, uint32_t to,
                            void* stream, grape_gc_cause_t cause, int* drv_err) {
  for (uint32_t i = from; i < to; i++) {
    grape_gc_op_t op = grape__gc_op_view(r, i);
    int e = c->drv.submit(c->drv.self, &op, stream);
    if (e != 0 && *drv_err == 0)
      *drv_err = e;
  }
  c->st.eager_ops += to - from;
  c->st.submissions += to - from;
  c->st.flushed[cause] += to - from;
}

/* The chain variant of seg closest to r's ops from `from` (*d: the nodes it
 * differs in), as of now in simulated time: in deterministic mode once the
 * builds that could have ended by now have (the builder's real-time
 * progress decides nothing). */
static exec_t* variant_now(grape_gc_t* c, seg_t* seg, const grape_region_t* r, uint32_t from,
                           uint32_t* d, uint64_t* set) {
  seg_builds_settle(c, seg);
  return best_variant(c, seg, r, from, 0, d, set);
}

long grape__gc_region_diff(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  int m = grape__gc_key_segments(c, k, segs, from, end);
  long total = 0;
  for (int j = 0; j < m; j++) {
    uint32_t d;
    uint64_t set = 0;
    if (segs[j] == NULL || variant_now(c, segs[j], r, from[j], &d, &set) == NULL)
      return -1;
    total += d;
  }
  return m > 0 ? total : -1;
}

void grape__gc_region_sets(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (!c->cfg.graphs || c->stopping)
    return;
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  int m = grape__gc_key_segments(c, k, segs, from, end);
  for (int j = 0; j < m; j++) {
    uint32_t d;
    uint64_t set = 0;
    if (segs[j] == NULL || !sets_allowed(c, segs[j]) ||
        variant_now(c, segs[j], r, from[j], &d, &set) == NULL || segs[j]->failed)
      continue;   /* (failed is read after the wait: the builder may set it) */
    if (d > 0 && set_earns_graph(c, segs[j], r, from[j], d, &set))
      (void)seg_build_as(c, segs[j], r, from[j], k->ctx, NULL, 0, 1, JOB_BETTER);
  }
}

/* ---- Cuts: a key's segments ---- */

/* The trie nodes of k's path, depth 1 .. k->nops, into path[]. */
static void key_nodes(const gkey_t* k, grape_gc_node_t** path) {
  grape_gc_node_t* n = k->node;
  for (uint32_t d = k->nops; d > 0; d--, n = n->parent)
    path[d - 1] = n;
}

/* k's cut nodes (its node's and every node above it with a segment), root
 * first, kept on k until a cut changes. @return how many, or -1. */
static int key_cuts(grape_gc_t* c, gkey_t* k) {
  if (k->cuts_gen == c->cuts_gen && k->cuts_node == k->node)
    return k->ncuts;
  int m = 0;
  for (grape_gc_node_t* n = k->node; n != NULL && n->depth > 0; n = n->parent)
    if (n->seg != NULL || n == k->node)
      m++;
  if (m <= MAX_CUTS) {
    int i = m;
    for (grape_gc_node_t* n = k->node; n != NULL && n->depth > 0; n = n->parent)
      if (n->seg != NULL || n == k->node)
        k->cut_end[--i] = n;
  }
  k->ncuts = m <= MAX_CUTS ? m : -1;
  k->cuts_gen = c->cuts_gen;
  k->cuts_node = k->node;
  return k->ncuts;
}

int grape__gc_key_segments(grape_gc_t* c, gkey_t* k, seg_t** segs, uint32_t* from, grape_gc_node_t** end) {
  int m = key_cuts(c, k);
  uint32_t last = 0;
  for (int i = 0; i < m; i++) {
    end[i] = k->cut_end[i];
    segs[i] = end[i]->seg;
    from[i] = last;
    if (segs[i] != NULL && segs[i]->from != last)
      segs[i] = NULL;   /* stale: made under other cuts */
    last = end[i]->depth;
  }
  return m;
}

/* The staged segment of node `end` starting at `from`, shared by the keys
 * that stage it, or a new one. */
static seg_t* staged_for(grape_gc_t* c, grape_gc_node_t* end, uint32_t from) {
  for (seg_t* s = c->segs; s != NULL; s = s->next)
    if (s->end == end && s->from == from && !s->installed && !s->failed)
      return s;
  return seg_new(c, end, from);
}

int grape__gc_stage(grape_gc_t* c, gkey_t* k, const grape_region_t* r, const uint32_t* cuts,
                    int ncuts) {
  grape_gc_node_t* path[k->nops];
  key_nodes(k, path);
  /* A live key replays under its cuts until these are built; any other
   * runs eagerly until then. */
  int urgency = k->state == K_LIVE ? JOB_BETTER : JOB_NEEDED;
  uint32_t from = 0;
  for (int j = 0; j < ncuts; j++) {
    grape_gc_node_t* end = path[cuts[j] - 1];
    seg_t* cur = end->seg;
    if (cur != NULL && cur->from == from && !cur->failed && (cur->nvar > 0 || cur->queued > 0)) {
      if (cur->nvar == 0)
        seg_hasten(c, cur, urgency);
      from = cuts[j];
      continue;   /* installed and usable (or being rebuilt): reused */
    }
    seg_t* s = cur != NULL && cur->from == from && !cur->failed ? cur : staged_for(c, end, from);
    if (s == NULL)
      return -ENOMEM;
    int already = 0;
    for (int i = 0; i < k->nstaged; i++)
      already |= k->staged[i] == s;
    if (!already) {
      if (k->nstaged == MAX_CUTS)
        return -ENOMEM;
      k->staged[k->nstaged++] = s;
      s->stagers++;
    }
    if (s->nvar == 0 && s->queued == 0 && !s->failed) {
      int rc = seg_build_as(c, s, r, from, k->ctx, NULL, 0, 0, urgency);
      if (rc != 0)
        return rc;
    } else if (s->queued > 0) {
      seg_hasten(c, s, urgency);
    }
    from = cuts[j];
  }
  return 0;
}

/* Node x is a cut no more (its segment is replaced, or merged away). */
static void seg_uninstall(grape_gc_t* c, grape_gc_node_t* x) {
  seg_t* old = x->seg;
  if (old == NULL)
    return;
  __atomic_store_n(&x->seg, NULL, __ATOMIC_RELEASE);
  grape__gc_cuts_changed(c);
  old->installed = 0;
  c->st.segments -= old->nvar > 0;
  seg_maybe_free(c, old);
}

int grape__gc_install_staged(grape_gc_t* c, gkey_t* k) {
  for (int i = 0; i < k->nstaged; i++) {
    if (k->staged[i]->failed)
      return -1;
    if (!grape__gc_seg_ready(c, k->staged[i]))
      return k->staged[i]->nvar == 0 && k->staged[i]->queued == 0 ? -1 : 0;
  }
  for (int i = 0; i < k->nstaged; i++) {
    seg_t* s = k->staged[i];
    s->stagers--;
    if (s->installed)
      continue;
    seg_uninstall(c, s->end);
    s->installed = 1;
    c->st.segments += s->nvar > 0;
    __atomic_store_n(&s->end->seg, s, __ATOMIC_RELEASE);
    grape__gc_cuts_changed(c);
    /* Cuts inside it go, unless another live key ends there (cuts that
     * merged segments). */
    for (grape_gc_node_t* x = s->end->parent; x != NULL && x->depth > s->from; x = x->parent)
      if (x->seg != NULL && x->term == NULL)
        seg_uninstall(c, x);
  }
  k->nstaged = 0;
  return 1;
}

void grape__gc_unstage(grape_gc_t* c, gkey_t* k) {
  int n = k->nstaged;
  k->nstaged = 0;
  for (int i = 0; i < n; i++) {
    k->staged[i]->stagers--;
    seg_maybe_free(c, k->staged[i]);
  }
}

/* The entry points of the graph cache (cache.h, which explains the design):
 * creating and destroying it, and what the shim calls at a cut, a flush, a
 * region's end and a sync. The parts of graphcache/, one job each:
 *   table.c    hash tables of pointers by a 64-bit hash
 *   trie.c     the trie of the keys' op lists, and which keys are live
 *   keys.c     keys and paths, least recently seen out; the staging list
 *   verdict.c  what each key does next (rent or buy, cuts, slower or not),
 *              and the accounting of each region's end behind it
 *   segment.c  segments and their executables: the mechanism
 *   policy.h   the mechanism's door to its layout policy;
 *   conc.c     that policy: concurrency plans (dag.c: DAGs and plans)
 *   cuts.c     where to cut a key into segments (a model)
 *   views.c    the report's view of keys and paths
 *   region.c, fingerprint.c  the ops of an open region and their hashes */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/moving_avg.h"

int grape_gc_create(const grape_gc_config_t* cfg, const grape_gc_driver_t* drv, grape_gc_t** out) {
  grape_gc_t* c = calloc(1, sizeof(*c));
  if (c == NULL)
    return -ENOMEM;
  size_t n = cfg->sz < sizeof(c->cfg) ? cfg->sz : sizeof(c->cfg);
  memcpy(&c->cfg, cfg, n);
  c->cuts_gen = 1;   /* a new key's kept cuts (generation 0) are stale */
  if (c->cfg.variants < 1)
    c->cfg.variants = 1;
  if (c->cfg.variants > MAX_VARIANTS)
    c->cfg.variants = MAX_VARIANTS;
  if (c->cfg.min_ops < 1)
    c->cfg.min_ops = 1;
  if (drv != NULL)
    c->drv = *drv;
  else
    c->cfg.graphs = 0;
  if (c->drv.timer_create == NULL || c->drv.timer_destroy == NULL ||
      c->drv.graph_add_timer == NULL || c->drv.timer_read == NULL)
    c->drv.timer_create = NULL;   /* no timers: no cut changes */
  c->graph_mode = c->cfg.graphs;
  c->policy = &grape__conc_policy;
  grape__list_init(&c->key_lru);
  grape__list_init(&c->path_lru);
  grape__list_init(&c->exec_lru);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->built, NULL);
  grape__gc_costs_init(c);
  uint64_t now = grape__gc_now(c);
  c->t_start = now > c->cfg.run_age_ns ? now - c->cfg.run_age_ns : 0;
  *out = c;
  return 0;
}

void grape_gc_destroy(grape_gc_t* c, int with_driver) {
  if (c == NULL)
    return;
  for (job_t* j = c->jobs; j != NULL;) {
    job_t* next = j->next;
    if (j->retire != NULL)
      grape__gc_exec_free(c, j->retire, with_driver);
    grape__region_free(&j->region);
    if (j->layout != NULL)
      c->policy->layout_free(j->layout);
    free(j);
    j = next;
  }
  while (c->segs != NULL)
    grape__gc_seg_free(c, c->segs, with_driver);
  grape__gc_keys_destroy(c);
  for (size_t i = 0; i < c->nnodes; i++)
    free(c->nodes[i]);
  free(c->nodes);
  free(c->staging);
  grape__conc_destroy(c);
  pthread_cond_destroy(&c->built);
  pthread_mutex_destroy(&c->lock);
  grape__gc_costs_destroy(c);
  free(c);
}

const grape_gc_node_t* grape_gc_root(const grape_gc_t* c) {
  return c->cfg.graphs ? &c->root : NULL;
}

/* The segment r's held ops are exactly, ready to launch, or NULL. */
static seg_t* held_segment(grape_gc_t* c, const grape_region_t* r) {
  if (r->cursor.node == NULL || r->cursor.held <= r->cursor.sub || !c->cfg.graphs)
    return NULL;
  seg_t* s = r->cursor.node->seg;
  if (s == NULL || !s->installed || s->from != r->cursor.sub || s->failed)
    return NULL;
  return grape__gc_seg_ready(c, s) ? s : NULL;
}

/* Launches what r holds as its segment, or submits it op by op (cause).
 * Under the lock. */
static void submit_held(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                        int* drv_err) {
  if (r->cursor.held <= r->cursor.sub)
    return;
  seg_t* s = held_segment(c, r);
  int err = s != NULL ? grape__gc_seg_launch(c, s, r, stream) : -1;
  if (err != 0) {
    if (s != NULL)
      cause = GRAPE_GC_GRAPH_FAILED;
    grape__gc_submit_eager(c, r, r->cursor.sub, r->cursor.held, stream, cause, drv_err);
  }
  r->cursor.sub = r->cursor.held;
}

int grape_gc_cut(grape_gc_t* c, grape_region_t* r, void* stream, int* drv_err) {
  *drv_err = 0;
  pthread_mutex_lock(&c->lock);
  seg_t* s = held_segment(c, r);
  if (s != NULL && grape__gc_seg_launch(c, s, r, stream) == 0) {
    r->cursor.sub = r->cursor.held;
  } else {
    grape__gc_submit_eager(c, r, r->cursor.sub, r->cursor.held, stream,
                           s != NULL ? GRAPE_GC_GRAPH_FAILED : GRAPE_GC_NO_GRAPH, drv_err);
    r->cursor.sub = r->cursor.held;
    r->cursor.node = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  return 0;
}

int grape_gc_flush(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                   int* drv_err) {
  *drv_err = 0;
  if (r->cursor.held > r->cursor.sub) {
    pthread_mutex_lock(&c->lock);
    submit_held(c, r, stream, cause, drv_err);
    pthread_mutex_unlock(&c->lock);
  }
  /* Stored atomically: the owner's launch path peeks at it unlocked
   * (interpose/launch.h, grape__may_hold) while the watchdog flushes. */
  __atomic_store_n(&r->cursor.node, NULL, __ATOMIC_RELAXED);
  return 0;
}

int grape_gc_end(grape_gc_t* c, grape_region_t* r, void* stream, const grape_gc_node_t* restart,
                 int* drv_err) {
  *drv_err = 0;
  int rc = 0;
  if (r->ops.n > 0) {
    pthread_mutex_lock(&c->lock);
    uint64_t t_end = r->timers.t_first ? grape__gc_now(c) : 0;
    if (c->cfg.deterministic)
      grape__gc_progress(c, t_end ? t_end : grape__gc_now(c));
    uint32_t segs = r->cursor.segs, updates = r->cursor.updates;
    submit_held(c, r, stream, GRAPE_GC_NO_GRAPH, drv_err);
    /* The cursor ended on a live key of exactly these ops: no hashing. */
    gkey_t* k = r->cursor.node != NULL && r->cursor.held == r->ops.n ? r->cursor.node->term : NULL;
    if (k != NULL && k->nops != r->ops.n)
      k = NULL;
    rc = grape__gc_account(c, r, k, t_end, segs, updates);
    grape__gc_install_ready(c);
    pthread_mutex_unlock(&c->lock);
  }
  grape__region_clear(r);
  r->cursor.node = restart;
  return rc;
}

void grape_gc_synced(grape_gc_t* c, grape_region_t* r) {
  if (r->ops.n > 0 || r->timers.prev_end == 0 || r->timers.prev_key == NULL || c->cfg.now == NULL)
    return;
  pthread_mutex_lock(&c->lock);
  uint64_t t = grape__gc_now(c);
  gkey_t* k = grape__gc_key_known(c, r->timers.prev_key);
  if (k != NULL && t >= r->timers.prev_end) {
    double tail = (double)(t - r->timers.prev_end);
    grape__avg_add(&k->tail_ns, &k->tail_n, tail, 8);
  }
  r->timers.prev_end = 0;
  pthread_mutex_unlock(&c->lock);
}

void grape_gc_drop_graphs(grape_gc_t* c) {
  pthread_mutex_lock(&c->lock);
  for (grape_list_t* q = grape__list_first(&c->key_lru); q != &c->key_lru; q = q->next) {
    gkey_t* k = GRAPE_LIST_DATA(q, gkey_t, lru);
    grape__gc_unstage(c, k);
    if (k->state == K_LIVE || k->state == K_NOPAY || k->state == K_SLOWER ||
        k->state == K_BUILDING)
      grape__gc_make_dead(k, K_WARM);   /* rebuilt when it recurs */
  }
  for (size_t i = 0; i < c->staging_cap; i++)
    c->staging[i] = NULL;
  for (seg_t* s = c->segs; s != NULL;) {
    seg_t* next = s->next;
    if (s->installed) {
      __atomic_store_n(&s->end->seg, NULL, __ATOMIC_RELEASE);
      grape__gc_cuts_changed(c);
      s->installed = 0;
    }
    if (s->queued == 0)
      grape__gc_seg_free(c, s, 1);
    s = next;
  }
  c->st.segments = 0;
  pthread_mutex_unlock(&c->lock);
}

static int ptr_order(const void* a, const void* b) {
  uintptr_t x = (uintptr_t) * (void* const*)a, y = (uintptr_t) * (void* const*)b;
  return x < y ? -1 : x > y;
}

void grape_gc_drop_functions(grape_gc_t* c, void* const* fns, size_t n) {
  void** sorted = n ? malloc(n * sizeof(*sorted)) : NULL;
  pthread_mutex_lock(&c->lock);
  if (sorted != NULL) {
    memcpy(sorted, fns, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), ptr_order);
  }
  for (grape_list_t* q = grape__list_first(&c->exec_lru); q != &c->exec_lru;) {
    grape_list_t* next = q->next;
    exec_t* e = GRAPE_LIST_DATA(q, exec_t, lru);
    int uses = 0;
    for (uint32_t j = 0; j < e->seg->n && !uses; j++)
      uses = e->fns[j] != NULL &&
             (sorted != NULL ? bsearch(&e->fns[j], sorted, n, sizeof(*sorted), ptr_order) != NULL
                             : n > 0);   /* out of memory: drop every executable */
    if (uses)
      grape__gc_exec_drop(c, e);
    q = next;
  }
  pthread_mutex_unlock(&c->lock);
  free(sorted);
}

void grape_gc_stop(grape_gc_t* c) {
  uint64_t t0 = grape__gc_now(c);
  pthread_mutex_lock(&c->lock);
  if (c->cfg.deterministic && c->cfg.async_builds) {
    /* The builds begun by the program's last report of its progress (the
     * builder starts none before: grape__gc_progress) end first, and only
     * they, however far the OS has run the builder: else the run's end
     * would depend on whether the builder had taken its next job yet. */
    uint64_t t = c->prog_now;
    while ((c->jobs != NULL || c->building) && grape__gc_builder_at_or_before(c, t))
      pthread_cond_wait(&c->built, &c->lock);
  }
  c->cfg.graphs = 0;
  c->stopping = 1;
  pthread_cond_broadcast(&c->built);
  pthread_mutex_unlock(&c->lock);
  /* Queued builds are dropped by the builder as it takes them; one in
   * progress ends first. */
  while (grape_gc_build_pending(c))
    ;
  pthread_mutex_lock(&c->lock);
  while (c->building)
    pthread_cond_wait(&c->built, &c->lock);
  /* What the exit waited for: on the sim the program's clock does not move
   * while it waits, and the builder's own shows how far its builds ran past
   * the program's end (which the run's end includes); elsewhere, the time the
   * waits took. */
  uint64_t end = c->cfg.deterministic ? c->builder_clock : grape__gc_now(c);
  if (c->cfg.deterministic && c->prog_now > t0)
    t0 = c->prog_now;
  c->st.exit_wait_ns = end > t0 ? end - t0 : 0;
  pthread_mutex_unlock(&c->lock);
}


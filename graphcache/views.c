/* The cache as the report sees it: counters, and each path with its key's
 * state in words (grape_gc_each_path, grape_gc_top). Read-only, under the
 * cache's lock. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char* const state_why[] = {
  [K_WARM] = "warming up (its replays have not yet earned what a graph costs to build)",
  [K_BUILDING] = "its graphs are being built",
  [K_LIVE] = "replayed as a graph",
  [K_NOPAY] = "replays cost more than eager launches",
  [K_SLOWER] = "replays measured slower than eager runs (holding its ops cost the GPU its "
               "overlap with the host)",
  [K_SHORT] = "fewer ops than GRAPE_MIN_OPS",
  [K_UNSUPPORTED] = "an op cannot be a graph node",
  [K_FAILED] = "its graph could not be built or launched",
};

void grape_gc_stats(grape_gc_t* c, grape_gc_stats_t* st) {
  pthread_mutex_lock(&c->lock);
  *st = c->st;
  grape__gc_ledger_paused(c, st);
  pthread_mutex_unlock(&c->lock);
  st->builds_stall = atomic_load_explicit(&c->builds_stall, memory_order_relaxed);
  for (int k = 0; k < GRAPE_GC_COST__COUNT; k++) {
    st->cost_ns[k] = grape__gc_cost(c, k);
    pthread_mutex_lock(&c->meter[k].mu);
    st->cost_samples[k] = c->meter[k].samples;
    pthread_mutex_unlock(&c->meter[k].mu);
  }
}

/* Why a key ran the way it did, in words (the report). */
static const char* key_why(const grape_gc_t* c, const gkey_t* k) {
  if (!c->graph_mode)
    return "graphs off (observe mode)";
  if (k->hits == 0) {
    if (k->state == K_LIVE)   /* ready after its last run, or every later run left the path */
      return "its graphs are ready, but none of its runs was replayed";
    return k->warmed && k->state == K_WARM ? "its graph was built but never replayed"
                                           : state_why[k->state];
  }
  if (k->state == K_NOPAY)
    return "replayed as a graph until its replays cost more than eager launches";
  if (k->state == K_SLOWER)
    return "replayed as a graph until its replays were measured slower than eager runs";
  if (k->state == K_FAILED)
    return "replayed as a graph until a graph update or launch failed";
  return "replayed as a graph";
}

static grape_gc_path_t path_view(const grape_gc_t* c, const path_t* p) {
  const gkey_t* key = p->key;
  return (grape_gc_path_t){.fp = p->fp, .keyfp = key->fp, .nops = p->nops, .count = p->count,
                           .keys = key->keys, .dims = p->dims, .params = p->params,
                           .poff = p->poff, .stamp = p->stamp, .hits = p->hits,
                           .key_hits = key->hits,
                           .key_seen = key->seen, .key_built = key->warmed,
                           .key_segments = key->state == K_LIVE ? key->nsegs : 0,
                           .way = key->hits ? GRAPE_GC_WAY_GRAPH : GRAPE_GC_WAY_EAGER,
                           .why = key_why(c, key), .conc = p->conc,
                           .plan = grape__conc_key_plan(c, key)};
}

size_t grape_gc_each_path(grape_gc_t* c, void (*fn)(const grape_gc_path_t* p, void* arg), void* arg) {
  size_t n = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->paths.cap; i++)
    if (c->paths.v[i] != NULL) {
      grape_gc_path_t v = path_view(c, c->paths.v[i]);
      fn(&v, arg);
      n++;
    }
  pthread_mutex_unlock(&c->lock);
  return n;
}

int grape_gc_path_order(const void* a, const void* b) {
  const grape_gc_path_t* x = a;
  const grape_gc_path_t* y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return x->fp < y->fp ? -1 : x->fp > y->fp;
}

size_t grape_gc_top(grape_gc_t* c, grape_gc_path_t* top, size_t n) {
  pthread_mutex_lock(&c->lock);
  size_t k = 0, total = c->paths.len;
  grape_gc_path_t* all = n && total ? malloc(total * sizeof(*all)) : NULL;
  for (size_t i = 0; all != NULL && i < c->paths.cap; i++) {
    const path_t* p = c->paths.v[i];
    if (p == NULL)
      continue;
    all[k++] = path_view(c, p);
  }
  if (all != NULL) {
    qsort(all, k, sizeof(*all), grape_gc_path_order);
    if (k > n)
      k = n;
    memcpy(top, all, k * sizeof(*all));
    free(all);
  }
  pthread_mutex_unlock(&c->lock);
  return n ? k : total;
}

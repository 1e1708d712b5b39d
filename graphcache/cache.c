/* The graph cache (see cache.h for the design): keys, paths, the trie of
 * live keys, accounting and the public entry points. Segments and their
 * executables are in segment.c, where to cut a key in cuts.c.
 *
 * Invariants:
 * - A key is LIVE exactly when every segment of its path (under the cuts
 *   installed now) is installed; then its trie node's `term` points at it and
 *   every node from the root to it counts it in `live`. Every other state has
 *   term NULL and is not counted.
 * - Keys with staged segments are on c's staging list until they install
 *   them, die or go. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/backoff.h"
#include "util/hash_mix.h"
#include "util/moving_avg.h"

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

/* ---- Tables: linear probing, removal by shifting back (no tombstones) ---- */

typedef uint64_t (*hash_of_fn)(const void* e);
static uint64_t key_hash(const void* e) { return ((const gkey_t*)e)->fp; }
static uint64_t path_hash(const void* e) { return ((const path_t*)e)->fp; }

static int table_grow(table_t* t, hash_of_fn h) {
  size_t ncap = t->cap ? t->cap * 2 : 64;
  void** nv = calloc(ncap, sizeof(*nv));
  if (nv == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < t->cap; i++) {
    if (t->v[i] == NULL)
      continue;
    size_t j = (size_t)grape__hash_mix(h(t->v[i])) & (ncap - 1);
    while (nv[j] != NULL)
      j = (j + 1) & (ncap - 1);
    nv[j] = t->v[i];
  }
  free(t->v);
  t->v = nv;
  t->cap = ncap;
  return 0;
}

static void table_remove(table_t* t, const void* e, hash_of_fn h) {
  size_t mask = t->cap - 1, i = (size_t)grape__hash_mix(h(e)) & mask;
  while (t->v[i] != e)
    i = (i + 1) & mask;
  t->v[i] = NULL;
  t->len--;
  /* Entries after the hole that probed past it move back into it. */
  for (size_t j = (i + 1) & mask; t->v[j] != NULL; j = (j + 1) & mask) {
    size_t home = (size_t)grape__hash_mix(h(t->v[j])) & mask;
    if (((j - home) & mask) >= ((j - i) & mask)) {
      t->v[i] = t->v[j];
      t->v[j] = NULL;
      i = j;
    }
  }
}

/* ---- Trie ---- */

static grape_gc_node_t* trie_child(grape_gc_node_t* n, const grape_op_key_t* k) {
  for (grape_gc_node_t* c = n->child; c != NULL; c = c->sibling)
    if (grape__gc_key_eq(&c->key, k))
      return c;
  return NULL;
}

grape_gc_node_t* grape__gc_trie_path(grape_gc_t* c, const gkey_t* k) {
  grape_gc_node_t* n = &c->root;
  for (uint32_t i = 0; i < k->nops; i++) {
    grape_gc_node_t* next = trie_child(n, &k->keys[i]);
    if (next == NULL) {
      next = calloc(1, sizeof(*next));
      grape_gc_node_t** all =
          next ? grape__grow(c->nodes, &c->nodes_cap, c->nnodes + 1, sizeof(*c->nodes), 64) : NULL;
      if (all == NULL) {
        free(next);
        return NULL;
      }
      c->nodes = all;
      all[c->nnodes++] = next;
      next->key = k->keys[i];
      next->parent = n;
      next->depth = n->depth + 1;
      next->sibling = n->child;
      __atomic_store_n(&n->child, next, __ATOMIC_RELEASE);   /* published whole */
    }
    n = next;
  }
  return n;
}

static void trie_count(grape_gc_node_t* n, int delta) {
  for (; n != NULL && n->parent != NULL; n = n->parent)
    __atomic_add_fetch(&n->live, (uint32_t)delta, __ATOMIC_RELAXED);
}

int grape__gc_make_live(grape_gc_t* c, gkey_t* k) {
  if (k->state == K_LIVE)
    return 0;
  if (k->node == NULL && (k->node = grape__gc_trie_path(c, k)) == NULL)
    return -ENOMEM;
  __atomic_store_n(&k->node->term, k, __ATOMIC_RELEASE);
  trie_count(k->node, 1);
  k->state = K_LIVE;
  k->n_graph = 0;
  k->cyc_graph = k->var_graph = 0;
  return 0;
}

void grape__gc_make_dead(gkey_t* k, int state) {
  if (k->state == K_LIVE) {
    __atomic_store_n(&k->node->term, NULL, __ATOMIC_RELEASE);
    trie_count(k->node, -1);
  }
  k->state = state;
}

/* ---- Keys with staged segments ---- */

static void staging_remove(grape_gc_t* c, gkey_t* k);

/* ---- Keys and paths ---- */

static void path_free(grape_gc_t* c, path_t* p) {
  grape__list_remove(&p->in_key);
  table_remove(&c->paths, p, path_hash);
  grape__list_remove(&p->lru);
  free(p->dims);
  free(p->params);
  free(p->poff);
  free(p->conc);
  free(p);
}

static void key_free(grape_gc_t* c, gkey_t* k) {
  grape__gc_make_dead(k, K_WARM);
  grape__gc_unstage(c, k);
  staging_remove(c, k);
  while (!grape__list_empty(&k->paths))
    path_free(c, GRAPE_LIST_DATA(grape__list_first(&k->paths), path_t, in_key));
  table_remove(&c->keys, k, key_hash);
  grape__list_remove(&k->lru);
  free(k->keys);
  free(k->last_dims);
  free(k->last_params);
  free(k);
}

static long max_paths(const grape_gc_t* c) {
  return c->cfg.max_paths > 0 ? c->cfg.max_paths : 1L << 20;
}

static gkey_t* key_find_or_add(grape_gc_t* c, uint64_t fp, const grape_region_t* r) {
  if (c->keys.len * 2 >= c->keys.cap && table_grow(&c->keys, key_hash))
    return NULL;
  size_t mask = c->keys.cap - 1;
  for (size_t i = (size_t)grape__hash_mix(fp) & mask;; i = (i + 1) & mask) {
    gkey_t* k = c->keys.v[i];
    if (k == NULL)
      break;
    if (k->fp == fp && k->nops == r->nops && memcmp(k->keys, r->keys, r->nops * sizeof(*r->keys)) == 0)
      return k;
  }
  /* A new key; the least recently seen goes beyond the bound (never one
   * that is live or being built: its graphs are in use). */
  if ((long)c->keys.len >= max_paths(c))
    for (grape_list_t* q = grape__list_first(&c->key_lru); q != &c->key_lru; q = q->next) {
      gkey_t* o = GRAPE_LIST_DATA(q, gkey_t, lru);
      if (o->state != K_LIVE && o->nstaged == 0) {
        key_free(c, o);
        c->st.keys_evicted++;
        break;
      }
    }
  gkey_t* k = calloc(1, sizeof(*k));
  if (k == NULL || (k->keys = grape__gc_dup(r->keys, r->nops * sizeof(*r->keys))) == NULL) {
    free(k);
    return NULL;
  }
  k->fp = fp;
  k->nops = r->nops;
  grape__list_init(&k->paths);
  size_t i = (size_t)grape__hash_mix(fp) & mask;
  while (c->keys.v[i] != NULL)
    i = (i + 1) & mask;
  c->keys.v[i] = k;
  c->keys.len++;
  c->st.graph_keys++;
  grape__list_insert_tail(&c->key_lru, &k->lru);
  return k;
}

static path_t* path_find_or_add(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  uint64_t fp = grape__fp_path(k->fp, r->dims, r->nops);
  if (c->paths.len * 2 >= c->paths.cap && table_grow(&c->paths, path_hash))
    return NULL;
  size_t mask = c->paths.cap - 1;
  for (size_t i = (size_t)grape__hash_mix(fp) & mask;; i = (i + 1) & mask) {
    path_t* p = c->paths.v[i];
    if (p == NULL)
      break;
    if (p->fp != fp)
      continue;
    if (p->key == k && memcmp(p->dims, r->dims, r->nops * sizeof(*r->dims)) == 0)
      return p;
    c->st.collisions++;   /* equal fingerprints, different ops: kept apart */
  }
  if ((long)c->paths.len >= max_paths(c) && !grape__list_empty(&c->path_lru)) {
    path_free(c, GRAPE_LIST_DATA(grape__list_first(&c->path_lru), path_t, lru));
    c->st.paths_evicted++;
  }
  path_t* p = calloc(1, sizeof(*p));
  if (p == NULL)
    return NULL;
  p->dims = grape__gc_dup(r->dims, r->nops * sizeof(*r->dims));
  p->params = grape__gc_dup(r->params, r->plen);
  p->poff = grape__gc_dup(r->poff, r->nops * sizeof(*r->poff));
  if (p->dims == NULL || p->params == NULL || p->poff == NULL) {
    free(p->dims);
    free(p->params);
    free(p->poff);
    free(p);
    return NULL;
  }
  p->fp = fp;
  p->nops = r->nops;
  p->key = k;
  p->stamp = c->cfg.stamp ? c->cfg.stamp() : 0;
  grape__conc_path(c, p, r);
  grape__list_insert_head(&k->paths, &p->in_key);
  size_t i = (size_t)grape__hash_mix(fp) & mask;
  while (c->paths.v[i] != NULL)
    i = (i + 1) & mask;
  c->paths.v[i] = p;
  c->paths.len++;
  c->st.paths++;
  grape__list_insert_tail(&c->path_lru, &p->lru);
  return p;
}

/* ---- Staging list: keys whose next segments are being built ---- */

static void staging_add(grape_gc_t* c, gkey_t* k) {
  size_t free_at = c->staging_cap;
  for (size_t i = 0; i < c->staging_cap; i++) {
    if (c->staging[i] == k)
      return;
    if (c->staging[i] == NULL && free_at == c->staging_cap)
      free_at = i;
  }
  if (free_at == c->staging_cap) {
    size_t old = c->staging_cap;
    gkey_t** v = grape__grow(c->staging, &c->staging_cap, old + 1, sizeof(*v), 16);
    if (v == NULL)
      return;   /* its own sightings still install it */
    memset(v + old, 0, (c->staging_cap - old) * sizeof(*v));
    c->staging = v;
  }
  c->staging[free_at] = k;
}

static void staging_remove(grape_gc_t* c, gkey_t* k) {
  for (size_t i = 0; i < c->staging_cap; i++)
    if (c->staging[i] == k)
      c->staging[i] = NULL;
}

/* ---- Rent or buy (builds on the program's thread) ---- */

/* Eager cost, in builds, that a key must have run up before a graph is built
 * for it on the program's thread. 1 is the classic rent-or-buy bound (at
 * most twice the best cost); 3 keeps short runs from paying for builds they
 * cannot earn back (measured on the examples, docs/performance.md). */
#define BUILD_CREDIT 3.0

/* True when k's average replay (its segments' launches and its updates)
 * costs no more than an eager submission per op. */
static int pays(const grape_gc_t* c, const gkey_t* k) {
  double launches = k->nsegs ? k->nsegs : 1;
  return launches * c->cfg.graph_launch_ns + k->upd_avg * c->cfg.update_ns <=
         (double)k->nops * c->cfg.launch_ns;
}

/* True when op i of r has the dimensions and parameter bytes of dims[i] and
 * params (laid out as r's). */
static inline int same_dims_params(const grape_op_dims_t* dims, const uint8_t* params,
                                   const grape_region_t* r, uint32_t i) {
  return __builtin_memcmp(&dims[i], &r->dims[i], sizeof(r->dims[i])) == 0 &&
         memcmp(params + r->poff[i], r->params + r->poff[i], r->keys[i].param_bytes) == 0;
}

/* A warm key sighted eagerly: credits what a replay would have saved (one
 * launch per op, against one graph launch and an update per op that differs
 * from the last sighting). */
static void earn_credit(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  uint32_t d = r->nops;
  if (k->last_dims != NULL) {
    d = 0;
    for (uint32_t i = 0; i < r->nops; i++)
      d += !same_dims_params(k->last_dims, k->last_params, r, i);
    memcpy(k->last_dims, r->dims, r->nops * sizeof(*r->dims));
    memcpy(k->last_params, r->params, r->plen);
  } else if ((k->last_dims = grape__gc_dup(r->dims, r->nops * sizeof(*r->dims))) == NULL ||
             (k->last_params = grape__gc_dup(r->params, r->plen)) == NULL) {
    free(k->last_dims);
    k->last_dims = NULL;
  }
  k->credit_ns += (double)r->nops * c->cfg.launch_ns - c->cfg.graph_launch_ns -
                  (double)d * c->cfg.update_ns;
}

/* ---- Cuts ---- */

/* The cuts on k's path that stay whatever k's own cuts: its end, and the ends of
 * other live keys (a key's end is always a cut), into forced. Other cuts may
 * go: a key whose segments then no longer match the cuts is repaired at its
 * next sighting. @return how many, or -1 beyond MAX_CUTS. */
static int forced_cuts(const gkey_t* k, uint32_t* forced) {
  int m = 0;
  for (grape_gc_node_t* x = k->node; x != NULL && x->depth > 0; x = x->parent)
    if (x == k->node || __atomic_load_n(&x->term, __ATOMIC_RELAXED) != NULL) {
      if (m == MAX_CUTS)
        return -1;
      forced[m++] = x->depth;
    }
  for (int i = 0, j = m - 1; i < j; i++, j--) {   /* shallowest first */
    uint32_t t = forced[i];
    forced[i] = forced[j];
    forced[j] = t;
  }
  return m;
}

/* The device time of k before its replays are timed, from its eager runs
 * issued over h_e ns, at least *lo and at most (what cuts assume) the
 * return. Where its stream's syncs measured how long the device ran on
 * after the host (tail), the device ended at h_e + tail: a device-bound key
 * (tail beyond a launch's share of h_e) ran h_e + tail - h_e / n from its
 * first op on; a host-bound one ran tail in its last op and at most that in
 * each other. Without syncs its cycle bounds the same from above (host time
 * between chunks in it), and the device is taken as at most as busy as the
 * host: where holding it whole costs most (the device idles while the host
 * records it); *lo is then 0. */
static double eager_dev(const grape_gc_t* c, const gkey_t* k, double* lo) {
  double h_e = k->host_eager_ns + k->nops * c->cfg.launch_ns;
  *lo = 0;
  if ((k->n_eager < 1 && k->tail_n < 1) || k->nops == 0)
    return h_e;
  int measured = k->tail_n > 0;
  double tail = measured ? k->tail_ns : k->cyc_eager - h_e;
  if (tail > h_e / k->nops) {
    double d = h_e + tail - h_e / k->nops;
    *lo = measured ? d : 0;
    return measured || d < h_e ? d : h_e;
  }
  *lo = measured && tail > 0 ? tail : 0;
  double d = tail > 0 ? tail * k->nops : 0;
  return measured || d < h_e ? d : h_e;
}

/* Stages k's first segments: as many as the cuts other keys need on its
 * path, and where its device time is large enough to be worth starting
 * early, more (its timed replays cut it again). @return as
 * grape__gc_stage, or -EAGAIN: a measured device time says replaying it
 * would not beat launching its ops one by one. */
static int stage_first(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (k->node == NULL && (k->node = grape__gc_trie_path(c, k)) == NULL)
    return -ENOMEM;
  uint32_t forced[MAX_CUTS], cuts[MAX_CUTS];
  int nf = forced_cuts(k, forced);
  if (nf < 0)
    return -EINVAL;
  if (!c->cfg.cuts || !c->cfg.async_builds || k->host_eager_n < 1)
    return grape__gc_stage(c, k, r, forced, nf);
  uint32_t whole = k->nops;
  double lo, dev = eager_dev(c, k, &lo);
  /* Should the device prove idle, each cut only costs a launch: a guess
   * adds no more cuts than keep half of what replaying saves eager launches. */
  double saved = k->nops * c->cfg.launch_ns - nf * c->cfg.graph_launch_ns;
  int extra = c->cfg.graph_launch_ns > 0 && saved > 0 ? (int)(0.5 * saved / c->cfg.graph_launch_ns) : 0;
  grape_cuts_in_t in = {k->nops, &whole, 1, &dev, forced, nf, k->host_eager_ns,
                        c->cfg.graph_launch_ns, nf + (extra < MAX_CUTS ? extra : MAX_CUTS)};
  double f_old, f_new;
  if (lo > 0 && k->deferred == 0) {
    /* Even at the least device time its syncs allow, no faster: put off. */
    double f_lo;
    grape_cuts_in_t least = in;
    least.seg_dev_ns = &lo;
    grape__cuts_best(&least, cuts, &f_old, &f_lo);
    if (f_lo >= 0.99 * grape__cuts_eager_end(k->nops, k->host_eager_ns, c->cfg.launch_ns,
                                             lo + k->nops * c->cfg.gap_ns))
      return -EAGAIN;
  }
  int n = grape__cuts_best(&in, cuts, &f_old, &f_new);
  k->guessed = n > nf;
  c->st.cuts_added += (uint64_t)(n - nf);
  return grape__gc_stage(c, k, r, cuts, n);
}

/* Stages k's segments under the cuts its path has now. */
static int stage_current(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS], cuts[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  int m = grape__gc_key_segments(k, segs, from, end);
  if (m < 0)
    return -EINVAL;
  for (int j = 0; j < m; j++)
    cuts[j] = end[j]->depth;
  return grape__gc_stage(c, k, r, cuts, m);
}

/* After its staged segments are built: k is live (or failed). */
static void try_install(grape_gc_t* c, gkey_t* k) {
  int rc = grape__gc_install_staged(c, k);
  if (rc == 0)
    return;
  staging_remove(c, k);
  if (rc < 0) {
    grape__gc_unstage(c, k);
    grape__gc_make_dead(k, K_FAILED);
    return;
  }
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  int m = grape__gc_key_segments(k, segs, from, end);
  int whole = m > 0;
  for (int j = 0; j < m; j++)
    whole &= segs[j] != NULL && segs[j]->nvar > 0;
  if (!whole) {
    /* Cuts changed under it (another key's cuts): staged anew at its next
     * sighting, with no warm-up. */
    k->warmed = 1;
    if (k->state != K_LIVE)
      grape__gc_make_dead(k, K_WARM);
    return;
  }
  k->nsegs = (uint32_t)m;
  k->warmed = 1;
  k->credit_ns = 0;
  /* First cuts go live; new cuts of a key that stopped paying or was
   * measured slower waits for its re-check. */
  if (k->state == K_BUILDING && grape__gc_make_live(c, k) != 0)
    grape__gc_make_dead(k, K_WARM);
}

/* A warm key of region r's ops gets its graphs, if it may. */
static void maybe_build(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  /* A region without a context is on a stream that is never held: no graph
   * is built for it. */
  if (!c->cfg.graphs || c->stopping || k->state != K_WARM || r->ctx == NULL ||
      (k->seen < (uint64_t)c->cfg.warmup && !k->warmed) || k->seen < k->build_at)
    return;
  /* On the program's thread, a graph is built once eager sightings have
   * cost, beyond what replays would have, BUILD_CREDIT times what building
   * it costs (rent, then buy): a path that stops recurring then wastes one
   * build, at most a third of what it cost eagerly. A builder thread builds
   * at the warm-up: the program does not wait for it. */
  if (!c->cfg.async_builds && grape__gc_build_ns(c, r->nops) > 0 &&
      k->credit_ns < BUILD_CREDIT * grape__gc_build_ns(c, r->nops))
    return;
  if ((long)k->nops < c->cfg.min_ops) {
    k->state = K_SHORT;
    return;
  }
  for (uint32_t i = 0; i < r->nops; i++)
    if (r->keys[i].kind == GRAPE_OP_KERNEL && r->fns[i] == NULL) {
      k->state = K_UNSUPPORTED;
      return;
    }
  k->ctx = r->ctx;
  int rc = stage_first(c, k, r);
  if (rc == -EAGAIN) {
    /* Predicted no faster, from eager runs alone: as a key measured slower,
     * tried again `recheck` sightings later (its timed replays then judge
     * it), so that only keys that keep recurring pay a trial. */
    k->build_at = k->seen + (uint64_t)c->cfg.recheck;
    k->deferred = 1;
    c->st.deferred++;
    return;
  }
  if (rc == -EINVAL) {
    grape__gc_unstage(c, k);
    k->state = K_FAILED;
    return;
  }
  if (rc != 0) {
    grape__gc_unstage(c, k);
    return;
  }
  k->state = K_BUILDING;
  staging_add(c, k);
  if (!c->cfg.async_builds)
    try_install(c, k);
}

static void slower_for_now(grape_gc_t* c, gkey_t* k);

/* A live key whose replays are timed is assessed against the model of
 * cuts.c: cut where the device can run early segments while the host issues
 * later ones, when that is predicted to gain; and not held at all when even
 * its best cuts are predicted no faster than launching its ops one by one
 * (the device's work as long as the host's: holding then only delays it).
 * Assessed at its first timed replays, then every 64 sightings. */
static void assess(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (!c->cfg.cuts || k->nstaged > 0 || k->seen < k->recut_at || k->host_n < 1)
    return;
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS], cuts[MAX_CUTS], out[MAX_CUTS], forced[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  double dev[MAX_CUTS], total = 0;
  grape__gc_seg_timers_poll(c, k);
  int m = grape__gc_key_segments(k, segs, from, end);
  if (m <= 0)
    return;
  for (int j = 0; j < m; j++) {
    if (segs[j] == NULL || segs[j]->timer == NULL || segs[j]->dev_n < 1)
      return;   /* not timed yet */
    dev[j] = segs[j]->dev_ns;
    cuts[j] = end[j]->depth;
    total += dev[j];
  }
  int nf = forced_cuts(k, forced);
  if (nf < 0)
    return;
  k->recut_at = k->seen + (k->cut_looks++ < 2 ? 1 : 64);
  grape_cuts_in_t in = {k->nops, cuts, m, dev, forced, nf, k->host_ns, c->cfg.graph_launch_ns, 0};
  double f_old, f_new;
  int n = grape__cuts_best(&in, out, &f_old, &f_new);
  if (k->host_eager_n > 0 &&
      f_new >= 0.99 * grape__cuts_eager_end(k->nops, k->host_eager_ns, c->cfg.launch_ns,
                                            total + k->nops * c->cfg.gap_ns)) {
    slower_for_now(c, k);
    return;
  }
  double gain = f_old - f_new;
  /* Guessed cuts give way to measured ones at any gain worth a build. */
  int guessed = k->guessed;
  k->guessed = 0;
  if ((n == m && memcmp(out, cuts, (size_t)m * sizeof(*out)) == 0) || gain < 1000 ||
      (!guessed && gain < 0.02 * f_old))
    return;
  /* New cuts mean builds: only where they do not cost the program. */
  if (!c->cfg.async_builds)
    return;
  if (grape__gc_stage(c, k, r, out, n) != 0) {
    grape__gc_unstage(c, k);
    return;
  }
  c->st.cuts_added += n > m ? (uint64_t)(n - m) : 0;
  c->st.recuts++;
  staging_add(c, k);
}

/* ---- Verdicts: replays timed against eager runs ---- */

static void slower_for_now(grape_gc_t* c, gkey_t* k);

#define CYCLE_SAMPLES 8      /* a plain mean of the first, then a moving average */
#define CYCLE_MIN_REPLAYS 3  /* replays timed before a verdict */
#define CYCLE_MARGIN 0.02    /* replays this much slower are slower... */
#define CYCLE_SIGMAS 2.0     /* ...when the difference is this many standard errors */

/* One measured cycle of key k (ns): averaged per way with its variance. A
 * live key whose replays are slower than its eager runs by more than
 * CYCLE_MARGIN, by a difference its samples can tell apart, stops being held
 * until `recheck` << verdicts more sightings. */
static void note_cycle(grape_gc_t* c, gkey_t* k, int replayed, uint64_t ns) {
  double* avg = replayed ? &k->cyc_graph : &k->cyc_eager;
  double* var = replayed ? &k->var_graph : &k->var_eager;
  uint32_t* n = replayed ? &k->n_graph : &k->n_eager;
  ++*n;
  double w = 1.0 / (*n < CYCLE_SAMPLES ? *n : CYCLE_SAMPLES);
  double d = (double)ns - *avg;
  *avg += w * d;
  *var = (1 - w) * (*var + w * d * d);
  if (!replayed || k->state != K_LIVE || k->n_eager < 2 || k->n_graph < CYCLE_MIN_REPLAYS)
    return;
  double ne = k->n_eager < CYCLE_SAMPLES ? k->n_eager : CYCLE_SAMPLES;
  double ng = k->n_graph < CYCLE_SAMPLES ? k->n_graph : CYCLE_SAMPLES;
  double diff = k->cyc_graph - k->cyc_eager;
  double se = sqrt(k->var_graph / ng + k->var_eager / ne);
  if (diff > CYCLE_MARGIN * k->cyc_eager && diff > CYCLE_SIGMAS * se) {
    slower_for_now(c, k);
  } else if (k->n_graph == CYCLE_SAMPLES) {
    k->slower = 0;
  }
}

/* k is not held until `recheck` << verdicts more sightings. */
static void slower_for_now(grape_gc_t* c, gkey_t* k) {
  grape__gc_make_dead(k, K_SLOWER);
  k->recut_at = 0;   /* assessed again at its first replay when tried again */
  k->recheck_at = grape__backoff(k->seen, (uint64_t)c->cfg.recheck, &k->slower);
}

/* A key met before, if it is still in the table (it may have been evicted
 * since). */
static gkey_t* still_known(const grape_gc_t* c, const void* key) {
  const gkey_t* pk = key;
  size_t mask = c->keys.cap - 1;
  for (size_t i = c->keys.cap ? (size_t)grape__hash_mix(pk->fp) & mask : 0; c->keys.cap && c->keys.v[i] != NULL;
       i = (i + 1) & mask)
    if (c->keys.v[i] == pk)
      return c->keys.v[i];
  return NULL;
}

/* The cycle of the chunk before r on its stream ends where r began. */
static void time_cycles(grape_gc_t* c, grape_region_t* r, gkey_t* k, int replayed) {
  if (c->cfg.now == NULL)
    return;
  if (r->t_first == 0) {
    r->prev_key = NULL;   /* an untimed chunk breaks the chain */
    return;
  }
  if (r->prev_key != NULL && !r->prev_skip && r->t_first > r->prev_t) {
    gkey_t* pk = still_known(c, r->prev_key);
    if (pk != NULL)
      note_cycle(c, pk, r->prev_replayed, r->t_first - r->prev_t);
  }
  r->prev_key = k;
  r->prev_replayed = replayed;
  r->prev_t = r->t_first;
  r->prev_skip = 0;
}

/* ---- Accounting ---- */

/* The host time of a replayed region, its graph launches and updates left
 * out (what cuts.c calls host_ns). */
static void note_host(grape_gc_t* c, gkey_t* k, const grape_region_t* r, uint64_t t_end,
                      uint32_t segs, uint32_t updates) {
  if (r->t_first == 0 || t_end <= r->t_first || c->built_now)
    return;   /* (a graph built on the program's thread in it measures the build) */
  double h = (double)(t_end - r->t_first) - segs * c->cfg.graph_launch_ns -
             updates * c->cfg.update_ns;
  if (h < 0)
    h = 0;
  grape__avg_add(&k->host_ns, &k->host_n, h, 8);
}

/* A key that stopped paying, seen again eagerly: would a replay of these ops
 * pay now, against what its executables hold? */
static void recheck(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (k->seen < k->recheck_at)
    return;
  k->recheck_at = k->seen + (uint64_t)c->cfg.recheck;
  long d = grape__gc_region_diff(c, k, r);
  if (d < 0)
    return;
  k->upd_avg += ((double)d - k->upd_avg) / 8;
  if (pays(c, k) && grape__gc_make_live(c, k) != 0)
    grape__gc_make_dead(k, K_NOPAY);
}

static void account_key(grape_gc_t* c, grape_region_t* r, gkey_t* k, int replayed, uint64_t t_end,
                        uint32_t segs, uint32_t updates);

/* Accounts r's chunk (its held ops already launched or submitted). k: its
 * key when known (the cursor ended on it). t_end, segs, updates: the region's
 * end and its launches and updates before the end. Under the lock. */
static int account(grape_gc_t* c, grape_region_t* r, gkey_t* k, uint64_t t_end, uint32_t segs,
                   uint32_t updates) {
  c->st.regions++;
  c->st.ops += r->nops;
  if (k == NULL && (k = key_find_or_add(c, grape__fp_keys(r->keys, r->nops), r)) == NULL)
    return -ENOMEM;
  k->seen++;
  grape__list_move_tail(&c->key_lru, &k->lru);
  path_t* p = path_find_or_add(c, k, r);
  if (p == NULL)
    return -ENOMEM;
  p->count++;
  grape__list_move_tail(&c->path_lru, &p->lru);
  int replayed = r->nops > 0 && r->graphed == r->nops;
  time_cycles(c, r, k, replayed);
  account_key(c, r, k, replayed, t_end, segs, updates);
  r->prev_skip = c->built_now;   /* a cycle that built a graph measures the build */
  r->prev_end = !replayed && r->graphed == 0 && !c->built_now ? t_end : 0;
  c->built_now = 0;
  return 0;
}

static void account_key(grape_gc_t* c, grape_region_t* r, gkey_t* k, int replayed, uint64_t t_end,
                        uint32_t segs, uint32_t updates) {
  if (replayed) {
    c->st.graph_hits++;
    k->hits++;
    k->upd_avg += ((double)r->updates - k->upd_avg) / 8;
    note_host(c, k, r, t_end, segs, updates);
    if (k->state == K_LIVE && !pays(c, k)) {
      grape__gc_make_dead(k, K_NOPAY);
      k->recheck_at = k->seen + (uint64_t)c->cfg.recheck;
    } else if (k->state == K_LIVE) {
      assess(c, k, r);
      grape__conc_assess(c, k, r);
    }
    return;
  }
  if (r->graphed == 0 && r->t_first != 0 && t_end > r->t_first && !c->built_now) {
    /* An eager sighting: the host's own time to issue it, its launches left out. */
    double h = (double)(t_end - r->t_first) - r->nops * c->cfg.launch_ns;
    grape__avg_add(&k->host_eager_ns, &k->host_eager_n, h > 0 ? h : 0, 8);
  }
  switch (k->state) {
  case K_WARM:
    if (!c->cfg.async_builds && c->cfg.graphs)   /* observe mode builds nothing: no credit to keep */
      earn_credit(c, k, r);
    maybe_build(c, k, r);
    break;
  case K_BUILDING:
    try_install(c, k);
    break;
  case K_LIVE: {
    c->st.graph_misses++;
    k->misses++;
    /* A live key not replayed: its region could not be held, or a segment
     * of it went (evicted, failed, replaced under another key's cuts). */
    seg_t* segs_[MAX_CUTS];
    uint32_t from[MAX_CUTS];
    grape_gc_node_t* end[MAX_CUTS];
    int m = grape__gc_key_segments(k, segs_, from, end);
    int whole = m > 0;
    int failed = 0;
    for (int j = 0; j < m; j++) {
      whole &= segs_[j] != NULL && segs_[j]->nvar > 0;
      failed |= segs_[j] != NULL && segs_[j]->failed;
    }
    if (failed) {
      grape__gc_make_dead(k, K_FAILED);
    } else if (!whole && k->nstaged == 0 && !c->stopping) {
      grape__gc_make_dead(k, K_BUILDING);
      k->ctx = r->ctx;
      if (stage_current(c, k, r) == 0) {
        staging_add(c, k);
        if (!c->cfg.async_builds)
          try_install(c, k);
      } else {
        grape__gc_unstage(c, k);
        grape__gc_make_dead(k, K_WARM);
      }
    }
    break;
  }
  case K_NOPAY:
    c->st.graph_misses++, k->misses++;
    recheck(c, k, r);
    break;
  case K_SLOWER:
    c->st.graph_misses++, k->misses++;
    if (k->seen >= k->recheck_at)
      grape__gc_make_live(c, k);
    break;
  default:
    break;
  }
}

/* Keys whose staged segments are ready go live (or switch cuts). */
static void install_ready(grape_gc_t* c) {
  for (size_t i = 0; i < c->staging_cap; i++) {
    gkey_t* k = c->staging[i];
    if (k != NULL && k->nstaged > 0)
      try_install(c, k);
  }
}

/* ---- The public side ---- */

int grape_gc_create(const grape_gc_config_t* cfg, const grape_gc_driver_t* drv, grape_gc_t** out) {
  grape_gc_t* c = calloc(1, sizeof(*c));
  if (c == NULL)
    return -ENOMEM;
  size_t n = cfg->sz < sizeof(c->cfg) ? cfg->sz : sizeof(c->cfg);
  memcpy(&c->cfg, cfg, n);
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
  *out = c;
  return 0;
}

void grape_gc_destroy(grape_gc_t* c, int with_driver) {
  if (c == NULL)
    return;
  for (job_t* j = c->jobs; j != NULL;) {
    job_t* next = j->next;
    grape__region_free(&j->ops);
    if (j->layout != NULL)
      c->policy->layout_free(j->layout);
    free(j);
    j = next;
  }
  while (c->segs != NULL)
    grape__gc_seg_free(c, c->segs, with_driver);
  for (size_t i = 0; i < c->keys.cap; i++) {
    gkey_t* k = c->keys.v[i];
    if (k != NULL) {
      free(k->keys);
      free(k->last_dims);
      free(k->last_params);
      free(k);
    }
  }
  free(c->keys.v);
  for (size_t i = 0; i < c->paths.cap; i++) {
    path_t* p = c->paths.v[i];
    if (p != NULL) {
      free(p->dims);
      free(p->params);
      free(p->poff);
      free(p->conc);
      free(p);
    }
  }
  free(c->paths.v);
  for (size_t i = 0; i < c->nnodes; i++)
    free(c->nodes[i]);
  free(c->nodes);
  free(c->staging);
  grape__conc_destroy(c);
  pthread_cond_destroy(&c->built);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

const grape_gc_node_t* grape_gc_root(const grape_gc_t* c) {
  return c->cfg.graphs ? &c->root : NULL;
}

/* The segment r's held ops are exactly, ready to launch, or NULL. */
static seg_t* held_segment(grape_gc_t* c, const grape_region_t* r) {
  if (r->cur == NULL || r->held <= r->sub || !c->cfg.graphs)
    return NULL;
  seg_t* s = r->cur->seg;
  if (s == NULL || !s->installed || s->from != r->sub || s->failed)
    return NULL;
  return grape__gc_seg_ready(c, s) ? s : NULL;
}

/* Launches what r holds as its segment, or submits it op by op (cause).
 * Under the lock. */
static void submit_held(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                        int* drv_err) {
  if (r->held <= r->sub)
    return;
  seg_t* s = held_segment(c, r);
  int err = s != NULL ? grape__gc_seg_launch(c, s, r, stream) : -1;
  if (err != 0) {
    if (s != NULL)
      cause = GRAPE_GC_GRAPH_FAILED;
    grape__gc_submit_eager(c, r, r->sub, r->held, stream, cause, drv_err);
  }
  r->sub = r->held;
}

int grape_gc_cut(grape_gc_t* c, grape_region_t* r, void* stream, int* drv_err) {
  *drv_err = 0;
  pthread_mutex_lock(&c->lock);
  seg_t* s = held_segment(c, r);
  if (s != NULL && grape__gc_seg_launch(c, s, r, stream) == 0) {
    r->sub = r->held;
  } else {
    grape__gc_submit_eager(c, r, r->sub, r->held, stream,
                           s != NULL ? GRAPE_GC_GRAPH_FAILED : GRAPE_GC_NO_GRAPH, drv_err);
    r->sub = r->held;
    r->cur = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  return 0;
}

int grape_gc_flush(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                   int* drv_err) {
  *drv_err = 0;
  if (r->held > r->sub) {
    pthread_mutex_lock(&c->lock);
    submit_held(c, r, stream, cause, drv_err);
    pthread_mutex_unlock(&c->lock);
  }
  /* Stored atomically: the owner's launch path peeks at it unlocked
   * (interpose/launch.h, grape__may_hold) while the watchdog flushes. */
  __atomic_store_n(&r->cur, NULL, __ATOMIC_RELAXED);
  return 0;
}

int grape_gc_end(grape_gc_t* c, grape_region_t* r, void* stream, const grape_gc_node_t* restart,
                 int* drv_err) {
  *drv_err = 0;
  int rc = 0;
  if (r->nops > 0) {
    pthread_mutex_lock(&c->lock);
    uint64_t t_end = r->t_first ? grape__gc_now(c) : 0;
    if (c->cfg.deterministic)
      grape__gc_progress(c, t_end ? t_end : grape__gc_now(c));
    uint32_t segs = r->segs, updates = r->updates;
    submit_held(c, r, stream, GRAPE_GC_NO_GRAPH, drv_err);
    /* The cursor ended on a live key of exactly these ops: no hashing. */
    gkey_t* k = r->cur != NULL && r->held == r->nops ? r->cur->term : NULL;
    if (k != NULL && k->nops != r->nops)
      k = NULL;
    rc = account(c, r, k, t_end, segs, updates);
    install_ready(c);
    pthread_mutex_unlock(&c->lock);
  }
  grape__region_clear(r);
  r->cur = restart;
  return rc;
}

void grape_gc_synced(grape_gc_t* c, grape_region_t* r) {
  if (r->nops > 0 || r->prev_end == 0 || r->prev_key == NULL || c->cfg.now == NULL)
    return;
  pthread_mutex_lock(&c->lock);
  uint64_t t = grape__gc_now(c);
  gkey_t* k = still_known(c, r->prev_key);
  if (k != NULL && t >= r->prev_end) {
    double tail = (double)(t - r->prev_end);
    grape__avg_add(&k->tail_ns, &k->tail_n, tail, 8);
  }
  r->prev_end = 0;
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
  pthread_mutex_lock(&c->lock);
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
  pthread_mutex_unlock(&c->lock);
}

void grape_gc_stats(grape_gc_t* c, grape_gc_stats_t* st) {
  pthread_mutex_lock(&c->lock);
  *st = c->st;
  pthread_mutex_unlock(&c->lock);
}

/* Why a key ran the way it did, in words (the report). */
static const char* key_why(const grape_gc_t* c, const gkey_t* k) {
  if (!c->graph_mode)
    return "graphs off (observe mode)";
  if (k->hits == 0)
    return k->warmed && k->state == K_WARM ? "its graph was built but never replayed"
                                           : state_why[k->state];
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
                           .poff = p->poff, .stamp = p->stamp, .key_hits = key->hits,
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

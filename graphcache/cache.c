/* The graph cache (see cache.h for the design).
 *
 * Invariants:
 * - A key is LIVE exactly when it has at least one executable; then its trie
 *   node's `term` points at it and every node from the root to it counts it in
 *   `live`. Every other state has term NULL and is not counted.
 * - Trie nodes, keys and paths are freed only by grape_gc_destroy: a launch
 *   path may be reading them without a lock.
 * - Every executable of a key holds in `dims`/`params`/`fns` what its nodes
 *   hold in the driver; updates go to the driver first, then to the copy. */
#include "cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

#define MAX_VARIANTS 16

typedef struct path_s path_t;
typedef struct grape_gc_key_s gkey_t;

typedef struct exec_s {
  void* graph;
  void* exec;
  gkey_t* key;
  void** nodes;                 /* one per op */
  void** fns;                   /* what each node holds now */
  grape_op_dims_t* dims;
  uint8_t* params;              /* laid out as the key's regions are (same poff) */
  size_t plen;
  path_t* path;                 /* the path (with dims) the nodes hold now */
  uint64_t last_use;            /* LRU tick */
  uint64_t bytes;               /* estimated device memory */
} exec_t;

enum key_state_e {
  K_WARM = 0,      /* counted, no graph (yet) */
  K_LIVE,          /* has executables: held and replayed */
  K_NOPAY,         /* has executables, but replays cost more than eager launches */
  K_SLOWER,        /* has executables, but replays were measured slower than eager runs */
  K_SHORT,         /* fewer ops than min_ops */
  K_UNSUPPORTED,   /* an op that cannot be a graph node (function unknown) */
  K_FAILED,        /* its graph could not be built or launched: eager for good */
};

static const char* const state_why[] = {
  [K_WARM] = "warming up (its replays have not yet earned what a graph costs to build)",
  [K_LIVE] = "replayed as a graph",
  [K_NOPAY] = "replays cost more than eager launches",
  [K_SLOWER] = "replays measured slower than eager runs (holding its ops cost the GPU its "
               "overlap with the host)",
  [K_SHORT] = "fewer ops than GRAPE_MIN_OPS",
  [K_UNSUPPORTED] = "an op cannot be a graph node",
  [K_FAILED] = "its graph could not be built or launched",
};

struct grape_gc_key_s {
  uint64_t fp;
  uint32_t nops;
  grape_op_key_t* keys;
  uint64_t seen, hits, misses;
  int state;
  grape_gc_node_t* node;        /* terminal trie node (made when it first goes live) */
  exec_t* var[MAX_VARIANTS];
  int nvar;
  double upd_avg;               /* node updates per replay, moving average */
  double credit_ns;             /* what replays would have saved since the last build */
  grape_op_dims_t* last_dims;   /* warming up: the last sighting's ops (what a replay */
  uint8_t* last_params;         /* would have had to update), NULL until seen */
  double far_ns;                /* spent on updates of replays far from every executable */
  uint64_t recheck_at;          /* K_NOPAY, K_SLOWER: `seen` at which to look again */
  double cyc_eager, cyc_graph;  /* measured cycle (ns), moving averages: eager runs, replays */
  uint32_t n_eager, n_graph;    /* samples in them (n_graph: since the key last went live) */
  uint32_t slower;              /* consecutive "replays were slower" verdicts */
  int warmed;                   /* built once already: later builds need no warmup */
};

struct path_s {
  uint64_t fp;
  uint32_t nops;
  uint64_t count;
  gkey_t* key;
  grape_op_dims_t* dims;
  uint8_t* params;              /* the first sighting's: one representative set */
  uint32_t* poff;
  uint64_t stamp;               /* config.stamp() then */
};

/* Open addressing on a 64-bit hash; entries are pointers (NULL = free). */
typedef struct table_s {
  void** v;
  size_t cap, len;
} table_t;

struct grape_gc_s {
  grape_gc_config_t cfg;
  grape_gc_driver_t drv;
  pthread_mutex_t lock;
  grape_gc_node_t root;
  table_t keys;                 /* gkey_t* by fp */
  table_t paths;                /* path_t* by fp */
  exec_t** execs;               /* every executable cached now */
  size_t nexecs, execs_cap;
  grape_gc_node_t** nodes;      /* every trie node (freed at destroy) */
  size_t nnodes, nodes_cap;
  uint64_t tick;
  grape_gc_stats_t st;
  int noted_build, noted_launch;
  int graph_mode;               /* made with graphs on (grape_gc_stop turns them off at exit) */
  int built_now;                /* a graph was built since the last chunk was accounted */
};

/* ---- Small helpers ---- */

static inline size_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x;
}

static void* dup_bytes(const void* p, size_t n) {
  void* d = malloc(n ? n : 1);
  if (d != NULL && n)
    memcpy(d, p, n);
  return d;
}

static void note(grape_gc_t* c, int* once, const char* msg) {
  if (!*once && c->cfg.note != NULL)
    c->cfg.note(msg);
  *once = 1;
}

/* Ops [i] of region r as the driver sees them. */
static grape_gc_op_t op_view(const grape_region_t* r, uint32_t i) {
  return (grape_gc_op_t){r->keys[i].kind,         r->keys[i].flags,       r->fns[i], &r->dims[i],
                         r->params + r->poff[i], r->keys[i].param_bytes, r->keys[i].attrs_bytes};
}

/* ---- Tables ---- */

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
    size_t j = mix(h(t->v[i])) & (ncap - 1);
    while (nv[j] != NULL)
      j = (j + 1) & (ncap - 1);
    nv[j] = t->v[i];
  }
  free(t->v);
  t->v = nv;
  t->cap = ncap;
  return 0;
}

/* ---- Trie ---- */

static grape_gc_node_t* trie_child(grape_gc_node_t* n, const grape_op_key_t* k) {
  for (grape_gc_node_t* c = n->child; c != NULL; c = c->sibling)
    if (grape__gc_key_eq(&c->key, k))
      return c;
  return NULL;
}

/* The node of key k's op list, created as needed. Under the lock. */
static grape_gc_node_t* trie_path(grape_gc_t* c, const gkey_t* k) {
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

/* Makes k held and replayed (it has an executable). @return 0 or -ENOMEM. */
static int make_live(grape_gc_t* c, gkey_t* k) {
  if (k->state == K_LIVE)
    return 0;
  if (k->node == NULL && (k->node = trie_path(c, k)) == NULL)
    return -ENOMEM;
  __atomic_store_n(&k->node->term, k, __ATOMIC_RELEASE);
  trie_count(k->node, 1);
  k->state = K_LIVE;
  return 0;
}

static void make_dead(gkey_t* k, int state) {
  if (k->state == K_LIVE) {
    __atomic_store_n(&k->node->term, NULL, __ATOMIC_RELEASE);
    trie_count(k->node, -1);
  }
  k->state = state;
}

/* ---- Executables ---- */

static void exec_free(grape_gc_t* c, exec_t* e, int with_driver) {
  if (with_driver) {
    if (e->exec)
      c->drv.exec_destroy(c->drv.self, e->exec);
    if (e->graph)
      c->drv.graph_destroy(c->drv.self, e->graph);
  }
  free(e->nodes);
  free(e->fns);
  free(e->dims);
  free(e->params);
  free(e);
}

/* Removes e from its key and from the cache, destroying it. */
static void exec_drop(grape_gc_t* c, exec_t* e) {
  gkey_t* k = e->key;
  for (int i = 0; i < k->nvar; i++)
    if (k->var[i] == e) {
      k->var[i] = k->var[--k->nvar];
      break;
    }
  for (size_t i = 0; i < c->nexecs; i++)
    if (c->execs[i] == e) {
      c->execs[i] = c->execs[--c->nexecs];
      break;
    }
  c->st.graph_bytes -= e->bytes;
  if (k->nvar == 0 && (k->state == K_LIVE || k->state == K_NOPAY || k->state == K_SLOWER))
    make_dead(k, K_WARM);   /* rebuilt when it recurs */
  exec_free(c, e, 1);
}

/* Evicts least recently used executables (never `keep`) until one more of
 * `bytes` fits the limits. */
static void evict_for(grape_gc_t* c, uint64_t bytes, const exec_t* keep) {
  while (c->nexecs > 0 && ((long)c->nexecs + 1 > c->cfg.max_graphs ||
                           c->st.graph_bytes + bytes > c->cfg.max_bytes)) {
    exec_t* lru = NULL;
    for (size_t i = 0; i < c->nexecs; i++)
      if (c->execs[i] != keep && (lru == NULL || c->execs[i]->last_use < lru->last_use))
        lru = c->execs[i];
    if (lru == NULL)
      return;
    exec_drop(c, lru);
    c->st.graphs_evicted++;
  }
}

/* Builds an executable of key k from region r's ops (a chain in recorded
 * order) and adds it to k, evicting others (never `keep`) to make room.
 * @return it, or NULL (*drv_err: the driver's code; 0 when out of memory or
 * larger than the whole budget). */
static exec_t* exec_build(grape_gc_t* c, gkey_t* k, const grape_region_t* r, const exec_t* keep,
                          int* drv_err) {
  uint32_t n = r->nops;
  uint64_t bytes = (uint64_t)n * GRAPE_GC_NODE_BYTES + r->plen;
  *drv_err = 0;
  evict_for(c, bytes, keep);
  if ((long)c->nexecs + 1 > c->cfg.max_graphs || c->st.graph_bytes + bytes > c->cfg.max_bytes)
    return NULL;   /* a graph larger than the whole budget */
  exec_t* e = calloc(1, sizeof(*e));
  if (e == NULL)
    return NULL;
  e->key = k;
  e->nodes = calloc(n, sizeof(*e->nodes));
  e->fns = dup_bytes(r->fns, n * sizeof(*r->fns));
  e->dims = dup_bytes(r->dims, n * sizeof(*r->dims));
  e->params = dup_bytes(r->params, r->plen);
  e->plen = r->plen;
  e->bytes = bytes;
  if (e->nodes == NULL || e->fns == NULL || e->dims == NULL || e->params == NULL ||
      (*drv_err = c->drv.graph_create(c->drv.self, &e->graph)) != 0)
    goto fail;
  for (uint32_t i = 0; i < n; i++) {
    grape_gc_op_t op = op_view(r, i);
    if ((*drv_err = c->drv.graph_add(c->drv.self, &e->nodes[i], e->graph, i ? e->nodes[i - 1] : NULL,
                                     &op)) != 0)
      goto fail;
  }
  if ((*drv_err = c->drv.graph_instantiate(c->drv.self, &e->exec, e->graph)) != 0)
    goto fail;
  exec_t** execs = grape__grow(c->execs, &c->execs_cap, c->nexecs + 1, sizeof(*c->execs), 64);
  if (execs == NULL)
    goto fail;
  c->execs = execs;
  execs[c->nexecs++] = e;
  k->var[k->nvar++] = e;
  e->last_use = ++c->tick;
  c->st.graph_bytes += bytes;
  c->built_now = 1;
  if (c->st.graph_bytes > c->st.graph_bytes_peak)
    c->st.graph_bytes_peak = c->st.graph_bytes;
  c->st.graphs_built++;
  return e;
fail:
  exec_free(c, e, 1);
  return NULL;
}

/* True when op i of r has the dimensions and parameter bytes of dims[i] and
 * params (laid out as r's, the key's layout). */
static inline int same_dims_params(const grape_op_dims_t* dims, const uint8_t* params,
                                   const grape_region_t* r, uint32_t i) {
  return __builtin_memcmp(&dims[i], &r->dims[i], sizeof(r->dims[i])) == 0 &&
         memcmp(params + r->poff[i], r->params + r->poff[i], r->keys[i].param_bytes) == 0;
}

/* True when op i of r is what e's node i holds. */
static inline int same_op(const exec_t* e, const grape_region_t* r, uint32_t i) {
  return e->fns[i] == r->fns[i] && same_dims_params(e->dims, e->params, r, i);
}

/* True when e holds exactly r's ops: three passes over contiguous memory,
 * the common case of a replay with nothing changed. */
static int exec_same(const exec_t* e, const grape_region_t* r) {
  return e->plen == r->plen && memcmp(e->dims, r->dims, r->nops * sizeof(*r->dims)) == 0 &&
         memcmp(e->fns, r->fns, r->nops * sizeof(*r->fns)) == 0 &&
         memcmp(e->params, r->params, r->plen) == 0;
}

/* Ops of r that executable e holds differently; counting stops past `limit`. */
static uint32_t exec_diff(const exec_t* e, const grape_region_t* r, uint32_t limit) {
  if (exec_same(e, r))
    return 0;
  uint32_t d = 0;
  for (uint32_t i = 0; i < r->nops && d <= limit; i++)
    d += !same_op(e, r, i);
  return d;
}

/* Updates e's nodes to hold r's ops. @return updates made, or -1 with
 * *drv_err set (e is then unusable). */
static long exec_rebind(grape_gc_t* c, exec_t* e, const grape_region_t* r, int* drv_err) {
  long made = 0;
  for (uint32_t i = 0; i < r->nops; i++) {
    if (same_op(e, r, i))
      continue;
    grape_gc_op_t op = op_view(r, i);
    if ((*drv_err = c->drv.exec_update(c->drv.self, e->exec, e->nodes[i], &op)) != 0)
      return -1;
    e->fns[i] = r->fns[i];
    e->dims[i] = r->dims[i];
    memcpy(e->params + r->poff[i], r->params + r->poff[i], r->keys[i].param_bytes);
    made++;
  }
  c->st.node_updates += (uint64_t)made;
  c->st.submissions += (uint64_t)made;
  return made;
}

/* The executable of k whose nodes differ least from r; *diff gets the count. */
static exec_t* best_variant(gkey_t* k, const grape_region_t* r, uint32_t* diff) {
  exec_t* best = NULL;
  uint32_t bd = UINT32_MAX;
  for (int i = 0; i < k->nvar && bd > 0; i++) {
    uint32_t d = exec_diff(k->var[i], r, bd);
    if (d < bd || (d == bd && k->var[i]->last_use > best->last_use)) {
      bd = d;
      best = k->var[i];
    }
  }
  *diff = bd;
  return best;
}

/* Eager cost, in builds, that a key (or a far parameter set) must have run up
 * before a graph is built for it. 1 is the classic rent-or-buy bound (at most
 * twice the best cost); 3 keeps short runs from paying for builds they cannot
 * earn back (measured on the examples, docs/performance.md), at the price of
 * replaying a long run's paths a little later. */
#define BUILD_CREDIT 3.0

/* What building an executable of n ops costs the host: the graph, its nodes
 * and the instantiation (config costs). 0 = builds are free (no credit needed). */
static double build_ns(const grape_gc_t* c, uint32_t n) {
  return c->cfg.build_ns + (double)n * c->cfg.build_node_ns;
}

/* True when one graph launch plus k's average updates costs no more than an
 * eager submission per op. */
static int pays(const grape_gc_t* c, const gkey_t* k) {
  return c->cfg.graph_launch_ns + k->upd_avg * c->cfg.update_ns <= (double)k->nops * c->cfg.launch_ns;
}

static void note_updates(gkey_t* k, uint32_t d) {
  k->upd_avg += ((double)d - k->upd_avg) / 8;
}

/* ---- Submitting ---- */

/* Ops [from, to) of r to the driver one by one; the first error into *drv_err. */
static void submit_eager(grape_gc_t* c, const grape_region_t* r, uint32_t from, uint32_t to,
                         void* stream, grape_gc_cause_t cause, int* drv_err) {
  for (uint32_t i = from; i < to; i++) {
    grape_gc_op_t op = op_view(r, i);
    int e = c->drv.submit(c->drv.self, &op, stream);
    if (e != 0 && *drv_err == 0)
      *drv_err = e;
  }
  c->st.eager_ops += to - from;
  c->st.submissions += to - from;
  c->st.flushed[cause] += to - from;
}

/* Replays the held region r as key k's graph. @return the executable used,
 * or NULL when r went to the driver eagerly instead (failure: *drv_err). */
static exec_t* replay(grape_gc_t* c, gkey_t* k, grape_region_t* r, void* stream, int* drv_err) {
  uint32_t d;
  exec_t* e = best_variant(k, r, &d);
  /* Far from every executable: a new variant, while there is room, keeps the
   * others for the parameter sets they hold (ping-pong buffers, batch sizes).
   * It is built once the updates of far replays have cost what a build costs
   * (rent, then buy): a parameter set that never recurs costs at most one
   * build more than the updates it needed. */
  int far = e != NULL && d * 2 > r->nops;
  if (far)
    k->far_ns += (double)d * c->cfg.update_ns;
  if (e == NULL ||
      (far && k->nvar < c->cfg.variants && k->far_ns >= BUILD_CREDIT * build_ns(c, r->nops))) {
    int err;
    exec_t* fresh = exec_build(c, k, r, e, &err);
    if (fresh != NULL) {
      e = fresh;
      d = 0;
      k->far_ns = 0;
    }
  }
  if (e == NULL) {
    submit_eager(c, r, 0, r->nops, stream, GRAPE_GC_GRAPH_FAILED, drv_err);
    return NULL;
  }
  note_updates(k, d);
  int err = 0;
  if ((d > 0 && exec_rebind(c, e, r, &err) < 0) ||
      (err = c->drv.exec_launch(c->drv.self, e->exec, stream)) != 0) {
    note(c, &c->noted_launch, "a graph update or launch failed; its ops ran eagerly, and its key "
                              "runs eagerly from now on");
    exec_drop(c, e);
    make_dead(k, K_FAILED);
    submit_eager(c, r, 0, r->nops, stream, GRAPE_GC_GRAPH_FAILED, drv_err);
    return NULL;
  }
  e->last_use = ++c->tick;
  c->st.graph_launches++;
  c->st.submissions++;
  c->st.graph_hits++;
  k->hits++;
  return e;
}

/* ---- Accounting ---- */

static gkey_t* key_find_or_add(grape_gc_t* c, uint64_t fp, const grape_region_t* r) {
  if (c->keys.len * 2 >= c->keys.cap && table_grow(&c->keys, key_hash))
    return NULL;
  size_t mask = c->keys.cap - 1;
  for (size_t i = mix(fp) & mask;; i = (i + 1) & mask) {
    gkey_t* k = c->keys.v[i];
    if (k == NULL) {
      k = calloc(1, sizeof(*k));
      if (k == NULL || (k->keys = dup_bytes(r->keys, r->nops * sizeof(*r->keys))) == NULL) {
        free(k);
        return NULL;
      }
      k->fp = fp;
      k->nops = r->nops;
      c->keys.v[i] = k;
      c->keys.len++;
      c->st.graph_keys++;
      return k;
    }
    if (k->fp == fp && k->nops == r->nops && memcmp(k->keys, r->keys, r->nops * sizeof(*r->keys)) == 0)
      return k;
  }
}

static path_t* path_find_or_add(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  uint64_t fp = grape__fp_path(k->fp, r->dims, r->nops);
  if (c->paths.len * 2 >= c->paths.cap && table_grow(&c->paths, path_hash))
    return NULL;
  size_t mask = c->paths.cap - 1;
  size_t i = mix(fp) & mask;
  for (;; i = (i + 1) & mask) {
    path_t* p = c->paths.v[i];
    if (p == NULL)
      break;
    if (p->fp != fp)
      continue;
    if (p->key == k && memcmp(p->dims, r->dims, r->nops * sizeof(*r->dims)) == 0)
      return p;
    c->st.collisions++;   /* equal fingerprints, different ops: kept apart */
  }
  path_t* p = calloc(1, sizeof(*p));
  if (p == NULL)
    return NULL;
  p->dims = dup_bytes(r->dims, r->nops * sizeof(*r->dims));
  p->params = dup_bytes(r->params, r->plen);
  p->poff = dup_bytes(r->poff, r->nops * sizeof(*r->poff));
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
  c->paths.v[i] = p;
  c->paths.len++;
  c->st.paths++;
  return p;
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
  } else if ((k->last_dims = dup_bytes(r->dims, r->nops * sizeof(*r->dims))) == NULL ||
             (k->last_params = dup_bytes(r->params, r->plen)) == NULL) {
    free(k->last_dims);
    k->last_dims = NULL;
  }
  k->credit_ns += (double)r->nops * c->cfg.launch_ns - c->cfg.graph_launch_ns -
                  (double)d * c->cfg.update_ns;
}

/* A warm key of region r's ops gets its first executable, if it may. */
static void maybe_build(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (!c->cfg.graphs || k->state != K_WARM || (k->seen < (uint64_t)c->cfg.warmup && !k->warmed))
    return;
  /* A graph is built once eager sightings have cost, beyond what replays
   * would have, BUILD_CREDIT times what building it costs (rent, then buy):
   * a path that stops recurring then wastes one build, at most a third of
   * what it cost eagerly. */
  if (build_ns(c, r->nops) > 0 && k->credit_ns < BUILD_CREDIT * build_ns(c, r->nops))
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
  int err;
  exec_t* e = exec_build(c, k, r, NULL, &err);
  if (e == NULL) {
    if (err != 0) {
      c->st.build_failures++;
      k->state = K_FAILED;
      note(c, &c->noted_build, "a graph could not be built; its path runs eagerly from now on");
    }
    return;
  }
  k->warmed = 1;
  k->upd_avg = 0;
  k->credit_ns = 0;
  if (make_live(c, k) != 0)
    exec_drop(c, e);
}

/* A key that stopped paying, seen again eagerly: refresh its best executable
 * to this sighting's parameters and see whether replays would pay now. */
static void recheck(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (k->seen < k->recheck_at)
    return;
  k->recheck_at = k->seen + (uint64_t)c->cfg.recheck;
  uint32_t d;
  exec_t* e = best_variant(k, r, &d);
  int err;
  if (e == NULL || exec_rebind(c, e, r, &err) < 0) {
    if (e != NULL)
      exec_drop(c, e);
    return;
  }
  note_updates(k, d);
  if (pays(c, k))
    make_live(c, k);
}

/* Replays timed before a verdict, and the margin by which they must lose. */
#define CYCLE_SAMPLES 8
#define CYCLE_MARGIN 1.05
#define CYCLE_CLEAR_MARGIN 1.20

/* One measured cycle of key k (ns): averaged per way; after CYCLE_SAMPLES
 * replays, a live key whose replays took longer than its eager runs stops
 * being held until `recheck` << verdicts more sightings. */
static void note_cycle(grape_gc_t* c, gkey_t* k, int replayed, uint64_t ns) {
  double* avg = replayed ? &k->cyc_graph : &k->cyc_eager;
  uint32_t* n = replayed ? &k->n_graph : &k->n_eager;
  ++*n;   /* a plain mean of the first samples, then a moving average */
  *avg += ((double)ns - *avg) / (*n < CYCLE_SAMPLES ? *n : CYCLE_SAMPLES);
  if (!replayed || k->state != K_LIVE || k->n_eager < 2)
    return;
  /* Clearly slower after half the samples, or slower at all after them all. */
  double ratio = k->cyc_graph / k->cyc_eager;
  if ((k->n_graph == CYCLE_SAMPLES / 2 && ratio > CYCLE_CLEAR_MARGIN) ||
      (k->n_graph >= CYCLE_SAMPLES && ratio > CYCLE_MARGIN)) {
    make_dead(k, K_SLOWER);
    uint32_t shift = k->slower < 6 ? k->slower : 6;
    k->recheck_at = k->seen + ((uint64_t)c->cfg.recheck << shift);
    k->slower++;
  } else if (k->n_graph == CYCLE_SAMPLES) {
    k->slower = 0;
  }
}

/* A key measured slower, seen again eagerly: live again once its wait is
 * over, to be measured anew. */
static void retry_slower(gkey_t* k, grape_gc_t* c) {
  if (k->seen < k->recheck_at)
    return;
  k->n_graph = 0;
  k->cyc_graph = 0;
  make_live(c, k);
}

/* The cycle of the chunk before r on its stream ends where r began. */
static void time_cycles(grape_gc_t* c, grape_region_t* r, gkey_t* k, int replayed) {
  if (c->cfg.now == NULL)
    return;
  if (r->t_first == 0) {
    r->prev_key = NULL;   /* an untimed chunk breaks the chain */
    return;
  }
  if (r->prev_key != NULL && !r->prev_skip && r->t_first > r->prev_t)
    note_cycle(c, (gkey_t*)r->prev_key, r->prev_replayed, r->t_first - r->prev_t);
  r->prev_key = k;
  r->prev_replayed = replayed;
  r->prev_t = r->t_first;
  r->prev_skip = 0;
}

static int account_key(grape_gc_t* c, grape_region_t* r, gkey_t* k, exec_t* used);

/* Accounts r's chunk (held ops already submitted or replayed with `used`).
 * Under the lock. */
static int account(grape_gc_t* c, grape_region_t* r, gkey_t* k, exec_t* used) {
  int rc = account_key(c, r, k, used);
  /* A cycle in which a graph was built measures the build, not the way. */
  r->prev_skip = c->built_now;
  c->built_now = 0;
  return rc;
}

static int account_key(grape_gc_t* c, grape_region_t* r, gkey_t* k, exec_t* used) {
  c->st.regions++;
  c->st.ops += r->nops;
  if (k == NULL && (k = key_find_or_add(c, grape__fp_keys(r->keys, r->nops), r)) == NULL)
    return -ENOMEM;
  k->seen++;
  /* A replay that changed no launch dimension ran the path its executable
   * held before: no hashing. */
  path_t* p = used != NULL && used->path != NULL &&
                      memcmp(used->path->dims, r->dims, r->nops * sizeof(*r->dims)) == 0
                  ? used->path
                  : path_find_or_add(c, k, r);
  if (p == NULL)
    return -ENOMEM;
  p->count++;
  time_cycles(c, r, k, used != NULL);
  if (used != NULL) {
    used->path = p;
    if (!pays(c, k)) {
      make_dead(k, K_NOPAY);
      k->recheck_at = k->seen + (uint64_t)c->cfg.recheck;
    }
    return 0;
  }
  if (k->state == K_WARM)
    earn_credit(c, k, r);
  if (k->state == K_LIVE)
    c->st.graph_misses++, k->misses++;
  else if (k->state == K_NOPAY)
    c->st.graph_misses++, k->misses++, recheck(c, k, r);
  else if (k->state == K_SLOWER)
    c->st.graph_misses++, k->misses++, retry_slower(k, c);
  else
    maybe_build(c, k, r);
  return 0;
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
  c->graph_mode = c->cfg.graphs;
  pthread_mutex_init(&c->lock, NULL);
  *out = c;
  return 0;
}

void grape_gc_destroy(grape_gc_t* c, int with_driver) {
  if (c == NULL)
    return;
  for (size_t i = 0; i < c->nexecs; i++)
    exec_free(c, c->execs[i], with_driver);
  free(c->execs);
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
      free(p);
    }
  }
  free(c->paths.v);
  for (size_t i = 0; i < c->nnodes; i++)
    free(c->nodes[i]);
  free(c->nodes);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

const grape_gc_node_t* grape_gc_root(const grape_gc_t* c) {
  return c->cfg.graphs ? &c->root : NULL;
}

/* The key with a graph that r's held ops are exactly, or NULL. */
static gkey_t* held_key(const grape_gc_t* c, const grape_region_t* r) {
  if (!c->cfg.graphs || r->cur == NULL || r->held == 0 || r->held != r->nops)
    return NULL;
  gkey_t* k = __atomic_load_n(&r->cur->term, __ATOMIC_ACQUIRE);
  return k != NULL && k->state == K_LIVE && k->nops == r->nops ? k : NULL;
}

/* Ends r's chunk under the lock (see grape_gc_end). */
static int end_locked(grape_gc_t* c, grape_region_t* r, void* stream, int* drv_err) {
  gkey_t* k = NULL;
  exec_t* used = NULL;
  if (r->held > 0) {
    k = held_key(c, r);
    if (k != NULL)
      used = replay(c, k, r, stream, drv_err);
    else
      submit_eager(c, r, 0, r->held, stream, GRAPE_GC_NO_GRAPH, drv_err);
    r->held = 0;
  }
  return account(c, r, k, used);
}

int grape_gc_end(grape_gc_t* c, grape_region_t* r, void* stream, const grape_gc_node_t* restart,
                 int* drv_err) {
  *drv_err = 0;
  int rc = 0;
  if (r->nops > 0) {
    pthread_mutex_lock(&c->lock);
    rc = end_locked(c, r, stream, drv_err);
    pthread_mutex_unlock(&c->lock);
  }
  grape__region_clear(r);
  r->cur = restart;
  return rc;
}

int grape_gc_flush(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                   const grape_gc_node_t* restart, int* drv_err) {
  *drv_err = 0;
  if (r->held == 0) {
    r->cur = NULL;
    return 0;
  }
  pthread_mutex_lock(&c->lock);
  if (held_key(c, r) != NULL) {
    int rc = end_locked(c, r, stream, drv_err);
    pthread_mutex_unlock(&c->lock);
    grape__region_clear(r);
    r->cur = restart;
    if (c->cfg.now != NULL)
      r->t_first = c->cfg.now();   /* the op that diverged starts the next chunk now */
    return rc < 0 ? rc : 1;
  }
  submit_eager(c, r, 0, r->held, stream, cause, drv_err);
  pthread_mutex_unlock(&c->lock);
  r->held = 0;
  r->cur = NULL;
  return 0;
}

void grape_gc_drop_graphs(grape_gc_t* c) {
  pthread_mutex_lock(&c->lock);
  while (c->nexecs > 0)
    exec_drop(c, c->execs[c->nexecs - 1]);
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
  for (size_t i = c->nexecs; i-- > 0;) {
    exec_t* e = c->execs[i];
    int uses = 0;
    for (uint32_t j = 0; j < e->key->nops && !uses; j++)
      uses = e->fns[j] != NULL &&
             (sorted != NULL ? bsearch(&e->fns[j], sorted, n, sizeof(*sorted), ptr_order) != NULL
                             : n > 0);   /* out of memory: drop every executable */
    if (uses)
      exec_drop(c, e);
  }
  pthread_mutex_unlock(&c->lock);
  free(sorted);
}

void grape_gc_stop(grape_gc_t* c) {
  pthread_mutex_lock(&c->lock);
  c->cfg.graphs = 0;
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
  return (grape_gc_path_t){p->fp, key->fp, p->nops, p->count, key->keys, p->dims, p->params,
                           p->poff, p->stamp, key->hits, key->seen, key->warmed,
                           key->hits ? GRAPE_GC_WAY_GRAPH : GRAPE_GC_WAY_EAGER, key_why(c, key)};
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

/* The graph cache: known paths, graph keys and their executable graphs.
 *
 * DESIGN: every region (or chunk of one) that ends is accounted here once:
 * its path (with launch dimensions: what observe mode reports and the
 * predictor needs) and its graph key (without them: what an executable graph
 * serves). A key seen GRAPE_WARMUP times with at least GRAPE_MIN_OPS ops gets
 * an executable graph, built from the ops of the chunk that warmed it: a chain
 * of kernel, memset and memcpy nodes in recorded order.
 *
 * Holding: the keys that have a graph form a trie of op keys. A region whose
 * ops so far follow a path in the trie is held (its ops are kept back from the
 * driver); `grape_gc_step` advances its cursor by one op without a lock (the
 * trie only grows, and a node's children form a list published with release
 * stores). When the region diverges, the held ops are submitted eagerly in
 * order (or, when they are exactly a key, replayed as its graph) and the rest
 * of the chunk runs eagerly; when it ends on a key, the key's graph is
 * replayed: the executable whose held parameters differ least from the
 * region's is chosen among up to GRAPE_VARIANTS, each node that differs
 * (function, launch dimensions or parameter bytes) is updated, and the graph
 * is launched once. Equal keys are confirmed op by op (the trie compares whole
 * op keys; the key table compares key arrays), so a hash collision never
 * launches a wrong graph.
 *
 * Build only where it pays: a key gets its first executable once its eager
 * sightings have cost (one launch per op, against one graph launch) what
 * building one costs, and a further variant once the updates of replays far
 * from every executable (more than half the nodes) have: rent, then buy, so a
 * path or parameter set that stops recurring wastes at most one build.
 *
 * Measured: with a clock (config `now`), each chunk's cycle (from its first op
 * to the first op of the next chunk on its stream: its host work, its
 * submission and the wait for its results) is averaged per key, for eager runs
 * and for replays apart. Holding ops costs the GPU its overlap with the host,
 * which no cost table sees: a key whose replays take longer than its eager
 * runs stops being held, and is tried again later (each verdict doubles the
 * wait).
 *
 * Replay only where it pays: per key, an average of the node updates a replay
 * needed is kept; when one launch plus that many updates costs more than one
 * launch per op (config costs), the key stops being held and runs eagerly,
 * re-checked every `recheck` sightings against what its executables hold.
 *
 * The cache talks to the driver only through the table it is given (so unit
 * tests hand it a fake, and the shim the real driver). Returns are 0 or a
 * negative errno; driver failures come back through `drv_err` (the driver's
 * code), for the shim to report as CUDA would. Thread-safety: one mutex,
 * taken once per region end or flush (never per op); the caller locks the
 * region it passes. */
#ifndef GRAPE_GRAPHCACHE_CACHE_H
#define GRAPE_GRAPHCACHE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "fingerprint.h"
#include "region.h"

/* ---- The driver, as the cache sees it ---- */

/* One op handed to the driver: its kind, function and dimensions, and its
 * parameter block (region.h). */
typedef struct grape_gc_op_s {
  uint32_t kind;                 /* grape_op_kind_t */
  uint32_t flags;                /* GRAPE_SIG_* of its key */
  void* fn;                      /* kernel: CUfunction, or CUkernel with GRAPE_SIG_CUKERNEL */
  const grape_op_dims_t* dims;
  const void* params;
  uint32_t param_bytes;
  uint32_t attrs_bytes;          /* launch attributes, right after the parameters (equal for
                                    equal keys: never updated) */
} grape_gc_op_t;

/* Each returns 0 or the driver's error code. `self` is passed back as given. */
typedef struct grape_gc_driver_s {
  void* self;
  int (*graph_create)(void* self, void** graph);
  int (*graph_add)(void* self, void** node, void* graph, void* after, const grape_gc_op_t* op);
  int (*graph_instantiate)(void* self, void** exec, void* graph);
  int (*graph_destroy)(void* self, void* graph);
  int (*exec_destroy)(void* self, void* exec);
  int (*exec_update)(void* self, void* exec, void* node, const grape_gc_op_t* op);
  int (*exec_launch)(void* self, void* exec, void* stream);
  int (*submit)(void* self, const grape_gc_op_t* op, void* stream);   /* one op, eagerly */
} grape_gc_driver_t;

/* ---- Configuration ---- */

typedef struct grape_gc_config_s {
  size_t sz;                     /* sizeof(grape_gc_config_t) */
  int graphs;                    /* 0: account paths only (observe mode) */
  long warmup;                   /* sightings before a key gets a graph */
  long min_ops;                  /* smallest key worth a graph */
  long variants;                 /* executables per key */
  long max_graphs;               /* executables in all (LRU eviction beyond) */
  uint64_t max_bytes;            /* estimated graph memory in all (LRU eviction beyond) */
  double launch_ns;              /* host cost of one eager submission */
  double graph_launch_ns;        /* of one graph launch */
  double update_ns;              /* of one node update */
  double build_ns;               /* of building an executable: fixed part */
  double build_node_ns;          /* ... and per node (adding it, instantiating it) */
  long recheck;                  /* sightings between re-checks of a key that did not pay */
  uint64_t (*now)(void);         /* a clock in ns: replays are timed against eager runs (the
                                    caller sets a chunk's t_first from it); NULL: not timed */
  void (*note)(const char* msg); /* told once per kind of trouble (a graph that cannot be
                                    built); NULL: silent */
  uint64_t (*stamp)(void);       /* a value kept with each new path (the shim's allocation
                                    epoch, so a trace can tell which allocation a recorded
                                    pointer word named); NULL: 0 */
} grape_gc_config_t;

/* Estimated device memory of an executable graph: per node, plus its parameters. */
#define GRAPE_GC_NODE_BYTES 10240

/* ---- The cache ---- */

typedef struct grape_gc_s grape_gc_t;

/* A trie node: the ops of a known path so far. Read without a lock on the
 * launch path (grape_gc_step); only cache.c writes it. */
typedef struct grape_gc_node_s {
  grape_op_key_t key;                  /* the op that leads here (root: zero) */
  struct grape_gc_node_s* parent;
  struct grape_gc_node_s* child;       /* first child (acquire) */
  struct grape_gc_node_s* sibling;     /* next child of the parent (set before publishing) */
  struct grape_gc_key_s* term;         /* the key ending here, if it has a graph (acquire) */
  uint32_t live;                       /* keys with a graph at or below this node (relaxed) */
  uint32_t depth;
} grape_gc_node_t;

int grape_gc_create(const grape_gc_config_t* cfg, const grape_gc_driver_t* drv, grape_gc_t** out);

/* Frees the cache. with_driver: destroy the executables through the driver
 * (not in a fork child or after the driver has gone). */
void grape_gc_destroy(grape_gc_t* c, int with_driver);

/* Where a region's cursor starts (NULL when the cache builds no graphs). */
const grape_gc_node_t* grape_gc_root(const grape_gc_t* c);

static inline int grape__gc_key_eq(const grape_op_key_t* a, const grape_op_key_t* b) {
  return a->kind == b->kind && a->param_bytes == b->param_bytes && a->func == b->func &&
         a->flags == b->flags && a->attrs == b->attrs && a->attrs_bytes == b->attrs_bytes;
}

/* The child of cur reached by an op with key k on a path that has a graph,
 * or NULL (the region leaves every known path). No lock. */
static inline const grape_gc_node_t* grape_gc_step(const grape_gc_node_t* cur,
                                                   const grape_op_key_t* k) {
  for (const grape_gc_node_t* n = __atomic_load_n(&cur->child, __ATOMIC_ACQUIRE); n != NULL;
       n = n->sibling)
    if (__atomic_load_n(&n->live, __ATOMIC_RELAXED) && grape__gc_key_eq(&n->key, k))
      return n;
  return NULL;
}

/* True when cur ends a key with a graph and no longer known path goes on from
 * it: the region can be replayed now rather than at its end. */
static inline __attribute__((always_inline)) int grape_gc_leaf(const grape_gc_node_t* cur) {
  if (__atomic_load_n(&cur->term, __ATOMIC_ACQUIRE) == NULL)
    return 0;
  for (const grape_gc_node_t* n = __atomic_load_n(&cur->child, __ATOMIC_ACQUIRE); n != NULL;
       n = n->sibling)
    if (__atomic_load_n(&n->live, __ATOMIC_RELAXED))
      return 0;
  return 1;
}

/* Why held ops go to the driver one by one (the report's causes). */
typedef enum grape_gc_cause_e {
  GRAPE_GC_DIVERGENCE = 0,   /* the region left the known path */
  GRAPE_GC_WATCHDOG,         /* held too long */
  GRAPE_GC_INVALID_LAUNCH,   /* a launch outside its function's limits follows */
  GRAPE_GC_NO_GRAPH,         /* the region ended on a prefix that has no graph of its own */
  GRAPE_GC_GRAPH_FAILED,     /* an update or the graph launch failed */
  GRAPE_GC_ORDERING,         /* a call the held ops must precede (a function attribute change) */
  GRAPE_GC_CAUSES
} grape_gc_cause_t;

/* Submits what r holds, now. When the held ops are exactly a key with a graph
 * they are replayed and r's chunk ends there (as grape_gc_end, restarting at
 * `restart`): @return 1. Otherwise they go to the driver one by one in order
 * (counted under `cause`) and the rest of the chunk runs eagerly (r->cur =
 * NULL): @return 0. *drv_err gets the first driver error (0 when none).
 * @return -ENOMEM when out of memory (the ops were submitted). */
int grape_gc_flush(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                   const grape_gc_node_t* restart, int* drv_err);

/* Ends r's chunk: replays or flushes what it holds, accounts its path and
 * key (building the key's graph when it is warm), and clears r for the next
 * chunk with its cursor at `restart` (the root, or NULL where nothing may be
 * held). *drv_err as above. @return 0, or -ENOMEM (r is cleared either way). */
int grape_gc_end(grape_gc_t* c, grape_region_t* r, void* stream, const grape_gc_node_t* restart,
                 int* drv_err);

/* Destroys every executable graph (their functions are being unloaded, or
 * their context destroyed); keys keep their counts and get new graphs when
 * they recur. */
void grape_gc_drop_graphs(grape_gc_t* c);

/* Destroys every executable with a node that launches one of the n driver
 * functions fns (their module is being unloaded: the driver may hand their
 * handle values out again, for other functions). */
void grape_gc_drop_functions(grape_gc_t* c, void* const* fns, size_t n);

/* No graph is built or replayed from now on (process exit): regions are only
 * accounted. Existing executables stay until grape_gc_drop_graphs. */
void grape_gc_stop(grape_gc_t* c);

/* ---- What the report and the trace read ---- */

typedef struct grape_gc_stats_s {
  uint64_t regions, ops, paths, collisions;
  uint64_t graph_keys, graph_hits, graph_misses, graphs_built, graphs_evicted;
  uint64_t build_failures, node_updates, graph_launches, eager_ops, submissions;
  uint64_t flushed[GRAPE_GC_CAUSES];   /* held ops submitted one by one, by cause */
  uint64_t graph_bytes;                /* estimated, of the executables cached now */
  uint64_t graph_bytes_peak;           /* the most graph_bytes has been */
} grape_gc_stats_t;

void grape_gc_stats(grape_gc_t* c, grape_gc_stats_t* st);

/* How a path's key ran (for the report). */
typedef enum grape_gc_way_e {
  GRAPE_GC_WAY_EAGER = 0,   /* never replayed */
  GRAPE_GC_WAY_GRAPH,       /* replayed (graph_hits > 0) */
} grape_gc_way_t;

typedef struct grape_gc_path_s {
  uint64_t fp, keyfp;
  uint32_t nops;
  uint64_t count;                      /* sightings of this path */
  const grape_op_key_t* keys;          /* valid until the cache is destroyed */
  const grape_op_dims_t* dims;
  const uint8_t* params;               /* one representative parameter set */
  const uint32_t* poff;                /* each op's offset into params: its parameter
                                          block (keys[i].param_bytes), then its launch
                                          attributes (keys[i].attrs_bytes) */
  uint64_t stamp;                      /* config.stamp() when the path was first seen */
  uint64_t key_hits;                   /* its key's graph replays (all its paths) */
  uint64_t key_seen;
  int key_built;                       /* its key got an executable graph */
  grape_gc_way_t way;
  const char* why;                     /* why it ran that way, in words */
} grape_gc_path_t;

/* The n most frequent paths (count desc, then fingerprint) into top; n = 0
 * counts them. @return how many were written (or exist). */
size_t grape_gc_top(grape_gc_t* c, grape_gc_path_t* top, size_t n);

/* grape_gc_top's order, as a qsort comparison of two grape_gc_path_t: most
 * frequent first, equal counts by fingerprint. */
int grape_gc_path_order(const void* a, const void* b);

/* Calls fn for every path, in no order, under the cache's lock (fn must not
 * call the cache). @return how many. */
size_t grape_gc_each_path(grape_gc_t* c, void (*fn)(const grape_gc_path_t* p, void* arg), void* arg);

#endif

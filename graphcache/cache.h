/* The graph cache: known paths, graph keys and their executable graphs.
 *
 * DESIGN: every region (or chunk of one) that ends is accounted here once:
 * its path (with launch dimensions: what observe mode reports and the
 * predictor needs) and its graph key (without them: what executable graphs
 * serve). Graph mode and observe mode account the same regions.
 *
 * Segments: a key's ops are replayed as one or more *segments*, each an
 * executable graph of consecutive ops (a chain of kernel, memset and memcpy
 * nodes in recorded order). The keys whose graphs are built form a trie of
 * op keys; a trie node where a segment ends is a *cut* (node->seg), and the
 * segment ending there covers the ops since the nearest cut above it. A key's
 * end is always a cut. A region whose ops so far follow the trie is held (its
 * ops are kept back from the driver); `grape_gc_step` advances its cursor by
 * one op without a lock, and when the held ops reach a cut the segment ending
 * there is launched at once (`grape_gc_cut`): the device starts on the first
 * part of a region while the host is still issuing the rest (pipelined
 * replay). When the region diverges, what is held goes to the driver in order
 * and the rest of the region runs eagerly; at its end, what is held is
 * replayed as the last segment. Each launch re-binds the nodes that differ
 * (function, launch dimensions, parameter bytes) in the executable whose
 * parameters differ least among up to GRAPE_VARIANTS of the segment.
 *
 * Plans: a key starts as one segment. Replays are timed (device time per
 * segment with the driver's timing events, host time per region), and
 * cuts.c chooses cuts that let the device run the earlier segments while the
 * host issues the later ones, when it predicts a gain; cuts are only ever
 * added, so cuts converge. New segments are built first and installed
 * together, so a key's replays never mix two sets of cuts.
 *
 * Builds: with a builder (config async_builds) segments are built by another
 * thread from copies of the ops (grape_gc_build_pending), off the program's
 * critical path, and a key gets its graphs at its GRAPE_WARMUP-th sighting;
 * without one, builds run inline and only once a key's eager sightings have
 * cost, beyond what replays would have, three times what building costs
 * (rent, then buy). In deterministic mode (the simulated device), the
 * program's thread waits in real time for a build it could use and uses it
 * only when its build ended, on the builder's clock, before now: simulated
 * time then never depends on how the OS ran the builder.
 *
 * Measured: with a clock (config `now`), each chunk's cycle (from its first
 * op to the first op of the next chunk on its stream: its host work, its
 * submission and the wait for its results) is averaged per key, for eager
 * runs and for replays apart. A key whose replays take longer than its eager
 * runs stops being held, and is tried again later (each verdict doubles the
 * wait). Per key, an average of the node updates a replay needed is kept;
 * when its graph launches plus that many updates cost more than one launch
 * per op (config costs), the key stops being held, re-checked every
 * `recheck` sightings.
 *
 * Bounded: executables by count and estimated bytes (least recently used out,
 * O(1)); paths and keys by config max_paths (least recently seen out).
 *
 * The cache talks to the driver only through the table it is given (so unit
 * tests hand it a fake, and the shim the real driver). Returns are 0 or a
 * negative errno; driver failures come back through `drv_err` (the driver's
 * code), for the shim to report as CUDA would. Thread-safety: one mutex,
 * taken at cuts and once per region end or flush (never per op); the caller
 * locks the region it passes. */
#ifndef GRAPE_GRAPHCACHE_CACHE_H
#define GRAPE_GRAPHCACHE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "dag.h"
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
/* The ops of the graph being launched, set on the launching thread just
 * before drv.exec_launch (for a driver that records what each launch ran). */
extern __thread uint32_t grape_gc_launch_ops;

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
  /* Optional (NULL: not available). The builder thread makes ctx (a
   * region's `ctx`) the context of the builds that follow. */
  int (*bind)(void* self, void* ctx);
  /* Timers: a pair of timing events a segment's graphs record as their first
   * and last node (`end` 0 and 1), so that every launch is timed on the
   * device at no cost to the host; timer_read gives the device time of the
   * last launch that recorded both (nonzero: not finished yet, or unknown). */
  int (*timer_create)(void* self, void** timer);
  int (*timer_destroy)(void* self, void* timer);
  int (*graph_add_timer)(void* self, void** node, void* graph, void* after, void* timer, int end);
  int (*timer_read)(void* self, void* timer, uint64_t* ns);
  /* Optional (NULL: every graph is a chain). Concurrency plans (conc.c):
   * a node (an op, or a timer's event) after every node of deps[0, ndeps)
   * (none: a root); and the blocks of an op's kernel that fit one SM and
   * the device's SMs (the estimator's occupancy). */
  int (*graph_add_deps)(void* self, void** node, void* graph, void* const* deps, size_t ndeps,
                        const grape_gc_op_t* op);
  int (*graph_add_timer_deps)(void* self, void** node, void* graph, void* const* deps,
                              size_t ndeps, void* timer, int end);
  int (*occupancy)(void* self, const grape_gc_op_t* op, uint32_t* per_sm, uint32_t* sms);
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
  double gap_ns;                 /* device time an eager launch costs beyond a graph node
                                    (the gap graphs save between kernels) */
  long recheck;                  /* sightings between re-checks of a key that did not pay */
  uint64_t (*now)(void);         /* a clock in ns: replays are timed against eager runs (the
                                    caller sets a chunk's t_first from it); NULL: not timed */
  void (*note)(const char* msg); /* told once per kind of trouble (a graph that cannot be
                                    built); NULL: silent */
  uint64_t (*stamp)(void);       /* a value kept with each new path (the shim's allocation
                                    epoch, so a trace can tell which allocation a recorded
                                    pointer word named); NULL: 0 */
  long max_paths;                /* paths (and keys) kept; least recently seen out (0: 1<<20) */
  int async_builds;              /* a builder thread calls grape_gc_build_pending */
  void (*wake)(uint64_t until);  /* told when a build is queued (async_builds), with the
                                    moment (now()) by which the builds queued so far are
                                    estimated done, one after another, each from its earliest
                                    start (config.build_share) */
  void (*handoff)(uint64_t t);   /* called on the builder's thread before a build that was
                                    queued at time t (now()); NULL: nothing */
  void (*driver_work)(int on);   /* called on the builder's thread with 1 before, 0 after the
                                    driver calls of a build or a retirement (bounded work that
                                    may hold the driver's locks); NULL: nothing */
  void (*checked)(uint32_t ops); /* the cache re-checked ops' footprints before a plan's
                                    replay: where the shim's own work is charged to now()'s
                                    clock (the sim), charges it; NULL: now() sees it */
  int deterministic;             /* wait in real time for builds the program could use, and
                                    use them only once built before now() */
  int cuts;                      /* 0: never cut keys into several segments */
  int concurrency;               /* GRAPE_GC_CONC_*: footprints analysed, plans made */
  unsigned costs_fixed;          /* bit GRAPE_GC_COST_*: that cost was set by the user and is
                                    never replaced by what the run measures */
  double shim_op_ns;             /* the caller's own host time per op it records or holds
                                    (what graph mode's savings must cover: ledger.c) */
  double plan_host_share;        /* a concurrency plan whose host cost a launch reaches this
                                    share of what a replay of its segment saves is dropped
                                    (conc.c; 0: the default, 2%; >= 1: never) */
  double build_share;            /* a builder thread's build of estimated cost B starts only
                                    once the process has run B / build_share, so that a run
                                    that ends during it waits at most that share of its
                                    length (segment.c; 0: no such wait) */
  uint64_t run_age_ns;           /* how long the process had run when the cache was made
                                    (0: the run counts from then) */
  double budget_share;           /* where the caller's work per op is dear against a launch,
                                    that work less what replays saved may reach this share of
                                    how long the process has run; past it the caller pauses
                                    (ledger.c; 0: never) */
} grape_gc_config_t;

/* The costs graph mode weighs (config launch_ns ... build_node_ns) that the
 * run measures as it goes (costs.c): each configured value is a first guess,
 * replaced by the measured one once samples come. */
typedef enum grape_gc_cost_e {
  GRAPE_GC_COST_LAUNCH = 0,     /* one eager submission, on the program's thread */
  GRAPE_GC_COST_GRAPH_LAUNCH,   /* one graph launch */
  GRAPE_GC_COST_UPDATE,         /* one node update */
  GRAPE_GC_COST_BUILD_NODE,     /* building an executable, per node (its fixed part spread) */
  GRAPE_GC_COST_SHIM_OP,        /* the caller's own work to record or hold one op */
  GRAPE_GC_COST__COUNT
} grape_gc_cost_t;


/* config.concurrency (GRAPE_CONCURRENCY): off; observe (each new path's DAG
 * summarised for the report, no driver call); safe (segments with
 * independent GEMMs get a concurrent plan where predicted and measured
 * faster: conc.c). */
enum { GRAPE_GC_CONC_OFF = 0, GRAPE_GC_CONC_OBSERVE, GRAPE_GC_CONC_SAFE, GRAPE_GC_CONC_GO };

/* Estimated device memory of an executable graph: per node, plus its parameters. */
#define GRAPE_GC_NODE_BYTES 10240

/* ---- The cache ---- */

typedef struct grape_gc_s grape_gc_t;

/* A measured cost: ns for one (launch, graph launch, update), or for a whole
 * build of n nodes (BUILD_NODE). Any thread; no driver call. */
void grape_gc_cost_sample(grape_gc_t* c, grape_gc_cost_t what, double ns, uint32_t n);

/* A trie node: the ops of a known path so far. Read without a lock on the
 * launch path (grape_gc_step); only trie.c, entry.c and segment.c write it. */
typedef struct grape_gc_node_s {
  grape_op_key_t key;                  /* the op that leads here (root: zero) */
  struct grape_gc_node_s* parent;
  struct grape_gc_node_s* child;       /* first child (acquire) */
  struct grape_gc_node_s* sibling;     /* next child of the parent (set before publishing) */
  struct grape_gc_key_s* term;         /* the live key ending here (acquire; tested, never
                                          followed, without the lock) */
  struct grape_gc_seg_s* seg;          /* the segment ending here: a cut (acquire; tested,
                                          never followed, without the lock) */
  uint32_t live;                       /* live keys at or below this node (relaxed) */
  uint32_t depth;
  uint32_t hint;                       /* the policy's word for the library call whose first op
                                          leads on from here (grape_gc_hint; relaxed, 0: none) */
} grape_gc_node_t;

/* The caller's host time (ns) spent applying n hints (go mode's targets and
 * their re-queried algorithms): what the policy weighs against what its
 * plans gain. Any thread. */
void grape_gc_hint_cost(grape_gc_t* c, double ns, uint32_t n);

/* The device runs work of the caller's own beside the program's from now
 * (on = 1) until the matching on = 0 (counted; go's sampled numerics
 * check): the segments launched in between are not timed, since their
 * device times would hold that work's share of the device too. Any thread. */
void grape_gc_device_shared(grape_gc_t* c, int on);

int grape_gc_create(const grape_gc_config_t* cfg, const grape_gc_driver_t* drv, grape_gc_t** out);

/* Frees the cache. with_driver: destroy the executables through the driver
 * (not in a fork child or after the driver has gone). Call grape_gc_stop
 * first when a builder thread may still be running. */
void grape_gc_destroy(grape_gc_t* c, int with_driver);

/* Where a region's cursor starts (NULL when the cache builds no graphs). */
const grape_gc_node_t* grape_gc_root(const grape_gc_t* c);

/* Keys are equal when their 32 bytes are (no padding): four word compares
 * without a branch each, on the launch path's trie step and phase check
 * (word loads: a whole-struct copy goes through vector registers and the
 * stack). */
static inline __attribute__((always_inline)) int grape__gc_key_eq(const grape_op_key_t* a,
                                                                  const grape_op_key_t* b) {
  const uint8_t* x = (const uint8_t*)a;
  const uint8_t* y = (const uint8_t*)b;
  return ((grape__word(x, 0) ^ grape__word(y, 0)) | (grape__word(x, 1) ^ grape__word(y, 1)) |
          (grape__word(x, 2) ^ grape__word(y, 2)) | (grape__word(x, 3) ^ grape__word(y, 3))) == 0;
}

/* The child of cur reached by an op with key k on a path of a live key, or
 * NULL (the region leaves every known path). No lock. */
static inline const grape_gc_node_t* grape_gc_step(const grape_gc_node_t* cur,
                                                   const grape_op_key_t* k) {
  for (const grape_gc_node_t* n = __atomic_load_n(&cur->child, __ATOMIC_ACQUIRE); n != NULL;
       n = n->sibling)
    if (__atomic_load_n(&n->live, __ATOMIC_RELAXED) && grape__gc_key_eq(&n->key, k))
      return n;
  return NULL;
}

/* True when a segment ends at n: held ops that reach it are launched there. */
static inline __attribute__((always_inline)) int grape_gc_is_cut(const grape_gc_node_t* n) {
  return __atomic_load_n(&n->seg, __ATOMIC_ACQUIRE) != NULL;
}

/* go mode: the SM-count target (> 0) that the policy asks of the library
 * call whose first op would lead on from trie node n (a region's cursor),
 * or 0. No lock: the word is published with a relaxed store, and a stale
 * one only changes a kernel's grid, which the replay then re-binds. */
static inline uint32_t grape_gc_hint(const grape_gc_node_t* n) {
  return n != NULL ? __atomic_load_n(&n->hint, __ATOMIC_RELAXED) : 0;
}

/* Why held ops go to the driver one by one (the report's causes). */
typedef enum grape_gc_cause_e {
  GRAPE_GC_DIVERGENCE = 0,   /* the region left the known path */
  GRAPE_GC_WATCHDOG,         /* held too long */
  GRAPE_GC_INVALID_LAUNCH,   /* a launch outside its function's limits follows */
  GRAPE_GC_NO_GRAPH,         /* the region ended on a prefix that has no graph of its own */
  GRAPE_GC_GRAPH_FAILED,     /* an update or the graph launch failed */
  GRAPE_GC_ORDERING,         /* a call the held ops must precede (a function attribute change) */
  GRAPE_GC_COLLECTIVE,       /* a collective or spin kernel follows (on any stream) */
  GRAPE_GC_CAUSES
} grape_gc_cause_t;

/* The held ops of r reached a cut (r->cur): the segment ending there is
 * launched when it is what r holds since its last launch (r->sub), and r goes
 * on holding; otherwise what r holds goes to the driver one by one and the
 * rest of the chunk runs eagerly (r->cur = NULL). *drv_err gets the first
 * driver error (0 when none). @return 0, or -ENOMEM (the ops were submitted). */
int grape_gc_cut(grape_gc_t* c, grape_region_t* r, void* stream, int* drv_err);

/* Submits what r holds, now, one op at a time in order (counted under cause),
 * or as the segment ending where r is when the held ops are exactly that; the
 * rest of the chunk runs eagerly (r->cur = NULL). *drv_err as above.
 * @return 0 or -ENOMEM. */
int grape_gc_flush(grape_gc_t* c, grape_region_t* r, void* stream, grape_gc_cause_t cause,
                   int* drv_err);

/* r's stream was synchronised, and the sync returned: how long the device
 * still ran after the host ended r's last chunk, if it ran eagerly and no op
 * came since (what a key's first cuts know of its device time). */
void grape_gc_synced(grape_gc_t* c, grape_region_t* r);

/* Ends r's chunk: launches or submits what it holds, accounts its path and
 * key (building, or queueing the builds of, its graphs when it is warm), and
 * clears r for the next chunk with its cursor at `restart` (the root, or NULL
 * where nothing may be held). *drv_err as above. @return 0, or -ENOMEM (r is
 * cleared either way). */
int grape_gc_end(grape_gc_t* c, grape_region_t* r, void* stream, const grape_gc_node_t* restart,
                 int* drv_err);

/* Builds one queued segment (async_builds; the builder thread, without any
 * lock held): @return 1 when it built (or dropped) one, 0 when none is queued. */
int grape_gc_build_pending(grape_gc_t* c);

/* Destroys every executable graph (their functions are being unloaded, or
 * their context destroyed); keys keep their counts and get new graphs when
 * they recur. */
void grape_gc_drop_graphs(grape_gc_t* c);

/* Destroys every executable with a node that launches one of the n driver
 * functions fns (their module is being unloaded: the driver may hand their
 * handle values out again, for other functions). */
void grape_gc_drop_functions(grape_gc_t* c, void* const* fns, size_t n);

/* The program is about to take away what a build may name (memory it
 * frees, a module it unloads). Deterministic mode: returns once every build
 * the builder may begin by the program's last reported progress (a region's
 * end, as grape_gc_stop counts) has ended, so that a build the OS ran late
 * never finds that gone and fails, which would make the run depend on how
 * the OS ran the builder; else at once. Any thread. */
void grape_gc_settle(grape_gc_t* c);

/* No graph is built or replayed from now on (process exit): regions are only
 * accounted, queued builds are dropped, and the call returns once a build in
 * progress has ended. Existing executables stay until grape_gc_drop_graphs. */
void grape_gc_stop(grape_gc_t* c);

/* Why graph mode is not worth its own cost in this process (ledger.c): the
 * savings of its replays have not covered the caller's work per op
 * (GRAPE_GC_COST_SHIM_OP) and the builds the program waited for, over
 * consecutive windows of ops. NULL while it pays. Once set it stays: the
 * caller should submit what it holds and record nothing more. Any thread. */
const char* grape_gc_stood_down(grape_gc_t* c);

/* Whether the caller should pause recording (ledger.c): where its work per op
 * is dear against a launch, what graph mode has cost the program so far (that
 * work, less what replays saved) exceeds config.budget_share of how long the
 * process has run. The caller then submits what it holds and passes ops
 * straight to the driver, asking grape_gc_resume now and then. Any thread,
 * no lock. */
int grape_gc_pause_wanted(grape_gc_t* c);
/* Whether a pause may end: the process has run long enough that what graph
 * mode cost is within half its budget, or the builds queued before the pause
 * are estimated done (the caller records again from its streams' next
 * regions). @return 1 when the pause ended (or none was wanted). Any thread. */
int grape_gc_resume(grape_gc_t* c);

/* ---- What the report and the trace read ---- */

typedef struct grape_gc_stats_s {
  uint64_t regions, ops, paths, collisions;
  uint64_t graph_keys, graph_hits, graph_misses, graphs_built, graphs_evicted;
  uint64_t build_failures, node_updates, graph_launches, eager_ops, submissions;
  uint64_t flushed[GRAPE_GC_CAUSES];   /* held ops submitted one by one, by cause */
  uint64_t graph_bytes;                /* estimated, of the executables cached now */
  uint64_t graph_bytes_peak;           /* the most graph_bytes has been */
  uint64_t paths_evicted, keys_evicted;   /* least recently seen, beyond max_paths */
  uint64_t segments;                   /* segments with executables now */
  uint64_t cuts_added;                 /* cuts added to keys (first cuts and changes) */
  uint64_t recuts;                     /* cut changes after measured replays */
  uint64_t builds_async;               /* graphs built by the builder thread */
  uint64_t set_graphs;                 /* ... for a recurring parameter set (a step
                                          counter's values): replayed without updates */
  uint64_t build_waits;                /* deterministic mode: waits for a build */
  uint64_t exit_wait_ns;               /* how long grape_gc_stop waited for the builds in
                                          progress (the program's clock; on the sim, how
                                          far the builder's ran past the program's end) */
  uint64_t deferred;                   /* first builds put off: predicted no faster */
  /* Concurrency plans (conc.c) */
  uint64_t conc_planned;               /* candidate plans built (predicted >= 5% faster) */
  uint64_t conc_kept;                  /* ... measured >= 3% faster than the chain: kept */
  uint64_t conc_reverted;              /* ... not: reverted (tried again later, less often) */
  uint64_t conc_launches;              /* segment launches of a concurrent plan */
  uint64_t conc_fallbacks;             /* replays whose footprints broke their plan: chain */
  uint64_t dev_chain_ns, dev_chain_n;  /* device time of timed segment launches as chains */
  uint64_t dev_plan_ns, dev_plan_n;    /* ... as concurrent plans */
  double conc_gain_ns;                 /* timed plan launches: their segment's mean chain
                                          time less theirs, summed (< 0: plans lost) */
  uint64_t conc_gain_n;                /* ... how many */
  uint64_t go_planned;                 /* go mode: SM-target plans built (predicted >= 5%
                                          faster than the segment's kept safe plan) */
  uint64_t go_kept, go_reverted;       /* ... measured >= 3% faster than it / not */
  uint64_t go_launches;                /* segment launches of a kept or trial go plan */
  double go_gain_ns;                   /* timed go launches: their segment's mean safe-plan
                                          time less theirs, summed */
  uint64_t go_gain_n;
  uint64_t conc_host_dropped;          /* plans dropped: host cost >= 2% of what they gained */
  uint64_t conc_host_skipped;          /* plans not made: their re-checks alone would cost that */
  double plan_host_ns;                 /* the shim's host time for plans: re-verification at
                                          each plan launch and go's targets, summed */
  uint64_t plan_host_n;                /* ... plan launches it covers */
  double hint_host_ns;                 /* of that, applying go's targets (grape_gc_hint_cost) */
  uint64_t hint_host_n;                /* ... targets applied */
  /* What the run measured (costs.c): the estimate in use and its samples. */
  int builds_stall;                    /* background builds were measured stalling the
                                          program: built once earned, as inline */
  double cost_ns[GRAPE_GC_COST__COUNT];
  uint64_t cost_samples[GRAPE_GC_COST__COUNT];
  /* The ledger (ledger.c): what replays saved against what the caller's own
   * work and builds on the program's thread cost, over the whole run. */
  double ledger_saved_ns, ledger_cost_ns;
  uint64_t ledger_windows, ledger_losing;   /* windows judged, of them losing */
  uint64_t stood_down_at_op;                /* the op count when it stood down (0: never) */
  uint64_t pauses;                          /* times recording paused on the budget */
  double paused_ns;                         /* how long it stayed paused, on now()'s clock
                                               (a pause under way up to now) */
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
  uint64_t hits;                       /* sightings of this path replayed as a graph */
  uint64_t key_hits;                   /* its key's graph replays (all its paths) */
  uint64_t key_seen;
  int key_built;                       /* its key got an executable graph */
  uint32_t key_segments;               /* segments its key is replayed in (0: none) */
  grape_gc_way_t way;
  const char* why;                     /* why it ran that way, in words */
  const grape_dag_summary_t* conc;     /* its DAG, when first seen (NULL: not analysed) */
  const char* plan;                    /* its key's concurrency plan, in words (NULL: none) */
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

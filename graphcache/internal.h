/* The graph cache's own structures and the doors between its files (entry.c
 * lists them, one job each). Nothing outside graphcache/ includes this.
 *
 * Ownership: trie nodes are freed only by grape_gc_destroy (a launch path may
 * be reading them without the lock). Keys, paths, segments and executables
 * are freed under the lock; the launch path only tests node->term and
 * node->seg for NULL and never follows them without the lock. */
#ifndef GRAPE_GRAPHCACHE_INTERNAL_H
#define GRAPE_GRAPHCACHE_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "policy.h"
#include "table.h"
#include "util/list.h"

#define MAX_VARIANTS 64     /* executables of a segment: cfg.variants, and those of its
                               recurring parameter sets (segment.c) */
#define FREE_VARIANTS 2     /* variants of a segment a builder thread builds at the first far
                               replay (further ones once far replays have spent a build); all
                               that inline builds make */
#define SET_MAX_OPS 16      /* segments small enough to keep an executable per recurring set */
#define BUILD_SEEN 16       /* measured build costs kept by when they were known (costs.c) */
#define SET_SLOTS 64        /* parameter sets a segment remembers (a cycle that long recurs) */
#define MAX_CUTS 16       /* segments a key is cut into, at most */

typedef struct grape_gc_key_s gkey_t;
typedef struct grape_gc_seg_s seg_t;
typedef struct path_s path_t;
typedef struct exec_s exec_t;
typedef struct job_s job_t;
typedef struct conc_s conc_t;

/* One executable graph of a segment: its nodes hold dims/params/fns. */
struct exec_s {
  void* graph;
  void* exec;
  seg_t* seg;
  void** nodes;                 /* one per op */
  void** fns;                   /* what each node holds now */
  grape_op_dims_t* dims;
  uint8_t* params;              /* laid out as a region's from the segment's first op */
  size_t plen;
  uint64_t bytes;               /* estimated device memory */
  uint64_t ready_at;            /* now() when its build ended (0: at once) */
  uint32_t gen;                 /* its layout: 0, the chain; else the policy's layout of
                                   that generation (policy.h) */
  uint64_t set;                 /* hash of the parameter set its nodes hold (0: not kept) */
  int pinned;                   /* built for a recurring set: re-bound only when no other
                                   variant can be */
  grape_list_t lru;             /* on c->exec_lru: least recently used first */
};

/* A parameter set a segment's replays had to update nodes for. */
typedef struct set_seen_s {
  uint64_t set;                 /* its hash (0: a free slot) */
  uint32_t seen;                /* replays that needed it */
  double spent_ns;              /* on node updates for it */
} set_seen_t;

/* The segment ending at trie node `end`: ops [from, end->depth) of every path
 * through `end`. */
struct grape_gc_seg_s {
  grape_gc_node_t* end;
  uint32_t from, n;             /* first op (depth of the cut above), ops */
  exec_t* var[MAX_VARIANTS];
  int nvar;
  int queued;                   /* builds of it queued or running */
  int stagers;                  /* keys that stage it (not yet installed) */
  int failed;                   /* could not be built: keys that need it run eagerly */
  int installed;                /* it is end->seg (else staged, or retired) */
  double far_ns;                /* spent on updates of replays far from every variant */
  set_seen_t* sets;             /* SET_SLOTS recent sets that needed updates, or NULL */
  uint32_t set_next;            /* the slot a new set takes (round robin) */
  int npinned;                  /* variants built for recurring sets */
  void* timer;                  /* the driver's timer its graphs record, or NULL */
  int timed;                    /* a launch since the last read of the timer */
  int timed_shared;             /* ... made while the device ran the shim's own work too
                                   (grape_gc_device_shared): its time is no sample */
  double dev_ns;                /* device time of one launch, moving average */
  uint32_t dev_n;               /* samples in it */
  uint64_t launches;
  conc_t* conc;                 /* the policy's state of it (conc.c), or NULL; segment.c
                                   never reads it */
  seg_t* next;                  /* every segment (c->segs) */
};

/* A key's states. */
enum key_state_e {
  K_WARM = 0,      /* counted, no graph (yet) */
  K_BUILDING,      /* its segments are being built (staged) */
  K_LIVE,          /* held and replayed */
  K_NOPAY,         /* replays cost more than eager launches */
  K_SLOWER,        /* replays were measured slower than eager runs */
  K_SHORT,         /* fewer ops than min_ops */
  K_UNSUPPORTED,   /* an op that cannot be a graph node (function unknown) */
  K_FAILED,        /* its graph could not be built or launched: eager for good */
};

struct grape_gc_key_s {
  uint64_t fp;
  uint32_t nops;
  uint32_t nkernels;            /* of them kernels (what a graph's gap saving applies to) */
  grape_op_key_t* keys;
  uint64_t seen, hits, misses;
  int state;
  grape_gc_node_t* node;        /* terminal trie node (made when first cut) */
  void* ctx;                    /* what its graphs are built in (a region's ctx) */
  seg_t* staged[MAX_CUTS];      /* segments being built for its next cuts */
  int nstaged;
  uint32_t nsegs;               /* segments it is replayed in (live) */
  /* The cut nodes of its path (grape__gc_key_segments), kept while no cut
   * anywhere changed (c->cuts_gen) and its node is the same: a chunk's end
   * then walks no path of a thousand nodes. */
  uint64_t cuts_gen;            /* c->cuts_gen then (0: never) */
  const grape_gc_node_t* cuts_node;
  int ncuts;                    /* -1: more than MAX_CUTS */
  grape_gc_node_t* cut_end[MAX_CUTS];
  double upd_avg;               /* node updates per replay, moving average */
  double credit_ns;             /* inline builds: what replays would have saved since the last build */
  grape_op_dims_t* last_dims;   /* warming up: the last sighting's ops (what a replay */
  uint8_t* last_params;         /* would have had to update), NULL until seen */
  uint64_t recheck_at;          /* K_NOPAY, K_SLOWER: `seen` at which to look again */
  double cyc_eager, cyc_graph;  /* measured cycle (ns), moving averages: eager runs, replays */
  double tail_ns;               /* an eager run's wait at its stream's sync, moving average */
  uint32_t tail_n;
  double var_eager, var_graph;  /* their variances, moving averages */
  uint32_t n_eager, n_graph;    /* samples in them (n_graph: since the key last went live) */
  uint32_t slower;              /* consecutive "replays were slower" verdicts */
  int slower_on_old_cuts;       /* K_SLOWER judged while its next cuts were being built:
                                   live again, judged afresh, once they are (verdict.c; set
                                   with the verdict, read only in K_SLOWER) */
  uint32_t stray;               /* live: regions that replayed a prefix of its path and then
                                   left it, for a key judged not worth holding (verdict.c) */
  int warmed;                   /* built once already: later builds need no warmup */
  double host_ns;               /* host time to issue a replayed region (first op to end),
                                   graph launches and updates left out; moving average */
  uint32_t host_n;
  double host_eager_ns;         /* the same of eager sightings, launches left out */
  uint32_t host_eager_n;
  uint64_t recut_at;            /* `seen` at which to assess its cuts again */
  uint32_t cut_looks;           /* times its cuts were assessed */
  uint8_t guessed;              /* its cuts assume a device time not measured yet */
  uint8_t deferred;             /* its first build was put off (predicted no faster) */
  uint64_t build_at;            /* K_WARM: `seen` before which it is not built */
  const char* conc_plan;        /* its segments' concurrency plan in words (conc.c), or NULL */
  grape_list_t paths;           /* its paths (path_t.in_key) */
  path_t* last_path;            /* the one its last chunk took, or NULL */
  grape_list_t lru;             /* on c->key_lru: least recently seen first */
};

struct path_s {
  uint64_t fp;
  uint32_t nops;
  uint64_t count;
  uint64_t hits;                /* of those, replayed as a graph */
  gkey_t* key;
  grape_op_dims_t* dims;
  uint8_t* params;              /* the first sighting's: one representative set */
  uint32_t* poff;
  uint64_t stamp;               /* config.stamp() then */
  grape_dag_summary_t* conc;    /* its DAG when first seen (conc.c), or NULL */
  grape_list_t in_key;          /* on its key's paths */
  grape_list_t lru;             /* on c->path_lru: least recently seen first */
};


/* How urgent a job is, most urgent first: a build without which a key
 * cannot replay at all (its first graphs, or a segment another key's cuts
 * took from it: the key runs eagerly until it ends); a build that saves a
 * replaying key host time in every replay (new cuts, a recurring set's
 * executable); a policy's layout (a concurrency plan: a bet on a few
 * percent of a segment's device time, which a rarely recurring segment
 * never even tries: moe --iters 60 under fair ended 1.0% behind the chain
 * with plans queued beside sets, 0.1% so); an executable to destroy. */
enum { JOB_NEEDED = 0, JOB_BETTER, JOB_LAYOUT, JOB_RETIRE };

/* A build the builder thread will do: a copy of the segment's ops. */
struct job_s {
  seg_t* seg;                   /* the segment to build, or NULL: a job that destroys `retire` */
  exec_t* retire;               /* an executable given up on the program's thread */
  grape_region_t region;        /* the segment's ops, from op 0 */
  void* ctx;
  uint64_t t_queued;            /* now() when queued */
  void* layout;                 /* the policy's layout to build (a copy it owns), or NULL: a chain */
  uint32_t gen;                 /* its generation */
  int pin;                      /* a recurring set's executable (exec_t.pinned) */
  int urgency;                  /* JOB_* when queued: the builder takes the most urgent job due first */
  uint64_t hastened[JOB_RETIRE];  /* when seg_hasten made it as urgent as each more urgent
                                     JOB_* (0: never): the builder's pick counts only what
                                     happened before its start (urgency_at) */
  job_t* next;
};

struct grape_gc_s {
  grape_gc_config_t cfg;
  grape_gc_driver_t drv;
  const grape_gc_policy_t* policy;  /* the layouts of segments (policy.h) */
  pthread_mutex_t lock;
  pthread_cond_t built;         /* a queued build ended (deterministic mode waits) */
  grape_gc_node_t root;
  table_t keys;                 /* gkey_t* by fp */
  table_t paths;                /* path_t* by fp */
  grape_list_t key_lru;         /* every key (gkey_t.lru): least recently seen first */
  grape_list_t path_lru;        /* every path (path_t.lru): least recently seen first */
  grape_list_t exec_lru;        /* every executable (exec_t.lru): least recently used first */
  size_t nexecs;
  seg_t* segs;                  /* every segment not yet freed */
  uint64_t cuts_gen;            /* bumped whenever a node's segment changes (from 1) */
  grape_gc_node_t** nodes;      /* every trie node (freed at destroy) */
  size_t nnodes, nodes_cap;
  gkey_t** staging;             /* keys with staged segments (NULL entries: free) */
  size_t staging_cap;
  job_t *jobs, *jobs_tail;      /* builds queued */
  int building;                 /* jobs taken and not yet done (waiting or building) */
  /* Deterministic mode: builds follow the program's clock. The builder
   * starts a build no earlier than when it was queued and than the end of
   * its previous build (builder_clock), and only once the program's clock
   * (prog_now, the latest now() of a region's end) has reached that start:
   * a build can then never be in the past of what the program does. */
  uint64_t prog_now, builder_clock;
  uint64_t t_start;             /* the run's start on now()'s clock (config.build_share) */
  uint64_t builds_until;        /* when the builds queued so far are estimated done (wake) */
  uint64_t builder_wait_until;  /* the start the builder waits for (0: not waiting) */
  uint64_t building_from;       /* the start of the build the builder has taken (building > 0) */
  /* Deterministic mode: the build cost as the builds ended by `at`
   * (simulated) measured it, oldest first, so that a program thread at
   * simulated moment t weighs exactly the builds ended by t, however far the
   * OS has run the builder (costs.c). Under the lock. */
  struct build_seen_s {
    uint64_t at;
    double per_node;
  } build_seen[BUILD_SEEN];
  uint32_t build_seen_n;
  grape_gc_stats_t st;
  int noted_build, noted_launch;
  int graph_mode;               /* made with graphs on (grape_gc_stop turns them off at exit) */
  int stopping;
  int built_now;                /* a graph was built inline since the last chunk was accounted */
  struct conc_cache_s* conc;    /* conc.c's occupancy cache, or NULL */
  /* What the run measured (costs.c): cost[k] is read by any thread without a
   * lock (relaxed); meters are written under their own lock by whichever
   * thread took the sample (the program's, the builder's). */
  _Atomic double cost[GRAPE_GC_COST__COUNT];
  _Atomic unsigned cost_measured;   /* bit k: cost[k] is measured, no longer configured */
  /* Background builds that stall the program (costs.c): builds queued so far
   * (the program's threads), eager launches measured far slower than the
   * launch cost once builds had been queued, and the verdict (set once). */
  _Atomic uint64_t queued_async;
  _Atomic uint32_t stalled_launches;
  _Atomic int builds_stall;
  _Atomic int device_shared;    /* grape_gc_device_shared's count (any thread) */
  /* The ledger (ledger.c): under the lock, but build_cost_ns (added by the
   * thread that built, any) and stood_down (set once under the lock, read by
   * any thread without it). */
  struct ledger_s {
    uint64_t ops;               /* ops of the window so far */
    double saved, potential, cost;   /* the window's */
    double build_seen;          /* build_cost_ns when the window began */
    uint64_t resume_at;         /* now() when the builds queued before the pause are estimated
                                   done (0: none): the pause ends then */
    uint64_t resumed_at;        /* now() when the last pause ended: a cycle that spans a pause
                                   is no sample (verdict.c) */
    double paused_since;        /* the process's age when the pause under way began (0: none) */
    uint32_t losing;            /* consecutive losing windows */
    _Atomic double build_cost_ns;    /* builds the program's thread waited for, all run */
    _Atomic int stood_down;
    _Atomic int pause;          /* grape_gc_pause_wanted's answer: set and cleared under the
                                   lock, read by any thread */
    char why[320];
  } ledger;
  struct cost_meter_s {
    pthread_mutex_t mu;
    double win_min;             /* the least sample of the window so far */
    uint32_t win_n;
    double avg;                 /* moving average of window minima */
    uint32_t n;                 /* windows folded in (0: still the configured value) */
    uint64_t samples;
  } meter[GRAPE_GC_COST__COUNT];
};

/* ---- Small helpers of every file of the cache ---- */

/* The program's clock (config.now), 0 without one. */
static inline uint64_t grape__gc_now(const grape_gc_t* c) {
  return c->cfg.now != NULL ? c->cfg.now() : 0;
}

/* A cost graph mode weighs: measured in the run where it has been (costs.c),
 * else the configured one. */
static inline double grape__gc_cost(const grape_gc_t* c, grape_gc_cost_t k) {
  return atomic_load_explicit(&((grape_gc_t*)c)->cost[k], memory_order_relaxed);
}

/* What replaying nops ops in `launches` graph launches with `updates` node
 * updates saves the host against launching them one by one (negative: the
 * replay costs more). The rent-or-buy credit, the pay verdict and the
 * ledger all weigh this. */
static inline double grape__gc_replay_saving(const grape_gc_t* c, double nops, double launches,
                                             double updates) {
  return nops * grape__gc_cost(c, GRAPE_GC_COST_LAUNCH) -
         launches * grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH) -
         updates * grape__gc_cost(c, GRAPE_GC_COST_UPDATE);
}

/* What building an executable of n ops costs the host (costs.c): measured
 * per node once builds have been timed, else the configured fixed part and
 * per node; in deterministic mode as measured by the builds ended by now in
 * simulated time. Under the lock. */
double grape__gc_build_ns_now(grape_gc_t* c, uint32_t n);
/* The same on a program's thread (segment.c): in deterministic mode it first
 * waits (real time) for the builds the builder may yet end by now. The
 * builder itself reads grape__gc_build_ns_now: its own builds are all done.
 * Under the lock. */
double grape__gc_build_ns(grape_gc_t* c, uint32_t n);
/* Deterministic mode, the builder: a build it ended at `at` (simulated) was
 * sampled; the estimate now is known from `at` on. Under the lock. */
void grape__gc_build_seen(grape_gc_t* c, uint64_t at);

/* Deterministic mode: whether the builder may still end a build begun by
 * simulated time t, so a thread that needs it waits in real time: it is not
 * waiting for a later moment to start its next one. Under the lock. */
static inline int grape__gc_builder_at_or_before(const grape_gc_t* c, uint64_t t) {
  return !(c->builder_wait_until != 0 && c->builder_wait_until > t);
}

/* True when a build costs the program nothing: a builder thread builds, and
 * its builds have not been seen to stall the program's thread (another
 * thread's instantiation may hold the driver's lock against its launches). */
static inline int grape__gc_builds_free(const grape_gc_t* c) {
  return c->cfg.async_builds &&
         !atomic_load_explicit(&((grape_gc_t*)c)->builds_stall, memory_order_relaxed);
}

/* The ledger (ledger.c): region r of key k ended (replayed or not, after
 * segs graph launches and updates node updates), under the lock; a build
 * of ns the program's thread waited for, any thread. */
void grape__gc_ledger_account(grape_gc_t* c, const grape_region_t* r, const gkey_t* k,
                              int replayed, uint32_t segs, uint32_t updates);
void grape__gc_ledger_build(grape_gc_t* c, double ns);
/* Adds a pause under way, up to now, to st->paused_ns (under the lock). */
void grape__gc_ledger_paused(const grape_gc_t* c, grape_gc_stats_t* st);

/* The configured costs as the first estimates (grape_gc_create). */
void grape__gc_costs_init(grape_gc_t* c);
void grape__gc_costs_destroy(grape_gc_t* c);

/* Says msg once (config.note), *once remembering that it was said. */
static inline void grape__gc_note(grape_gc_t* c, int* once, const char* msg) {
  if (!*once && c->cfg.note != NULL)
    c->cfg.note(msg);
  *once = 1;
}

/* A copy of n bytes at p (n may be 0), or NULL when out of memory. */
static inline void* grape__gc_dup(const void* p, size_t n) {
  void* d = malloc(n ? n : 1);
  if (d != NULL && n)
    memcpy(d, p, n);
  return d;
}

/* ---- trie.c ---- */

/* Makes k held and replayed / not (state). Under the lock. */
int grape__gc_make_live(grape_gc_t* c, gkey_t* k);
/* k's replays are judged from the next one on (it went live, or new cuts
 * installed): its replayed cycles start over. */
static inline void grape__gc_key_judge_afresh(gkey_t* k) {
  k->n_graph = 0;
  k->cyc_graph = k->var_graph = 0;
}
void grape__gc_make_dead(gkey_t* k, int state);

/* The node of k's op list, created as needed. Under the lock. */
grape_gc_node_t* grape__gc_trie_path(grape_gc_t* c, const gkey_t* k);

/* ---- keys.c ---- */

/* The key of r's ops (fingerprint fp), or a new one (the least recently seen
 * going beyond config.max_paths); NULL when out of memory. */
gkey_t* grape__gc_key_find_or_add(grape_gc_t* c, uint64_t fp, const grape_region_t* r);

/* The path of r's ops under key k, or a new one; NULL when out of memory. */
path_t* grape__gc_path_find_or_add(grape_gc_t* c, gkey_t* k, const grape_region_t* r);

/* key, met before, if it is still in the table (it may have been evicted
 * since; key is compared, never followed), else NULL. */
gkey_t* grape__gc_key_known(const grape_gc_t* c, const void* key);

/* k has staged segments: on the staging list (out of memory: its own
 * sightings still install them). */
void grape__gc_staging_add(grape_gc_t* c, gkey_t* k);

/* k has no staged segments any more: off the staging list. */
void grape__gc_staging_remove(grape_gc_t* c, gkey_t* k);

/* Frees every key and path (grape_gc_destroy). */
void grape__gc_keys_destroy(grape_gc_t* c);

/* ---- verdict.c ---- */

/* Accounts r's chunk (its held ops already launched or submitted) and
 * decides what its key does next. k: its key when known (the cursor ended
 * on it). t_end, segs, updates: the region's end and its launches and
 * updates before the end. @return 0 or -ENOMEM. Under the lock. */
int grape__gc_account(grape_gc_t* c, grape_region_t* r, gkey_t* k, uint64_t t_end, uint32_t segs,
                      uint32_t updates);

/* Keys whose staged segments are ready go live (or switch cuts). */
void grape__gc_install_ready(grape_gc_t* c);

/* ---- segment.c ---- */

/* Ops [from, to) of r as the driver sees op i. */
grape_gc_op_t grape__gc_op_view(const grape_region_t* r, uint32_t i);

/* Ops [from, to) of r to the driver one by one; the first error into *drv_err. */
void grape__gc_submit_eager(grape_gc_t* c, const grape_region_t* r, uint32_t from, uint32_t to,
                            void* stream, grape_gc_cause_t cause, int* drv_err);

/* Launches seg for ops [r->sub, r->held) of r: the variant closest to them,
 * re-bound. @return 0, or the driver's error (nothing was submitted: the
 * caller submits the ops eagerly). Counts updates into r->updates. */
int grape__gc_seg_launch(grape_gc_t* c, seg_t* seg, grape_region_t* r, void* stream);

/* Node updates a replay of r's ops (k's) would need in k's segments now, or
 * -1 when one has no executable. */
long grape__gc_region_diff(grape_gc_t* c, gkey_t* k, const grape_region_t* r);
/* A key whose replays did not pay ran r's ops eagerly: each of its
 * segments counts r's parameter set as if it had replayed, so that a set
 * that recurs (a step counter's values, ping-pong buffers) earns its own
 * executable while the key waits for its re-check, which then finds it. */
void grape__gc_region_sets(grape_gc_t* c, gkey_t* k, const grape_region_t* r);

/* The device times of k's segments' last launches, where finished, join
 * their averages. */
void grape__gc_seg_timers_poll(grape_gc_t* c, gkey_t* k);

/* The program reached time t (a region's end): a builder waiting for it may
 * start. Under the lock. */
void grape__gc_progress(grape_gc_t* c, uint64_t t);

/* True when seg has an executable usable now. Deterministic mode first waits
 * for its queued builds. */
int grape__gc_seg_ready(grape_gc_t* c, seg_t* seg);

/* The segments k is replayed in under the cuts installed now, into segs (at
 * most MAX_CUTS; NULL entries: missing or stale). @return how many, or -1
 * when k has more than MAX_CUTS. */
int grape__gc_key_segments(grape_gc_t* c, gkey_t* k, seg_t** segs, uint32_t* from, grape_gc_node_t** end);

/* A node's segment was set or cleared: every key's kept cut nodes are stale. */
static inline void grape__gc_cuts_changed(grape_gc_t* c) {
  c->cuts_gen++;
}

/* Stages (queues or builds) the segments k needs under `cuts` (sorted
 * depths, the last k->nops), from region r's ops (which are k's); those
 * already installed and matching are reused. @return 0, or -ENOMEM, or
 * -EINVAL when a build failed for good. */
int grape__gc_stage(grape_gc_t* c, gkey_t* k, const grape_region_t* r, const uint32_t* cuts,
                    int ncuts);

/* When every staged segment of k is usable: installs them (retiring what they
 * replace) and @return 1; 0 while some are still being built; -1 when one
 * failed. */
int grape__gc_install_staged(grape_gc_t* c, gkey_t* k);

/* Drops k's staged segments (it died, or was evicted). */
void grape__gc_unstage(grape_gc_t* c, gkey_t* k);

/* Queues (or, without a builder, makes) a build of seg from ops [from, from +
 * seg->n) of r, as the policy's layout of generation gen (NULL, 0: a chain).
 * @return 0, -ENOMEM, or -EINVAL when an inline build failed. */
int grape__gc_seg_build(grape_gc_t* c, seg_t* seg, const grape_region_t* r, uint32_t from,
                        void* ctx, const void* layout, uint32_t gen);

/* Frees seg and its executables (it must not be installed). with_driver: 0,
 * no driver call (fork child, driver gone); 1, destroy its executables now;
 * GRAPE_GC_RETIRE, hand them to the builder thread to destroy when there is
 * one (the program's thread then pays nothing), or at exit (stopping) leave
 * them and its timer to the driver, whichever thread frees it. */
#define GRAPE_GC_RETIRE 2
void grape__gc_seg_free(grape_gc_t* c, seg_t* seg, int with_driver);

/* Destroys executable e (removing it from its segment and the LRU list). */
void grape__gc_exec_drop(grape_gc_t* c, exec_t* e);
/* Frees e, through the driver too when with_driver (no bookkeeping). */
void grape__gc_exec_free(grape_gc_t* c, exec_t* e, int with_driver);


/* ---- conc.c: concurrency plans per segment ---- */

/* The policy table (policy.h) of concurrency plans: the cache's. */
extern const grape_gc_policy_t grape__conc_policy;

/* After a replay of live key k from region r: looks for concurrency plans of
 * its segments (safe
 * mode). Under the lock. */
void grape__conc_assess(grape_gc_t* c, gkey_t* k, const grape_region_t* r);

/* A new path p of region r: its DAG summary for the report (observe, safe). */
void grape__conc_path(grape_gc_t* c, path_t* p, const grape_region_t* r);

/* The plan of k's segments in words, for the report (NULL: none). */
const char* grape__conc_key_plan(const grape_gc_t* c, const gkey_t* k);

/* Frees the cache's occupancy table (at destroy). */
void grape__conc_destroy(grape_gc_t* c);

/* ---- cuts.c ---- */

/* What cuts.c knows of a key of n ops: its cuts now (sorted depths, the
 * last n) with each segment's device time (measured, or assumed), the cuts
 * other keys need (they stay), the host time to issue all n ops, what
 * one segment launch costs the host, and the most segments (0: MAX_CUTS). */
typedef struct grape_cuts_in_s {
  uint32_t n;
  const uint32_t* cuts;
  int ncuts;
  const double* seg_dev_ns;
  const uint32_t* forced;
  int nforced;
  double host_ns, launch_ns;
  int max_segs;
} grape_cuts_in_t;

/* The cuts (at most MAX_CUTS, the last n) that end the device's work
 * earliest, into out; the predicted ends (ns from the region's first op)
 * with the current and the new cuts. @return how many cuts. */
int grape__cuts_best(const grape_cuts_in_t* in, uint32_t* out, double* end_old, double* end_new);

/* The predicted end with the given cuts. */
double grape__cuts_end(const grape_cuts_in_t* in, const uint32_t* cuts, int ncuts);

/* The predicted end of the same n ops launched one by one as the host issues
 * them (each launch costing launch_ns), their device time dev_ns spread
 * evenly: what holding them must beat. */
double grape__cuts_eager_end(uint32_t n, double host_ns, double launch_ns, double dev_ns);

#endif

/* Graph mode's side of the shim (see graph.h for the design).
 *
 * Lock order: the stream table's mutex, then a stream's spinlock, then the
 * holding list's mutex or the cache's mutex. The watchdog takes the holding
 * list's mutex only to copy the list, then each stream's lock on its own. */
#include "graph.h"

#include <errno.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allocmap.h"
#include "builder.h"
#include "clock.h"
#include "grape/simcu_private.h"
#include "state.h"
#include "log.h"
#include "options.h"
#include "graph_driver.h"
#include "real.h"

/* ---- The cache ---- */

static grape_gc_t* cache;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static int graphs_on;   /* graph mode, and the driver has what it needs */
static char stop_why[512];   /* why holding stopped (bind.c): set once, under cache_lock */

static void note_to_log(const char* msg) {
  grape_log_warn("%s", msg);
}

/* Host costs behind "build and replay only where they pay" (ns): a launch's
 * driver call, a graph launch, a node update, building an executable (graph,
 * nodes, instantiation), and the shim's own work per op it records or holds
 * (about 600 instructions, docs/performance.md). Defaults from published
 * measurements (the sim's cost table uses the same, sim/README.md); GRAPE_COSTS
 * replaces any of them. */
static const struct {
  const char* name;
  size_t off;
  double dflt;
} cost_rows[] = {
    {"launch", offsetof(grape_gc_config_t, launch_ns), 2650},
    {"graph_launch", offsetof(grape_gc_config_t, graph_launch_ns), 3500},
    {"update", offsetof(grape_gc_config_t, update_ns), 700},
    {"build", offsetof(grape_gc_config_t, build_ns), 22000},
    {"build_node", offsetof(grape_gc_config_t, build_node_ns), 32000},
    {"gap", offsetof(grape_gc_config_t, gap_ns), 500},
    {"shim", offsetof(grape_gc_config_t, shim_op_ns), 150},
};

/* Sets cfg's costs: the defaults, then GRAPE_COSTS ("name=ns,..."). A bad
 * entry is reported and skipped; the others apply. */
static void costs_set(grape_gc_config_t* cfg) {
  for (size_t i = 0; i < sizeof(cost_rows) / sizeof(cost_rows[0]); i++)
    *(double*)((char*)cfg + cost_rows[i].off) = cost_rows[i].dflt;
  const char* s = grape__option_str(grape_option_costs);
  while (s != NULL && *s != '\0') {
    size_t len = strcspn(s, ",");
    char item[96];
    snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item ? len : sizeof item - 1), s);
    s += len + (s[len] == ',');
    char* eq = strchr(item, '=');
    char* end = NULL;
    double v = eq != NULL ? strtod(eq + 1, &end) : 0;
    size_t i = 0;
    while (eq != NULL && i < sizeof(cost_rows) / sizeof(cost_rows[0]) &&
           (strncmp(cost_rows[i].name, item, (size_t)(eq - item)) != 0 ||
            cost_rows[i].name[eq - item] != '\0'))
      i++;
    if (eq == NULL || i == sizeof(cost_rows) / sizeof(cost_rows[0]) || end == eq + 1 ||
        *end != '\0' || !(v >= 0 && v < 1e12)) {
      grape_log_warn("GRAPE_COSTS: ignoring '%s': expected name=ns with name one of launch, "
                     "graph_launch, update, build, build_node, gap, shim and ns a number >= 0",
                     item);
      continue;
    }
    *(double*)((char*)cfg + cost_rows[i].off) = v;
    /* Set by the user: the run's measurements do not replace it. */
    static const int measured_as[] = {GRAPE_GC_COST_LAUNCH, GRAPE_GC_COST_GRAPH_LAUNCH,
                                      GRAPE_GC_COST_UPDATE, GRAPE_GC_COST_BUILD_NODE,
                                      GRAPE_GC_COST_BUILD_NODE, -1, GRAPE_GC_COST_SHIM_OP};
    _Static_assert(sizeof(measured_as) / sizeof(measured_as[0]) ==
                       sizeof(cost_rows) / sizeof(cost_rows[0]),
                   "one measured cost (or none) per GRAPE_COSTS row");
    if (measured_as[i] >= 0)
      cfg->costs_fixed |= 1u << measured_as[i];
  }
}

/* ---- Timing graph mode's own work (graph.h) ---- */

int grape__timed;
__thread unsigned grape__launch_tick __attribute__((tls_model("initial-exec")));
int grape__launch_watch;
uint64_t grape__build_until;

/* A build was queued: the builder is woken, and the launches that follow are
 * timed until the builds queued so far are estimated done (a build that
 * holds the driver's lock stalls them; a build may start long after it was
 * queued: GRAPE_BUILD_WAIT_PCT). */
static void build_queued(uint64_t until) {
  __atomic_store_n(&grape__launch_watch, 64, __ATOMIC_RELAXED);
  __atomic_store_n(&grape__build_until, until != 0 ? until : 1, __ATOMIC_RELAXED);
  grape__builder_wake();
}

uint64_t grape__launch_time_watched(void) {
  uint64_t now = grape__clock_ns(), until = __atomic_load_n(&grape__build_until, __ATOMIC_RELAXED);
  if (until != 0 && now >= until)
    __atomic_compare_exchange_n(&grape__build_until, &until, 0, 0, __ATOMIC_RELAXED,
                                __ATOMIC_RELAXED);   /* past the build's end */
  return now;
}

__thread unsigned grape__shim_tick __attribute__((tls_model("initial-exec")));

void grape__shim_time_end(uint64_t t0) {
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  uint64_t t1 = grape__clock_ns();
  if (c != NULL && t1 >= t0)
    grape_gc_cost_sample(c, GRAPE_GC_COST_SHIM_OP, (double)(t1 - t0), 1);
}

void grape__launch_time_end(uint64_t t0) {
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  uint64_t t1 = grape__clock_ns();
  if (c != NULL && t1 >= t0)
    grape_gc_cost_sample(c, GRAPE_GC_COST_LAUNCH, (double)(t1 - t0), 1);
}

/* The cache re-checked ops before a plan's replay (config checked). */
static void plan_checked(uint32_t ops) {
  grape__charge_work(SIMCU_WORK_SHIM_CHECK, ops);
}

static long option_at_least(grape_option_t o, long lo) {
  long v = grape__option_get(o);
  return v < lo ? lo : v;
}

/* The budget's share of the run (GRAPE_BUDGET_PCT), or none when the user
 * asked for every path on record (a trace, a timeline, predicted times): a
 * pause would leave the regions it passed out of them. */
static double budget_share(void) {
  const char* trace = grape__option_str(grape_option_trace);
  const char* gpu = grape__option_str(grape_option_predict_gpu);
  if ((trace != NULL && *trace != '\0') || (gpu != NULL && *gpu != '\0') ||
      grape__option_get(grape_option_timeline))
    return 0;
  return (double)grape__option_get(grape_option_budget_pct) / 100.0;
}

grape_gc_t* grape__gc_peek(void) {
  return __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
}

grape_gc_t* grape__gc(void) {
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (__builtin_expect(c != NULL, 1))
    return c;
  pthread_mutex_lock(&cache_lock);
  if (cache == NULL) {
    int graphs = grape__mode == GRAPE_MODE_GRAPH;
    GRAPE_NO_REENTRY(graphs = graphs && grape__graph_real_resolve() == 1);
    grape_gc_config_t cfg = {
      .sz = sizeof(cfg),
      .graphs = graphs,
      .warmup = option_at_least(grape_option_warmup, 1),
      .min_ops = option_at_least(grape_option_min_ops, 1),
      .variants = option_at_least(grape_option_variants, 1),
      .max_graphs = option_at_least(grape_option_cache_graphs, 1),
      .max_bytes = (uint64_t)option_at_least(grape_option_cache_mb, 1) << 20,
      .recheck = 64,
      .note = note_to_log,
      .stamp = grape__alloc_epoch,
      .now = graphs ? grape__clock_ns : NULL,
      .max_paths = option_at_least(grape_option_paths, 1),
      .wake = build_queued,
      .handoff = grape__sim_handoff,
      .driver_work = grape__own_work,   /* a program thread may wait for its driver locks */
      .checked = plan_checked,
      .concurrency = (int)grape__option_get(grape_option_concurrency),
      .plan_host_share = (double)grape__option_get(grape_option_plan_host_pct) / 100.0,
      .build_share = (double)grape__option_get(grape_option_build_wait_pct) / 100.0,
      .budget_share = budget_share(),
    };
    costs_set(&cfg);
    grape__clock_init(graphs);
    cfg.run_age_ns = grape__clock_age_ns();   /* once the clock is known: the sim's or the OS's */
    if (graphs) {
      /* On the simulated device, decisions must not depend on how the OS ran
       * the builder: simulated time is then reproducible. */
      cfg.deterministic = grape__clock_simulated();
      cfg.async_builds = grape__builder_start();
      cfg.cuts = 1;
    }
    grape_gc_t* made = NULL;
    if (grape_gc_create(&cfg, graphs ? &grape__graph_driver : NULL, &made) != 0)
      grape_log_warn_once("out of memory: regions and paths go unrecorded");
    if (cfg.async_builds)
      grape__builder_serve(made);   /* with NULL (out of memory) it builds nothing */
    __atomic_store_n(&graphs_on, graphs && made != NULL && stop_why[0] == '\0',
                     __ATOMIC_RELAXED);
    __atomic_store_n(&grape__timed, graphs && made != NULL, __ATOMIC_RELAXED);
    /* Held work is submitted while the driver is still there: atexit
     * handlers run before library destructors. */
    if (graphs && made != NULL)
      atexit(grape__graph_exit);
    __atomic_store_n(&cache, made, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(&cache_lock);
  return cache;
}

/* ---- Streams: their kind, handle and context ---- */

/* Finds s's kind and the context its work belongs to, once (s locked, or not
 * yet shared). The driver is asked on a thread with a current context: the
 * stream's own thread, where it is launched on. On a thread with none (a new
 * thread before its runtime made a context current) the kind stays unknown,
 * to be found by the next thread that launches on it. A stream the driver
 * does not know gets the per-thread kind: the ordering rules treat it as
 * blocking and it is never held, since its ordering is not known. The legacy
 * stream is one per context: its work is held only while the process has one
 * context, which is then its context. */
void grape__stream_classify(grape_stream_t* s) {
  if (s->kind != GRAPE_STREAM_UNKNOWN)
    return;
  if (grape__stream_key_is_per_thread(s->key)) {
    __atomic_store_n(&s->kind, GRAPE_STREAM_PER_THREAD, __ATOMIC_RELAXED);
    return;
  }
  if (grape__graph_real_resolve() != 1)
    return;
  CUcontext cur;
  GRAPE_NO_REENTRY(cur = grape__ctx_current());
  if (cur == NULL)
    return;
  if (s->key == GRAPE_STREAM_LEGACY_KEY) {
    s->handle = CU_STREAM_LEGACY;
    s->ctx = cur;
    s->region.cursor.ctx = grape__ctx_multi() ? NULL : cur;   /* held only with one context */
    __atomic_store_n(&s->kind, GRAPE_STREAM_LEGACY, __ATOMIC_RELAXED);
    return;
  }
  s->handle = (void*)s->key;
  unsigned flags = 0;
  CUcontext ctx = NULL;
  CUresult rc;
  GRAPE_NO_REENTRY(rc = grape__rg.stream_flags((CUstream)s->handle, &flags));
  if (rc == CUDA_SUCCESS)
    GRAPE_NO_REENTRY(rc = grape__rg.stream_ctx((CUstream)s->handle, &ctx));
  s->ctx = rc == CUDA_SUCCESS ? ctx : NULL;
  /* The region builds graphs (in this context) only where it may be held. */
  s->region.cursor.ctx = rc == CUDA_SUCCESS ? ctx : NULL;
  /* The kind is read without the lock by the ordering check (graph.h). */
  __atomic_store_n(&s->kind, rc != CUDA_SUCCESS ? GRAPE_STREAM_PER_THREAD
            : (flags & CU_STREAM_NON_BLOCKING) ? GRAPE_STREAM_NON_BLOCKING
                                               : GRAPE_STREAM_BLOCKING, __ATOMIC_RELAXED);
}

void grape__stream_meet(grape_stream_t* s) {
  spin_lock(&s->lock);
  grape__stream_classify(s);
  spin_unlock(&s->lock);
}

const grape_gc_node_t* grape__hold_start(grape_stream_t* s) {
  if (!__atomic_load_n(&graphs_on, __ATOMIC_RELAXED))
    return NULL;
  int kind = grape__stream_kind(s);
  if (kind == GRAPE_STREAM_PER_THREAD || (kind == GRAPE_STREAM_LEGACY && grape__ctx_multi()))
    return NULL;
  return grape_gc_root(cache);
}

int grape__hold_ready_slow(grape_stream_t* s) {
  grape__stream_classify(s);
  int kind = grape__stream_kind(s);
  return kind != GRAPE_STREAM_UNKNOWN && kind != GRAPE_STREAM_PER_THREAD && s->ctx != NULL &&
         !(kind == GRAPE_STREAM_LEGACY && grape__ctx_multi());
}

/* ---- Streams that hold ops ---- */

int grape__holding, grape__holding_legacy, grape__holding_blocking;
static grape_list_t hold_list = GRAPE_LIST_INIT(hold_list);   /* newest first */
static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static void watchdog_wake(void);

/* The holding counts with s joining (d = 1) or leaving (d = -1) the list. */
static void holding_count(const grape_stream_t* s, int d) {
  if (s->kind == GRAPE_STREAM_LEGACY)
    __atomic_add_fetch(&grape__holding_legacy, d, __ATOMIC_RELAXED);
  else if (s->kind == GRAPE_STREAM_BLOCKING)
    __atomic_add_fetch(&grape__holding_blocking, d, __ATOMIC_RELAXED);
  __atomic_add_fetch(&grape__holding, d, __ATOMIC_RELEASE);
}

static void hold_list_add(grape_stream_t* s) {
  pthread_mutex_lock(&hold_lock);
  if (!s->on_hold_list) {
    s->on_hold_list = 1;
    grape__list_insert_head(&hold_list, &s->hold);
    holding_count(s, 1);
  }
  pthread_mutex_unlock(&hold_lock);
}

static void hold_list_remove(grape_stream_t* s) {
  pthread_mutex_lock(&hold_lock);
  if (s->on_hold_list) {
    s->on_hold_list = 0;
    grape__list_remove(&s->hold);
    holding_count(s, -1);
  }
  pthread_mutex_unlock(&hold_lock);
}

static __thread int my_tid __attribute__((tls_model("initial-exec")));

void grape__hold_begun(grape_stream_t* s) {
  s->holder = &grape__ctx_thread_tag;
  if (__builtin_expect(my_tid == 0, 0))
    my_tid = (int)syscall(SYS_gettid);
  s->holder_tid = my_tid;
  s->holder_counters = grape__counters_mine();
  s->wd_cpu = UINT64_MAX;
  s->wd_waits = 0;
  hold_list_add(s);
  watchdog_wake();
}

/* The streams on the holding list that match want (a kind, or -1: all). */
static size_t holders(grape_stream_t** out, size_t cap, int want) {
  size_t n = 0;
  pthread_mutex_lock(&hold_lock);
  for (grape_list_t* q = grape__list_first(&hold_list); q != &hold_list && n < cap; q = q->next) {
    grape_stream_t* s = GRAPE_LIST_DATA(q, grape_stream_t, hold);
    if (want < 0 || s->kind == want)
      out[n++] = s;
  }
  pthread_mutex_unlock(&hold_lock);
  return n;
}

/* ---- Flushing ---- */

void grape__flush_held_locked(grape_stream_t* s, grape_gc_cause_t cause) {
  grape_region_t* r = &s->region;
  if (r->cursor.held > r->cursor.sub) {
    int err = 0;
    grape_ctx_guard_t g = grape__ctx_enter(s->ctx, s->holder);
    GRAPE_NO_REENTRY(grape_gc_flush(cache, r, s->handle, cause, &err));
    grape__ctx_leave(g);
    if (err != 0)
      grape__note_flush_error(err);
  }
  __atomic_store_n(&r->cursor.node, NULL, __ATOMIC_RELAXED);   /* grape__may_hold peeks unlocked */
  if (s->on_hold_list)
    hold_list_remove(s);
}

void grape__cut_locked(grape_stream_t* s) {
  int err = 0;
  grape_ctx_guard_t g = grape__ctx_enter(s->ctx, s->holder);
  GRAPE_NO_REENTRY(grape_gc_cut(cache, &s->region, s->handle, &err));
  grape__ctx_leave(g);
  if (err != 0)
    grape__note_flush_error(err);
}

void grape__end_locked(grape_stream_t* s) {
  grape_gc_t* c = grape__gc();
  if (c != NULL && s->region.ops.n > 0) {
    int err = 0;
    /* Held work is submitted, and graphs are built, in the stream's context
     * (none yet: the calling thread's). */
    grape_ctx_guard_t g = grape__ctx_enter(s->ctx, s->holder);
    GRAPE_NO_REENTRY(grape_gc_end(c, &s->region, s->handle, grape__hold_start(s), &err));
    grape__ctx_leave(g);
    if (err != 0)
      grape__note_flush_error(err);
    if (__builtin_expect(grape_gc_stood_down(c) != NULL, 0) &&
        __atomic_load_n(&grape__pass, __ATOMIC_RELAXED) == GRAPE_PASS_OFF)
      __atomic_store_n(&grape__pass, GRAPE_PASS_PENDING, __ATOMIC_RELAXED);
    else if (__builtin_expect(grape_gc_pause_wanted(c), 0)) {
      int off = GRAPE_PASS_OFF;
      __atomic_compare_exchange_n(&grape__pass, &off, GRAPE_PASS_PAUSING, 0, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED);
    }
  } else {
    s->region.cursor.node = c != NULL ? grape__hold_start(s) : NULL;
  }
  /* Between regions a stream holds no buffers (an idle one costs its slot). */
  grape__region_release(&s->region);
  s->chunks++;
  if (s->on_hold_list)
    hold_list_remove(s);
}

static void flush_one(grape_stream_t* s) {
  spin_lock(&s->lock);
  grape__end_locked(s);
  spin_unlock(&s->lock);
}

void grape__order_slow(uintptr_t key) {
  grape_stream_t* s = grape__stream_of(key);
  if (s == NULL)
    return;
  if (grape__stream_kind(s) == GRAPE_STREAM_UNKNOWN)
    grape__stream_meet(s);
  int kind = grape__stream_kind(s);
  grape_stream_t* list[64];
  size_t n = 0;
  /* A stream not classified yet counts as blocking: it may be. */
  if (key == GRAPE_STREAM_LEGACY_KEY) {
    if (__atomic_load_n(&grape__holding_blocking, __ATOMIC_RELAXED) == 0)
      return;
    /* Every blocking stream's held ops precede the legacy stream's new work. */
    do {
      n = holders(list, 64, GRAPE_STREAM_BLOCKING);
      for (size_t i = 0; i < n; i++)
        flush_one(list[i]);
    } while (n == 64);
  } else if (kind != GRAPE_STREAM_NON_BLOCKING &&
             __atomic_load_n(&grape__holding_legacy, __ATOMIC_RELAXED) > 0) {
    grape_stream_t* legacy = grape__stream_peek(GRAPE_STREAM_LEGACY_KEY);
    if (legacy != NULL)
      flush_one(legacy);
  }
}

void grape__flush_holding_if(int (*pred)(const grape_stream_t* s, const void* arg), const void* arg,
                              grape_gc_cause_t cause) {
  grape_stream_t* list[64];
  size_t n, flushed;
  do {
    n = holders(list, 64, -1);
    flushed = 0;
    for (size_t i = 0; i < n; i++) {
      grape_stream_t* s = list[i];
      spin_lock(&s->lock);
      if (s->region.cursor.held > s->region.cursor.sub && pred(s, arg)) {
        grape__flush_held_locked(s, cause);
        flushed++;
      }
      spin_unlock(&s->lock);
    }
  } while (n == 64 && flushed > 0);
}

void grape__flush_stream(uintptr_t key) {
  grape__order_before(key);
  grape_stream_t* s = grape__stream_of(key);
  if (s != NULL)
    flush_one(s);
}

void grape__stream_synced(uintptr_t key) {
  grape_gc_t* c = grape__gc();
  grape_stream_t* s = c != NULL ? grape__stream_peek(key) : NULL;
  if (s == NULL)
    return;
  spin_lock(&s->lock);
  grape_gc_synced(c, &s->region);
  spin_unlock(&s->lock);
}

static void flush_each(grape_stream_t* s, void* arg) {
  (void)arg;
  flush_one(s);
}

void grape__flush_all(void) {
  grape__streams_each(flush_each, NULL);
}

void grape__stream_destroyed(uintptr_t key) {
  grape__flush_stream(key);
  grape__stream_forget(key);
}

/* ---- Errors met at flush time ---- */

__thread int grape__pending_error __attribute__((tls_model("initial-exec")));
int grape__pending_any;
static int pending_global;
static __thread int on_watchdog __attribute__((tls_model("initial-exec")));

void grape__note_flush_error(int err) {
  if (on_watchdog) {
    int expected = 0;
    __atomic_compare_exchange_n(&pending_global, &expected, err, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    __atomic_store_n(&grape__pending_any, 1, __ATOMIC_RELEASE);
  } else if (grape__pending_error == 0) {
    grape__pending_error = err;
  }
}

int grape__pending_take(int r, int peek) {
  int e = grape__pending_error;
  if (e == 0 && __atomic_load_n(&grape__pending_any, __ATOMIC_ACQUIRE)) {
    e = peek ? __atomic_load_n(&pending_global, __ATOMIC_RELAXED)
             : __atomic_exchange_n(&pending_global, 0, __ATOMIC_RELAXED);
    if (!peek)
      __atomic_store_n(&grape__pending_any, 0, __ATOMIC_RELAXED);
    return r == 0 && e != 0 ? e : r;
  }
  if (r != 0 || e == 0)
    return r;
  if (!peek)
    grape__pending_error = 0;
  return e;
}

/* ---- Device faults ---- */

static int is_sticky(int r) {
  switch (r) {
  case CUDA_ERROR_ECC_UNCORRECTABLE:
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
  case CUDA_ERROR_ASSERT:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_INVALID_ADDRESS_SPACE:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_LAUNCH_FAILED:
    return 1;
  default:
    return 0;
  }
}

void grape__graphs_stop(const char* why) {
  pthread_mutex_lock(&cache_lock);
  int first = stop_why[0] == '\0';
  if (first)
    snprintf(stop_why, sizeof(stop_why), "%s", why);
  __atomic_store_n(&graphs_on, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&cache_lock);
  if (!first || grape__mode != GRAPE_MODE_GRAPH)
    return;
  grape_log_warn("%s: graph mode holds no more work in this process (what it holds is submitted "
                 "now; results stay correct, replays end here)", why);
  grape__flush_all();
}

int grape__pass;
static char stood_down_why[512];   /* set once, under cache_lock */

void grape__stand_down(void) {
  pthread_mutex_lock(&cache_lock);
  int first = __atomic_load_n(&grape__pass, __ATOMIC_RELAXED) == GRAPE_PASS_PENDING &&
              stood_down_why[0] == '\0';
  if (first) {
    const char* why = cache != NULL ? grape_gc_stood_down(cache) : NULL;
    snprintf(stood_down_why, sizeof(stood_down_why), "%s", why != NULL ? why : "graph mode stood down");
  }
  __atomic_store_n(&graphs_on, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&cache_lock);
  if (!first)
    return;
  grape_log_info("%s: from here on the shim passes launches and copies straight to the driver "
                 "(what it holds is submitted now)", stood_down_why);
  grape__flush_all();
  __atomic_store_n(&grape__pass, GRAPE_PASS_ON, __ATOMIC_RELAXED);
}

__thread unsigned grape__pause_tick __attribute__((tls_model("initial-exec")));
static int pause_flushing;   /* under cache_lock: a pause's submission of what is held is under way */

void grape__pause(void) {
  pthread_mutex_lock(&cache_lock);
  int pausing = __atomic_load_n(&grape__pass, __ATOMIC_RELAXED) == GRAPE_PASS_PAUSING;
  int first = pausing && !pause_flushing && __atomic_load_n(&graphs_on, __ATOMIC_RELAXED);
  if (first) {
    __atomic_store_n(&graphs_on, 0, __ATOMIC_RELAXED);
    pause_flushing = 1;
  } else if (pausing && !pause_flushing) {
    /* Holding was off already (stopped for good, or dropped): nothing to
     * submit, and no launch should come back here. */
    __atomic_store_n(&grape__pass, GRAPE_PASS_PAUSED, __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&cache_lock);
  if (!first)
    return;
  grape_log_debug("graph mode pauses: what it has cost the program so far is past its budget "
                  "(GRAPE_BUDGET_PCT); what it holds is submitted now");
  grape__flush_all();
  pthread_mutex_lock(&cache_lock);
  __atomic_store_n(&grape__pass, GRAPE_PASS_PAUSED, __ATOMIC_RELAXED);
  pause_flushing = 0;
  pthread_mutex_unlock(&cache_lock);
}

void grape__pause_end(void) {
  grape_gc_t* c = grape__gc_peek();
  if (c == NULL || !grape_gc_resume(c))
    return;
  pthread_mutex_lock(&cache_lock);
  if (__atomic_load_n(&grape__pass, __ATOMIC_RELAXED) == GRAPE_PASS_PAUSED &&
      stop_why[0] == '\0' && stood_down_why[0] == '\0') {
    __atomic_store_n(&graphs_on, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&grape__pass, GRAPE_PASS_OFF, __ATOMIC_RELAXED);
    grape_log_debug("graph mode records again: what it cost is within its budget");
  }
  pthread_mutex_unlock(&cache_lock);
}

const char* grape__stood_down(void) {
  pthread_mutex_lock(&cache_lock);
  int set = stood_down_why[0] != '\0';
  pthread_mutex_unlock(&cache_lock);
  return set ? stood_down_why : NULL;
}

const char* grape__graphs_stopped(void) {
  pthread_mutex_lock(&cache_lock);
  int set = stop_why[0] != '\0';
  pthread_mutex_unlock(&cache_lock);
  return set ? stop_why : NULL;
}

void grape__saw_error(int r) {
  static int faulted;
  if (!is_sticky(r) || __atomic_exchange_n(&faulted, 1, __ATOMIC_RELAXED))
    return;
  /* Nothing is held from here on: later work goes to the driver, which
   * returns the fault's error, and what is held now is submitted (and fails
   * the same way, reported by the next call that reports errors). */
  __atomic_store_n(&graphs_on, 0, __ATOMIC_RELAXED);
  grape_log_info("a device fault (error %d) left the context unusable: graph mode stops", r);
  grape__flush_all();
}

/* ---- Function limits ---- */

uint32_t grape__dev_limits[6];   /* [0] == 0 until asked */

static int ask_device_limits(void) {
  static const CUdevice_attribute attrs[6] = {
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
    CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
    CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,  CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
  };
  CUdevice dev;
  int v[6];
  if (grape__rg.ctx_device(&dev) != CUDA_SUCCESS)
    return -1;
  for (int i = 0; i < 6; i++)
    if (grape__rg.device_attr(&v[i], attrs[i], dev) != CUDA_SUCCESS || v[i] <= 0)
      return -1;
  for (int i = 5; i >= 0; i--)
    __atomic_store_n(&grape__dev_limits[i], (uint32_t)v[i], __ATOMIC_RELAXED);
  return 0;
}

/* f's own limits: threads per block and dynamic shared memory (the latter as
 * raised with cuFuncSetAttribute). @return 0 or -1. */
static int ask_function_limits(grape_func_t* f) {
  int threads = 0, smem = 0;
  CUresult a, b;
  if (f->drv_kernel) {
    CUdevice dev;
    if (grape__rg.ctx_device(&dev) != CUDA_SUCCESS)
      return -1;
    a = grape__rg.kernel_attr(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->drv, dev);
    b = grape__rg.kernel_attr(&smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f->drv, dev);
  } else {
    a = grape__rg.func_attr(&threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f->drv);
    b = grape__rg.func_attr(&smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, f->drv);
  }
  if (a != CUDA_SUCCESS || b != CUDA_SUCCESS)
    return -1;
  __atomic_store_n(&f->lim_threads, (uint32_t)threads, __ATOMIC_RELAXED);
  __atomic_store_n(&f->lim_smem, (uint32_t)smem, __ATOMIC_RELAXED);
  return 0;
}

int grape__launch_fits_slow(grape_func_t* f, const uint32_t grid[3], const uint32_t block[3],
                            uint32_t shmem) {
  int st = __atomic_load_n(&f->lim_state, __ATOMIC_ACQUIRE);
  if (st == 0) {
    int ok;
    CUcontext cur;
    GRAPE_NO_REENTRY(cur = grape__ctx_current());
    if (cur == NULL)
      return 0;   /* asked again on a thread with a context */
    GRAPE_NO_REENTRY(ok = (__atomic_load_n(&grape__dev_limits[0], __ATOMIC_RELAXED) != 0 ||
                           ask_device_limits() == 0) &&
                          ask_function_limits(f) == 0);
    st = ok ? 1 : -1;
    __atomic_store_n(&f->lim_state, st, __ATOMIC_RELEASE);
  }
  return st == 1 && grape__launch_fits(f, grid, block, shmem);
}

void grape__limits_forget(const void* handle) {
  grape__func_changed();
  grape_func_t* f = grape__func_peek(handle);
  if (f != NULL)
    __atomic_store_n(&f->lim_state, 0, __ATOMIC_RELEASE);
}

/* ---- Watchdog ---- */

static pthread_mutex_t wd_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wd_cv = PTHREAD_COND_INITIALIZER;
static int wd_started;
static int own_work;   /* threads in the shim's own bounded work (grape__own_work) */

void grape__own_work(int on) {
  __atomic_add_fetch(&own_work, on ? 1 : -1, __ATOMIC_RELEASE);
}

/* The holding thread's state and CPU time (ns), from /proc: 'R' running or
 * waiting for a CPU, 'S'/'D' blocked, ...; 0 when the thread is gone or
 * unreadable. */
static char thread_state(int tid, uint64_t* cpu_ns) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/self/task/%d/stat", tid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  const char* paren = n > 0 ? (buf[n] = '\0', strrchr(buf, ')')) : NULL;
  if (paren == NULL || paren[1] != ' ')
    return 0;
  char state = paren[2];
  snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", tid);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0)
    return 0;
  buf[n] = '\0';
  *cpu_ns = strtoull(buf, NULL, 10);
  return state;
}

/* Whether a holder that issued nothing since the last look is only waiting
 * for a CPU (the machine is busy), given its state st and CPU time cpu read
 * just before (s locked): it runs on when it gets one, so flushing would
 * change what is submitted for no cause, and simulated time with it. A
 * holder that is blocked, gone, or spinning (its CPU time moved by half the
 * flush interval or more since the previous look, which also found it idle:
 * waiting on memory the GPU would write) is not. The first idle look only
 * notes the CPU time: measured from an older look, the time a busy holder
 * spent issuing ops counted as a spin. */
static int holder_descheduled(grape_stream_t* s, char st, uint64_t cpu, long us) {
  uint64_t before = s->wd_cpu;
  s->wd_cpu = cpu;
  if (st != 'R')
    return 0;
  return before == UINT64_MAX || cpu - before < (uint64_t)us * 500;
}

/* s issued ops since the last look, or holds none (s locked): its waits
 * and CPU time start afresh, from this look. */
static void holder_busy(grape_stream_t* s) {
  s->wd_waits = 0;
  s->wd_cpu = UINT64_MAX;   /* a spin is judged from a look that found it idle */
  s->wd_nops = s->region.ops.n;
  s->wd_chunks = s->chunks;
}

/* Whether s holds ops and got no new op since the last look (s locked). */
static int holder_idle(const grape_stream_t* s) {
  return s->on_hold_list && s->region.cursor.held > s->region.cursor.sub &&
         s->region.ops.n == s->wd_nops && s->chunks == s->wd_chunks;
}

/* One look: streams that held ops and got no new op since the last look are
 * flushed, under the context their ops were issued in, unless their holder
 * is only waiting for a CPU, is in a driver call that cannot wait for stream
 * work, or a thread is in the shim's own bounded work (for at most 1000 looks
 * in a row). The holder's state is read with its stream unlocked: a holder
 * that spun for the lock while the watchdog read /proc was taken for a spin. */
static void watchdog_look(long us) {
  grape_stream_t* list[256];
  size_t n = holders(list, 256, -1);
  for (size_t i = 0; i < n; i++) {
    grape_stream_t* s = list[i];
    if (!spin_trylock(&s->lock))
      continue;   /* in use right now: not idle */
    int idle = holder_idle(s), tid = s->holder_tid;
    const grape_counters_t* counters = s->holder_counters;
    if (!idle)
      holder_busy(s);
    spin_unlock(&s->lock);
    if (!idle)
      continue;
    uint64_t cpu = 0;
    int asked = __atomic_load_n(&own_work, __ATOMIC_ACQUIRE) == 0;
    char st = asked ? thread_state(tid, &cpu) : 0;
    /* A holder in a driver call that cannot wait returns by itself, however
     * long the OS keeps it from the lock it waits for. */
    int no_wait = asked && grape__thread_no_wait(counters, tid);
    if (!spin_trylock(&s->lock))
      continue;
    if (holder_idle(s) && s->holder_tid == tid) {
      int bounded = __atomic_load_n(&own_work, __ATOMIC_ACQUIRE) > 0 || !asked || no_wait;
      if (bounded)
        s->wd_cpu = UINT64_MAX;   /* a spin is judged from a look outside such work */
      if (s->wd_waits < 1000 && (bounded || holder_descheduled(s, st, cpu, us))) {
        s->wd_waits++;
      } else {
        grape__flush_held_locked(s, GRAPE_GC_WATCHDOG);
        holder_busy(s);   /* it holds nothing now */
      }
    } else {
      holder_busy(s);   /* it issued ops between the two locks */
    }
    spin_unlock(&s->lock);
  }
}

static void* watchdog_main(void* arg) {
  (void)arg;
  grape__depth = 1;   /* its driver calls are the shim's own */
  on_watchdog = 1;
  long us = grape__option_get(grape_option_flush_us);
  if (us < 10)
    us = 10;
  struct timespec half = {(us / 2) / 1000000, ((us / 2) % 1000000) * 1000};
  for (;;) {
    pthread_mutex_lock(&wd_lock);
    while (__atomic_load_n(&grape__holding, __ATOMIC_ACQUIRE) == 0)
      pthread_cond_wait(&wd_cv, &wd_lock);
    pthread_mutex_unlock(&wd_lock);
    nanosleep(&half, NULL);
    watchdog_look(us);
  }
  return NULL;
}

static void watchdog_wake(void) {
  pthread_mutex_lock(&wd_lock);
  if (!wd_started) {
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, watchdog_main, NULL) == 0)
      wd_started = 1;
    else
      grape__disable("cannot start the graph-mode watchdog thread");
    pthread_attr_destroy(&attr);
  }
  pthread_cond_signal(&wd_cv);
  pthread_mutex_unlock(&wd_lock);
}

/* ---- Teardown ---- */

/* A stream's kind and context are found again at its next use: after a
 * context teardown its handle value may come back for a new stream. */
static void stream_unclassify(grape_stream_t* s, void* arg) {
  (void)arg;
  spin_lock(&s->lock);
  __atomic_store_n(&s->kind, GRAPE_STREAM_UNKNOWN, __ATOMIC_RELAXED);
  s->ctx = NULL;
  s->region.cursor.ctx = NULL;
  s->handle = NULL;
  spin_unlock(&s->lock);
}

void grape__graphs_drop(void) {
  grape__flush_all();
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (c != NULL && __atomic_load_n(&graphs_on, __ATOMIC_RELAXED))
    GRAPE_NO_REENTRY(grape_gc_drop_graphs(c));
  grape__streams_each(stream_unclassify, NULL);
}

void grape__builds_settle(void) {
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (c != NULL && __atomic_load_n(&graphs_on, __ATOMIC_RELAXED))
    grape_gc_settle(c);
}

void grape__graphs_forget_image(const void* image) {
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (c != NULL && __atomic_load_n(&graphs_on, __ATOMIC_RELAXED)) {
    grape_gc_settle(c);   /* a build already begun still finds its functions */
    void** fns;
    size_t n;
    grape__func_image_drvs(image, &fns, &n);
    if (n > 0)
      grape_gc_drop_functions(c, fns, n);
    free(fns);
  }
  grape__func_forget_image(image);   /* (moves the functions' generation: a function
                                        loaded later may reuse the handles at other limits) */
}

void grape__graph_exit(void) {
  grape_gc_t* c = __atomic_load_n(&cache, __ATOMIC_ACQUIRE);
  if (c == NULL || !__atomic_load_n(&graphs_on, __ATOMIC_RELAXED))
    return;
  grape__depth++;   /* the program is exiting: everything below is the shim's own */
  grape__flush_all();
  __atomic_store_n(&graphs_on, 0, __ATOMIC_RELAXED);   /* nothing is held from here on */
  grape_gc_stop(c);   /* the builder's build in progress ends first */
  /* Executables are left to the driver, which frees them with their context:
   * destroying each here would only lengthen the program's exit. */
  grape__depth--;
}

void grape__graph_reset_child(void) {
  /* The parent's executables belong to its context and another of its
   * threads may have held a lock: forget, never free. */
  cache = NULL;
  grape__builder_reset_child();
  graphs_on = 0;
  pthread_mutex_init(&cache_lock, NULL);
  pthread_mutex_init(&hold_lock, NULL);
  pthread_mutex_init(&wd_lock, NULL);
  pthread_cond_init(&wd_cv, NULL);
  wd_started = 0;
  grape__list_init(&hold_list);
  grape__holding = grape__holding_legacy = grape__holding_blocking = 0;
  grape__pending_error = 0;
  grape__pending_any = pending_global = 0;
  /* A pause was the parent's ledger's (its cache is forgotten here). */
  if (grape__pass == GRAPE_PASS_PAUSING || grape__pass == GRAPE_PASS_PAUSED)
    grape__pass = GRAPE_PASS_OFF;
  pause_flushing = 0;
}

/* costs.c: the costs graph mode weighs, as the run measures them.
 *
 * DESIGN: the configured costs (GRAPE_COSTS, or the shim's defaults) are
 * first guesses; the run replaces each by what it measures: an eager launch
 * (the shim times one in sixteen on the program's thread), a graph launch and
 * a node update (timed around the driver calls in segment.c), a build per
 * node (timed on the thread that builds). Each sample joins a window; a
 * window's minimum joins a moving average: the least of a window is the
 * uncontended cost, so a sample stretched by something else (a preemption,
 * another thread holding the driver's lock) does not raise the estimate. A
 * build is rare and long: its window is one sample. A cost the user set in
 * GRAPE_COSTS stays as set (config.costs_fixed): tests force builds with it.
 *
 * A call's sample far above its cost, taken once background builds
 * have been queued, is a stall: another thread held the driver (a builder's
 * instantiation, where the driver locks against other threads). A few of them
 * and builds are no longer free to the program (grape__gc_builds_free): they
 * are then built only once eager runs have earned them, as inline. */
#include "internal.h"

#include <string.h>

#include "util/moving_avg.h"

/* A sample of a call on the program's thread (an eager launch, a graph
 * launch, a node update) beyond STALL_FACTOR times its cost plus STALL_NS,
 * once builds have been queued, counts as stalled by a build; STALLS_TO_JUDGE
 * of them and background builds are taken to cost the program their time.
 * One stall beyond STALL_LONG_NS counts as all of them: a call that waited
 * that long beside a build waited for its driver lock (or for the CPU the
 * builder took), and the program's calls that wait for the next build's
 * lock are mostly its syncs and the launches of segments just built, which
 * are never samples: a second stall may not come before the damage is done
 * (mlp_train under pessimistic: one stall of 320 us seen, five builds). */
#define STALL_FACTOR 4.0
#define STALL_NS 5000.0
#define STALL_LONG_NS 100000.0
#define STALLS_TO_JUDGE 2

static const uint32_t window[GRAPE_GC_COST__COUNT] = {
  [GRAPE_GC_COST_LAUNCH] = 8, [GRAPE_GC_COST_GRAPH_LAUNCH] = 4, [GRAPE_GC_COST_UPDATE] = 8,
  [GRAPE_GC_COST_BUILD_NODE] = 1, [GRAPE_GC_COST_SHIM_OP] = 8,
};

void grape__gc_costs_init(grape_gc_t* c) {
  const double first[GRAPE_GC_COST__COUNT] = {
    [GRAPE_GC_COST_LAUNCH] = c->cfg.launch_ns,
    [GRAPE_GC_COST_GRAPH_LAUNCH] = c->cfg.graph_launch_ns,
    [GRAPE_GC_COST_UPDATE] = c->cfg.update_ns,
    [GRAPE_GC_COST_BUILD_NODE] = c->cfg.build_node_ns,
    [GRAPE_GC_COST_SHIM_OP] = c->cfg.shim_op_ns,
  };
  for (int k = 0; k < GRAPE_GC_COST__COUNT; k++) {
    pthread_mutex_init(&c->meter[k].mu, NULL);
    atomic_store_explicit(&c->cost[k], first[k], memory_order_relaxed);
  }
}

void grape__gc_costs_destroy(grape_gc_t* c) {
  for (int k = 0; k < GRAPE_GC_COST__COUNT; k++)
    pthread_mutex_destroy(&c->meter[k].mu);
}

void grape_gc_cost_sample(grape_gc_t* c, grape_gc_cost_t k, double ns, uint32_t n) {
  if (c == NULL || (unsigned)k >= GRAPE_GC_COST__COUNT || !(ns >= 0) || ns > 1e12 ||
      (c->cfg.costs_fixed & (1u << k)))
    return;
  if (k == GRAPE_GC_COST_BUILD_NODE) {
    if (n == 0)
      return;
    if (!grape__gc_builds_free(c))
      grape__gc_ledger_build(c, ns);   /* the program waited for it */
    ns /= n;
  }
  struct cost_meter_s* m = &c->meter[k];
  if (k != GRAPE_GC_COST_BUILD_NODE && k != GRAPE_GC_COST_SHIM_OP) {
    double est = grape__gc_cost(c, k);
    uint32_t weight = ns > STALL_FACTOR * est + STALL_LONG_NS ? STALLS_TO_JUDGE : 1, before;
    if (ns > STALL_FACTOR * est + STALL_NS &&
        atomic_load_explicit(&c->queued_async, memory_order_relaxed) > 0 &&
        (before = atomic_fetch_add_explicit(&c->stalled_launches, weight, memory_order_relaxed)) <
            STALLS_TO_JUDGE &&
        before + weight >= STALLS_TO_JUDGE) {   /* the one sample that crosses the count */
      atomic_store_explicit(&c->builds_stall, 1, memory_order_relaxed);
      if (c->cfg.note != NULL)
        c->cfg.note("the program's driver calls were measured stalled while the builder thread built graphs "
                    "(the driver's lock held by its instantiations): from now on a graph is built "
                    "only once eager runs have earned it, as when building inline");
    }
  }
  pthread_mutex_lock(&m->mu);
  m->samples++;
  m->win_min = m->win_n == 0 || ns < m->win_min ? ns : m->win_min;
  if (++m->win_n >= window[k]) {
    grape__avg_add(&m->avg, &m->n, m->win_min, 8);
    m->win_n = 0;
    atomic_store_explicit(&c->cost[k], m->avg, memory_order_relaxed);
    atomic_fetch_or_explicit(&c->cost_measured, 1u << k, memory_order_relaxed);
  }
  pthread_mutex_unlock(&m->mu);
}

/* Whether builds have been timed (not so for a cost the user set). */
static int build_measured(const grape_gc_t* c) {
  return (atomic_load_explicit(&((grape_gc_t*)c)->cost_measured, memory_order_relaxed) >>
          GRAPE_GC_COST_BUILD_NODE) & 1;
}

/* Once measured, a build's fixed part is inside its per-node cost. */
static double build_ns_of(const grape_gc_t* c, uint32_t n, int measured, double per_node) {
  return (measured ? 0 : c->cfg.build_ns) + (double)n * per_node;
}

void grape__gc_build_seen(grape_gc_t* c, uint64_t at) {
  if (!build_measured(c))
    return;   /* not sampled (a cost the user set) */
  if (c->build_seen_n == BUILD_SEEN) {
    memmove(c->build_seen, c->build_seen + 1, (BUILD_SEEN - 1) * sizeof(c->build_seen[0]));
    c->build_seen_n--;
  }
  c->build_seen[c->build_seen_n++] = (struct build_seen_s){at, grape__gc_cost(c, GRAPE_GC_COST_BUILD_NODE)};
}

/* The estimate as of simulated moment t: the latest of the builds ended by
 * then (they end in order: one builder). The builder runs at most one build
 * past the program's clock, so BUILD_SEEN of them always reach back to t. */
static double build_ns_seen_by(const grape_gc_t* c, uint32_t n, uint64_t t) {
  for (uint32_t i = c->build_seen_n; i-- > 0;)
    if (c->build_seen[i].at <= t)
      return build_ns_of(c, n, 1, c->build_seen[i].per_node);
  return build_ns_of(c, n, 0, c->cfg.build_node_ns);
}

double grape__gc_build_ns_now(grape_gc_t* c, uint32_t n) {
  if (c->cfg.deterministic && c->cfg.async_builds)
    return build_ns_seen_by(c, n, grape__gc_now(c));
  return build_ns_of(c, n, build_measured(c), grape__gc_cost(c, GRAPE_GC_COST_BUILD_NODE));
}

/* ledger.c: whether graph mode pays for itself in this process.
 *
 * DESIGN: every op the caller records or holds costs it some host time of
 * its own (GRAPE_GC_COST_SHIM_OP, measured by the caller), and builds that
 * the program's thread waits for (inline, or a builder measured stalling it)
 * cost their length. Replays are what pays for both. The ledger adds up, per
 * window of LEDGER_WINDOW ops, what replays saved (the launches a replay
 * spared less its graph launches and updates, at most what its key's
 * measured cycles differ once they are measured), what keys that are
 * still warming up or being built would save as replays (their potential:
 * the window is not judged losing while a warm-up is worth finishing), and
 * what the caller's own work and those builds cost. LEDGER_LOSING losing
 * windows in a row, and graph mode stands down for the process: the caller
 * submits what it holds and stops recording (interpose/graph.c), so the
 * program runs as without it from then on. Gains never go below zero here:
 * keys whose replays lose are the per-key verdicts' job (verdict.c); this
 * only asks whether the rest covers the shim's own time. A cost of 0 per op
 * (GRAPE_COSTS shim=0, or a clock that does not see it) never stands down.
 *
 * The budget, where the caller's work per op is dear (DEAR_SHARE of an eager
 * launch or more): what graph mode has cost the program over the whole run
 * (the caller's own work, less what replays saved; builds already paid are
 * left out, since their graphs may still repay them) may reach
 * config.budget_share of how long the process has run. Past it the caller
 * pauses (records and holds nothing) until the process has run long enough
 * that the same cost is RESUME_SHARE of the budget, or the builds queued
 * before the pause are estimated done, then records again. A run that ends
 * before its replays pay, or whose replays never pay, therefore loses about
 * that share of its length, plus the one region that crossed the line.
 * Warm-up is not credited here (the windows above credit it): a short run
 * cannot tell a warm-up that will pay from one that will not. */
#include "internal.h"

#include <stdio.h>

#define LEDGER_WINDOW 512   /* ops per judged window */
#define LEDGER_LOSING 2     /* losing windows in a row before standing down */
#define RESUME_SHARE 0.5  /* a pause ends once the cost is this share of the budget */
#define DEAR_SHARE 0.2    /* the budget binds where the shim's work per op is this share of a launch */

/* What replaying r (of key k, after segs graph launches and updates node
 * updates) saved against running it eagerly, at least 0: the host time its
 * launches would have taken less its graph launches and updates, and no
 * more than its measured cycles differ, once they are measured (a device-
 * bound key saves what its device saves; eager cycles that a build stalled
 * would overstate it, hence the least of the two). */
static double saved_by_replay(const grape_gc_t* c, const grape_region_t* r, const gkey_t* k,
                              uint32_t segs, uint32_t updates) {
  double s = grape__gc_replay_saving(c, r->ops.n, segs, updates);
  if (k != NULL && k->n_eager >= 2 && k->n_graph >= 1 && k->cyc_eager - k->cyc_graph < s)
    s = k->cyc_eager - k->cyc_graph;
  return s > 0 ? s : 0;
}

/* What a replay of key k's eager sighting r would save, were k built (its
 * launches against one graph launch and its usual updates: the credit rule's
 * estimate, verdict.c), for a key that may still get its graphs or has them
 * (a region of a live key that began before it went live, or could not be
 * held this once); else 0. */
static double potential_of(const grape_gc_t* c, const grape_region_t* r, const gkey_t* k) {
  if (k == NULL || (k->state != K_WARM && k->state != K_BUILDING && k->state != K_LIVE) ||
      (long)r->ops.n < c->cfg.min_ops)
    return 0;
  double s = grape__gc_replay_saving(c, r->ops.n, 1, k->upd_avg);
  return s > 0 ? s : 0;
}

static void judge_window(grape_gc_t* c) {
  struct ledger_s* l = &c->ledger;
  double builds = atomic_load_explicit(&l->build_cost_ns, memory_order_relaxed);
  double cost = l->cost + (builds - l->build_seen);
  c->st.ledger_cost_ns += builds - l->build_seen;
  /* Judged only on the shim's measured (or user-set) cost, not the guess. */
  unsigned known = atomic_load_explicit(&c->cost_measured, memory_order_relaxed) | c->cfg.costs_fixed;
  if (!((known >> GRAPE_GC_COST_SHIM_OP) & 1)) {
    l->losing = 0;
  } else {
    c->st.ledger_windows++;
    int losing = l->saved + l->potential < cost;
    c->st.ledger_losing += (uint64_t)losing;
    l->losing = losing ? l->losing + 1 : 0;
  }
  if (l->losing >= LEDGER_LOSING && !atomic_load_explicit(&l->stood_down, memory_order_relaxed)) {
    snprintf(l->why, sizeof l->why,
             "graph mode did not pay for its own work in this process: over the last %d windows of "
             "%d ops (fewer where a pause ended one) its replays saved %.0f ns a window, and "
             "recording and holding ops "
             "(%.0f ns an op) and the builds the program waited for cost %.0f",
             LEDGER_LOSING, LEDGER_WINDOW, l->saved, grape__gc_cost(c, GRAPE_GC_COST_SHIM_OP), cost);
    c->st.stood_down_at_op = c->st.ops;
    atomic_store_explicit(&l->stood_down, 1, memory_order_release);
  }
  l->ops = 0;
  l->saved = l->potential = l->cost = 0;
  l->build_seen = builds;
}

/* What graph mode has cost the program so far, less what replays saved (ns;
 * under the lock). */
static double debt_ns(const grape_gc_t* c) {
  return c->st.ledger_cost_ns - c->ledger.build_seen - c->st.ledger_saved_ns;
}

/* How long the process had run at `now` (0: no clock). */
static double age_at(const grape_gc_t* c, uint64_t now) {
  return now > c->t_start ? (double)(now - c->t_start) : 0;
}

/* Builds set free by the user (GRAPE_COSTS=build=0,build_node=0: graphs at
 * once, as tests that mean replay ask): no pause holds replays back either. */
static int builds_forced(const grape_gc_t* c) {
  return ((c->cfg.costs_fixed >> GRAPE_GC_COST_BUILD_NODE) & 1) && c->cfg.build_ns <= 0 &&
         grape__gc_cost(c, GRAPE_GC_COST_BUILD_NODE) <= 0;
}

/* Pauses the caller when the run's cost is past its budget (under the lock;
 * on the shim's cost per op as known so far, the guess until measured: a
 * pause is undone, unlike standing down). */
static void budget_check(grape_gc_t* c) {
  struct ledger_s* l = &c->ledger;
  double shim = grape__gc_cost(c, GRAPE_GC_COST_SHIM_OP);
  if (c->cfg.budget_share <= 0 || shim <= 0 || shim < DEAR_SHARE * grape__gc_cost(c, GRAPE_GC_COST_LAUNCH) ||
      builds_forced(c) || atomic_load_explicit(&l->pause, memory_order_relaxed))
    return;
  uint64_t now = grape__gc_now(c);
  double age = age_at(c, now);
  if (age <= 0 || debt_ns(c) <= c->cfg.budget_share * age)
    return;
  c->st.pauses++;
  l->paused_since = age;
  /* The window ends with the pause and is judged as it stands: replays that
   * lose while recording comes in short spells still stand graph mode down
   * after two of them. */
  if (l->ops > 0)
    judge_window(c);
  l->resume_at = c->builds_until > now ? c->builds_until : 0;
  atomic_store_explicit(&l->pause, 1, memory_order_relaxed);
}

int grape_gc_pause_wanted(grape_gc_t* c) {
  return c != NULL && atomic_load_explicit(&c->ledger.pause, memory_order_relaxed);
}

int grape_gc_resume(grape_gc_t* c) {
  if (!grape_gc_pause_wanted(c))
    return 1;
  pthread_mutex_lock(&c->lock);
  struct ledger_s* l = &c->ledger;
  uint64_t now = grape__gc_now(c);
  double age = age_at(c, now);
  int go = atomic_load_explicit(&l->pause, memory_order_relaxed) &&
           ((l->resume_at != 0 && now >= l->resume_at) ||
            debt_ns(c) <= RESUME_SHARE * c->cfg.budget_share * age);
  if (go) {
    c->st.paused_ns += age - l->paused_since;
    l->paused_since = 0;
    l->resumed_at = now;
    atomic_store_explicit(&l->pause, 0, memory_order_relaxed);
  }
  pthread_mutex_unlock(&c->lock);
  return go;
}

void grape__gc_ledger_paused(const grape_gc_t* c, grape_gc_stats_t* st) {
  if (c->ledger.paused_since > 0)
    st->paused_ns += age_at(c, grape__gc_now(c)) - c->ledger.paused_since;
}

void grape__gc_ledger_account(grape_gc_t* c, const grape_region_t* r, const gkey_t* k,
                              int replayed, uint32_t segs, uint32_t updates) {
  struct ledger_s* l = &c->ledger;
  if (!c->graph_mode || c->stopping || r->ops.n == 0)
    return;
  double cost = (double)r->ops.n * grape__gc_cost(c, GRAPE_GC_COST_SHIM_OP);
  double saved = replayed ? saved_by_replay(c, r, k, segs, updates) : 0;
  l->cost += cost;
  l->saved += saved;
  l->potential += replayed ? 0 : potential_of(c, r, k);
  c->st.ledger_cost_ns += cost;
  c->st.ledger_saved_ns += saved;
  l->ops += r->ops.n;
  if (l->ops >= LEDGER_WINDOW)
    judge_window(c);
  budget_check(c);
}

void grape__gc_ledger_build(grape_gc_t* c, double ns) {
  double old = atomic_load_explicit(&c->ledger.build_cost_ns, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&c->ledger.build_cost_ns, &old, old + ns,
                                                memory_order_relaxed, memory_order_relaxed))
    ;
}

const char* grape_gc_stood_down(grape_gc_t* c) {
  if (c == NULL || !atomic_load_explicit(&c->ledger.stood_down, memory_order_acquire))
    return NULL;
  return c->ledger.why;
}

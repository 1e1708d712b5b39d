/* What each key does next, decided from what the cache measures: when a
 * graph is built (rent or buy), where a key is cut into segments, whether
 * its replays pay and whether they are measured slower than its eager runs;
 * and the accounting of every region's end that feeds those decisions.
 *
 * DESIGN: the verdicts are the cache's policy; the mechanism they drive is
 * segment.c (staging, building, installing segments) and trie.c (making a
 * key live or not). Every decision is made at a region's end (or a sync),
 * under the cache's lock, never on the launch path. The models and
 * constants are explained in docs/graph-mode.md. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/backoff.h"
#include "util/moving_avg.h"

/* ---- Rent or buy (builds on the program's thread) ---- */

/* Eager cost, in builds, that a key must have run up before a graph is built
 * for it on the program's thread. 1 is the classic rent-or-buy bound (at
 * most twice the best cost); 3 keeps short runs from paying for builds they
 * cannot earn back (measured on the examples, docs/performance.md). */
#define BUILD_CREDIT 3.0

/* True when k's average replay (its segments' launches and its updates)
 * costs no more than an eager submission per op. */
static int pays(const grape_gc_t* c, const gkey_t* k) {
  return grape__gc_replay_saving(c, k->nops, k->nsegs ? k->nsegs : 1, k->upd_avg) >= 0;
}

/* True when op i of r has the dimensions and parameter bytes of dims[i] and
 * params (laid out as r's). */
static inline int same_dims_params(const grape_op_dims_t* dims, const uint8_t* params,
                                   const grape_region_t* r, uint32_t i) {
  return __builtin_memcmp(&dims[i], &r->ops.dims[i], sizeof(r->ops.dims[i])) == 0 &&
         memcmp(params + r->ops.poff[i], r->ops.params + r->ops.poff[i], r->ops.keys[i].param_bytes) == 0;
}

/* A warm key sighted eagerly: credits what a replay would have saved (one
 * launch per op, against one graph launch and an update per op that differs
 * from the last sighting). */
static void earn_credit(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  uint32_t d = r->ops.n;
  if (k->last_dims != NULL) {
    d = 0;
    for (uint32_t i = 0; i < r->ops.n; i++)
      d += !same_dims_params(k->last_dims, k->last_params, r, i);
    memcpy(k->last_dims, r->ops.dims, r->ops.n * sizeof(*r->ops.dims));
    memcpy(k->last_params, r->ops.params, r->ops.plen);
  } else if ((k->last_dims = grape__gc_dup(r->ops.dims, r->ops.n * sizeof(*r->ops.dims))) == NULL ||
             (k->last_params = grape__gc_dup(r->ops.params, r->ops.plen)) == NULL) {
    free(k->last_dims);
    k->last_dims = NULL;
  }
  k->credit_ns += grape__gc_replay_saving(c, r->ops.n, 1, d);
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
  double h_e = k->host_eager_ns + k->nops * grape__gc_cost(c, GRAPE_GC_COST_LAUNCH);
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
  if (!c->cfg.cuts || !grape__gc_builds_free(c) || k->host_eager_n < 1)
    return grape__gc_stage(c, k, r, forced, nf);
  uint32_t whole = k->nops;
  double lo, dev = eager_dev(c, k, &lo);
  /* Should the device prove idle, each cut only costs a launch: a guess
   * adds no more cuts than keep half of what replaying saves eager launches. */
  double saved = grape__gc_replay_saving(c, k->nops, nf, 0);
  int extra = grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH) > 0 && saved > 0 ? (int)(0.5 * saved / grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH)) : 0;
  grape_cuts_in_t in = {k->nops, &whole, 1, &dev, forced, nf, k->host_eager_ns,
                        grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH), nf + (extra < MAX_CUTS ? extra : MAX_CUTS)};
  double f_old, f_new;
  if (lo > 0 && k->deferred == 0) {
    /* Even at the least device time its syncs allow, no faster: put off. */
    double f_lo;
    grape_cuts_in_t least = in;
    least.seg_dev_ns = &lo;
    grape__cuts_best(&least, cuts, &f_old, &f_lo);
    if (f_lo >= 0.99 * grape__cuts_eager_end(k->nops, k->host_eager_ns, grape__gc_cost(c, GRAPE_GC_COST_LAUNCH),
                                             lo + k->nkernels * c->cfg.gap_ns))
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
  int m = grape__gc_key_segments(c, k, segs, from, end);
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
  grape__gc_staging_remove(c, k);
  if (rc < 0) {
    grape__gc_unstage(c, k);
    grape__gc_make_dead(k, K_FAILED);
    return;
  }
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  int m = grape__gc_key_segments(c, k, segs, from, end);
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
  /* New cuts of a live key: its replays are judged from here on, by what
   * the new cuts do (the old ones' replays measured cuts that are gone). */
  if (k->state == K_LIVE)
    grape__gc_key_judge_afresh(k);
  /* First cuts go live, and so do the new cuts of a key measured slower on
   * the cuts they replace; new cuts of a key that stopped paying, or was
   * measured slower on the cuts it keeps, wait for its re-check. */
  int trial = k->state == K_SLOWER && k->slower_on_old_cuts;
  if ((k->state == K_BUILDING || trial) && grape__gc_make_live(c, k) != 0)
    grape__gc_make_dead(k, K_WARM);
}

/* A warm key of region r's ops gets its graphs, if it may. */
static void maybe_build(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  /* A region without a context is on a stream that is never held: no graph
   * is built for it. */
  if (!c->cfg.graphs || c->stopping || k->state != K_WARM || r->cursor.ctx == NULL ||
      (k->seen < (uint64_t)c->cfg.warmup && !k->warmed) || k->seen < k->build_at)
    return;
  /* On the program's thread, a graph is built once eager sightings have
   * cost, beyond what replays would have, BUILD_CREDIT times what building
   * it costs (rent, then buy): a path that stops recurring then wastes one
   * build, at most a third of what it cost eagerly. A builder thread builds
   * at the warm-up: the program does not wait for it. */
  if (!grape__gc_builds_free(c) && grape__gc_build_ns(c, r->ops.n) > 0 &&
      k->credit_ns < BUILD_CREDIT * grape__gc_build_ns(c, r->ops.n))
    return;
  if ((long)k->nops < c->cfg.min_ops) {
    k->state = K_SHORT;
    return;
  }
  for (uint32_t i = 0; i < r->ops.n; i++)
    if (r->ops.keys[i].kind == GRAPE_OP_KERNEL && r->ops.fns[i] == NULL) {
      k->state = K_UNSUPPORTED;
      return;
    }
  k->ctx = r->cursor.ctx;
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
  grape__gc_staging_add(c, k);
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
  int m = grape__gc_key_segments(c, k, segs, from, end);
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
  grape_cuts_in_t in = {k->nops, cuts, m, dev, forced, nf, k->host_ns, grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH), 0};
  double f_old, f_new;
  int n = grape__cuts_best(&in, out, &f_old, &f_new);
  if (k->host_eager_n > 0 &&
      f_new >= 0.99 * grape__cuts_eager_end(k->nops, k->host_eager_ns, grape__gc_cost(c, GRAPE_GC_COST_LAUNCH),
                                            total + k->nkernels * c->cfg.gap_ns)) {
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
  if (!grape__gc_builds_free(c))
    return;
  if (grape__gc_stage(c, k, r, out, n) != 0) {
    grape__gc_unstage(c, k);
    return;
  }
  c->st.cuts_added += n > m ? (uint64_t)(n - m) : 0;
  c->st.recuts++;
  grape__gc_staging_add(c, k);
}

/* ---- Verdicts: replays timed against eager runs ---- */

static void slower_for_now(grape_gc_t* c, gkey_t* k);

/* A plain mean of the first, then a moving average. A key's eager cycles
 * vary by several us with the regions that follow it (dynrnn's), so the
 * difference's standard error over 8 hid replays 21% slower (docs/graph-mode.md). */
#define CYCLE_SAMPLES 32
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
    /* Cuts that replace these are being built (a key's first cuts are a
     * guess from eager runs, which its first timed replays correct): the
     * verdict is on cuts that are going, and the new ones get their own
     * trial as soon as they are ready, not `recheck` sightings later. */
    int old_cuts = k->nstaged > 0;
    slower_for_now(c, k);
    k->slower_on_old_cuts = old_cuts;
  } else if (k->n_graph == CYCLE_SAMPLES) {
    k->slower = 0;
  }
}

/* k is not held until `recheck` << verdicts more sightings. */
static void slower_for_now(grape_gc_t* c, gkey_t* k) {
  grape__gc_make_dead(k, K_SLOWER);
  k->slower_on_old_cuts = 0;
  k->recut_at = 0;   /* assessed again at its first replay when tried again */
  k->recheck_at = grape__backoff(k->seen, (uint64_t)c->cfg.recheck, &k->slower);
}

/* The cycle of the chunk before r on its stream ends where r began. */
static void time_cycles(grape_gc_t* c, grape_region_t* r, gkey_t* k, int replayed) {
  if (c->cfg.now == NULL)
    return;
  if (r->timers.t_first == 0) {
    r->timers.prev_key = NULL;   /* an untimed chunk breaks the chain */
    return;
  }
  /* (A cycle that spans a pause of graph mode (ledger.c) is no sample.) */
  if (r->timers.prev_key != NULL && !r->timers.prev_skip && r->timers.t_first > r->timers.prev_t &&
      r->timers.prev_t >= c->ledger.resumed_at) {
    gkey_t* pk = grape__gc_key_known(c, r->timers.prev_key);
    if (pk != NULL)
      note_cycle(c, pk, r->timers.prev_replayed, r->timers.t_first - r->timers.prev_t);
  }
  r->timers.prev_key = k;
  r->timers.prev_replayed = replayed;
  r->timers.prev_t = r->timers.t_first;
  r->timers.prev_skip = 0;
}

/* ---- Strays: live prefixes of paths that do not pay ---- */

/* Regions of a key judged not worth holding (slower, or not paying) that a
 * live key's prefix still held and replayed in part, STRAY_LIMIT of them and
 * more than STRAY_SHARE of that key's own replays since it went live: the
 * live key stops being held (as measured slower). Its own sightings would
 * never show it: a path that recurs rarely (mlp_train's clipped step) whose
 * first segment every common step replays, then leaves. */
#define STRAY_LIMIT 8
#define STRAY_SHARE 2
#define STRAY_WALK 256   /* trie nodes looked at below the divergence, at most */

static void stray_use(grape_gc_t* c, const gkey_t* k, uint32_t graphed) {
  if (k->node == NULL || graphed == 0 || graphed >= k->nops)
    return;
  grape_gc_node_t* at = k->node;
  while (at != NULL && at->depth > graphed)
    at = at->parent;
  if (at == NULL || at->depth != graphed || __atomic_load_n(&at->live, __ATOMIC_RELAXED) == 0)
    return;
  /* The live keys whose paths go through `at`: terminals of its subtree. */
  grape_gc_node_t* stack[STRAY_WALK];
  int top = 0, seen = 0;
  stack[top++] = at;
  while (top > 0 && seen++ < STRAY_WALK) {
    grape_gc_node_t* n = stack[--top];
    gkey_t* x = __atomic_load_n(&n->term, __ATOMIC_RELAXED);
    if (x != NULL && x != k && x->state == K_LIVE && ++x->stray >= STRAY_LIMIT &&
        x->stray > STRAY_SHARE * x->n_graph)
      slower_for_now(c, x);
    for (grape_gc_node_t* ch = n->child; ch != NULL && top < STRAY_WALK; ch = ch->sibling)
      if (__atomic_load_n(&ch->live, __ATOMIC_RELAXED))
        stack[top++] = ch;
  }
}

/* ---- Accounting ---- */

/* The host time of a replayed region, its graph launches and updates left
 * out (what cuts.c calls host_ns). */
static void note_host(grape_gc_t* c, gkey_t* k, const grape_region_t* r, uint64_t t_end,
                      uint32_t segs, uint32_t updates) {
  if (r->timers.t_first == 0 || t_end <= r->timers.t_first || c->built_now)
    return;   /* (a graph built on the program's thread in it measures the build) */
  double h = (double)(t_end - r->timers.t_first) -
             segs * grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH) -
             updates * grape__gc_cost(c, GRAPE_GC_COST_UPDATE);
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
int grape__gc_account(grape_gc_t* c, grape_region_t* r, gkey_t* k, uint64_t t_end, uint32_t segs,
                      uint32_t updates) {
  c->st.regions++;
  c->st.ops += r->ops.n;
  if (k == NULL && (k = grape__gc_key_find_or_add(c, grape__fp_keys(r->ops.keys, r->ops.n), r)) == NULL)
    return -ENOMEM;
  k->seen++;
  grape__list_move_tail(&c->key_lru, &k->lru);
  path_t* p = grape__gc_path_find_or_add(c, k, r);
  if (p == NULL)
    return -ENOMEM;
  p->count++;
  grape__list_move_tail(&c->path_lru, &p->lru);
  int replayed = r->ops.n > 0 && r->cursor.graphed == r->ops.n;
  p->hits += replayed;
  time_cycles(c, r, k, replayed);
  account_key(c, r, k, replayed, t_end, segs, updates);
  grape__gc_ledger_account(c, r, k, replayed, segs, updates);
  r->timers.prev_skip = c->built_now;   /* a cycle that built a graph measures the build */
  r->timers.prev_end = !replayed && r->cursor.graphed == 0 && !c->built_now ? t_end : 0;
  c->built_now = 0;
  return 0;
}

static void account_key(grape_gc_t* c, grape_region_t* r, gkey_t* k, int replayed, uint64_t t_end,
                        uint32_t segs, uint32_t updates) {
  if (replayed) {
    c->st.graph_hits++;
    k->hits++;
    k->upd_avg += ((double)r->cursor.updates - k->upd_avg) / 8;
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
  if (r->timers.t_first != 0 && t_end > r->timers.t_first && !c->built_now &&
      (r->cursor.graphed == 0 || k->host_eager_n == 0)) {
    /* An eager sighting: the host's own time to issue it, its launches left
     * out (those after its clock started: a first op recorded once it had
     * gone to the driver was launched before, and the rest of that chunk
     * went to the driver too, none in graphs). One that replayed another
     * key's first segments, then left them, stands in only while the key
     * has no other (its span also holds what those replays waited for), its
     * graph launches and updates left out. */
    uint32_t launched = r->ops.n - r->cursor.graphed - (r->timers.first_sent != 0);
    double h = (double)(t_end - r->timers.t_first) -
               launched * grape__gc_cost(c, GRAPE_GC_COST_LAUNCH) -
               segs * grape__gc_cost(c, GRAPE_GC_COST_GRAPH_LAUNCH) -
               updates * grape__gc_cost(c, GRAPE_GC_COST_UPDATE);
    grape__avg_add(&k->host_eager_ns, &k->host_eager_n, h > 0 ? h : 0, 8);
  }
  switch (k->state) {
  case K_WARM:
    if (!grape__gc_builds_free(c) && c->cfg.graphs)   /* observe mode builds nothing: no credit to keep */
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
    int m = grape__gc_key_segments(c, k, segs_, from, end);
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
      k->ctx = r->cursor.ctx;
      if (stage_current(c, k, r) == 0) {
        grape__gc_staging_add(c, k);
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
    stray_use(c, k, r->cursor.graphed);
    grape__gc_region_sets(c, k, r);
    recheck(c, k, r);
    break;
  case K_SLOWER:
    c->st.graph_misses++, k->misses++;
    stray_use(c, k, r->cursor.graphed);
    grape__gc_region_sets(c, k, r);
    if (k->seen >= k->recheck_at)
      grape__gc_make_live(c, k);
    break;
  default:
    break;
  }
}

/* Keys whose staged segments are ready go live (or switch cuts). */
void grape__gc_install_ready(grape_gc_t* c) {
  for (size_t i = 0; i < c->staging_cap; i++) {
    gkey_t* k = c->staging[i];
    if (k != NULL && k->nstaged > 0)
      try_install(c, k);
  }
}


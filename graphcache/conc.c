/* Concurrency plans per segment: chosen by prediction, kept by measurement.
 *
 * DESIGN (GRAPE_CONCURRENCY=safe): a segment replays as a chain until its
 * chain has measured device times (its timer, segment.c). Then, after a
 * replay of its key, its ops' DAG (dag.h) is made from that replay's
 * footprints; if two GEMMs in it are independent, the estimator predicts
 * the chain, the full branches and 2 and 4 lanes from each kernel's work
 * (scaled to the measured chain) and occupancy (asked of the driver once
 * per function, block and shared memory). The best plan is built, as one
 * more executable of the segment (its plan generation tags it), only when
 * predicted at least 5% faster. On trial, replays alternate between the
 * chain and the candidate, each timed on the device's clock by the
 * segment's timer, until both have TRIAL_SAMPLES; the candidate is kept
 * when its mean is at least 3% below the chain's, else its executables are
 * dropped and the segment is looked at again after RETRY_LAUNCHES
 * launches, doubling with each revert. Only scheduling changes: the same
 * nodes, kernels, grids and parameters, other edges.
 *
 * Every launch of a plan first re-verifies it against the held ops
 * (grape__plan_valid: the pairs it leaves unordered must still be
 * independent in this replay's footprints); a replay that fails runs the
 * chain. The verification and the choice are O(pairs) at a cut or region
 * end; the DAG and the estimates are made once per look, under the cache's
 * lock, never on the launch path.
 *
 * Observe (and safe): each new path's DAG is summarised once for the
 * report (dag.h's grape_dag_summary_t) with nominal occupancy, so that
 * observing makes no driver call of its own. */
#include "internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/backoff.h"
#include "util/grow.h"

#define TRIAL_SAMPLES 4      /* timed launches of each plan before a verdict */
#define PREDICT_GAIN 0.95    /* a candidate is built when predicted this fast or faster */
#define MEASURE_GAIN 0.97    /* ... and kept when measured so */
#define RETRY_LAUNCHES 64    /* launches before a segment is looked at again (doubling) */
#define MIN_CHAIN_SAMPLES 1  /* timed chain launches before a first look */

enum conc_state_e {
  CS_NEW = 0,    /* not looked at yet */
  CS_NONE,       /* nothing predicted to gain; looked at again later */
  CS_BUILDING,   /* the candidate's executable is being built */
  CS_TRIAL,      /* replays alternate between the chain and the candidate */
  CS_KEPT,       /* the candidate replays (where its footprints allow) */
  CS_BACKOFF,    /* the candidate was measured no faster, or lost: later */
};

struct conc_s {
  int state;
  uint32_t gen;              /* the candidate's plan generation (its executables' tag) */
  grape_plan_t plan;         /* the candidate (BUILDING, TRIAL, KEPT) */
  double est_chain, est_plan;
  double sum[2];             /* trial: device time of the chain [0] and the candidate [1] */
  uint32_t cnt[2];
  uint32_t trial_n;          /* trial launches so far */
  uint32_t last;             /* plan generation of the last launch (its timer's sample) */
  uint64_t retry_at;         /* seg->launches when to look again */
  uint32_t backoffs;         /* reverts and fruitless looks: the wait doubles */
  int reverted;              /* a candidate of it was measured no faster */
  int held;                  /* go: the candidate measured faster but too dear for its host
                                cost alone, kept only while a go plan may pay for it */
  int go_may;                /* go: the candidate has a GEMM go may target (go_targetable) */
  /* go mode (GO_*): a plan whose GEMMs carry SM-count targets, tried
   * against the kept safe plan (state CS_KEPT) and kept only when measured
   * faster than it. */
  int go;
  uint32_t go_gen;           /* its executables' generation (GO_GEN_BASE + a count) */
  grape_plan_t go_plan;
  uint32_t* go_target;       /* per op of the segment: the SM-count target, 0: none */
  uint32_t* go_blocks;       /* ... and the blocks it had untargeted (a targeted replay has fewer) */
  uint32_t go_nt;            /* ops with a target */
  double go_est_safe, go_est;
  double go_sum[2];          /* trial: the safe plan [0], the go plan [1] */
  uint32_t go_cnt[2];
  uint64_t go_retry_at;
  uint32_t go_backoffs;
  int go_reverted;
  uint64_t go_tried;         /* candidates (plan kind x target, go_look) measured no faster */
  uint32_t go_bit;           /* ... the one on trial */
  int armed;                 /* the targets are published for the segment's next replay */
  /* The shim's extra host time for this segment's plans: the least
   * re-verification at a plan launch seen (a cold first call is no
   * measure of the steady state), and how many were timed. */
  double host_ns;
  uint64_t host_n;
  /* The footprints (spans of every op, in order) of the last replay each
   * plan was verified against, [0] the safe plan, [1] the go plan: a replay
   * with the same footprints needs no pairwise check. */
  struct sig_s {
    uint64_t* v;
    size_t len, cap;
  } sig[2], now;
};

enum go_state_e {
  GO_NEW = 0,    /* not looked at */
  GO_NONE,       /* no target predicted to gain; looked at again later */
  GO_BUILDING,   /* the go plan's executable is being built */
  GO_TRIAL,      /* targeted replays (the go plan) alternate with the safe plan */
  GO_KEPT,       /* targets stay published; the go plan replays */
  GO_BACKOFF,    /* measured no faster (or lost): targets withdrawn, later */
};

#define GO_GEN_BASE 0x10000u   /* go plans' generations: never a safe candidate's */
#define HOST_SHARE 0.02        /* a plan's host cost must stay under this share of what its
                                  segment's replay saves (config.plan_host_share, when set) */

/* ---- Occupancy, asked of the driver once per (function, block, shared memory) ---- */

typedef struct occ_s {
  void* fn;
  uint64_t shape;            /* threads per block << 32 | dynamic shared memory */
  uint32_t per_sm;
} occ_t;

struct conc_cache_s {
  occ_t* v;
  size_t len, cap;
  uint32_t sms;              /* 0: not asked yet */
  double hint_min_ns;        /* the least host time seen to apply one target (0: none yet) */
  double check_min_ns;       /* the least host time seen to re-check one op before a plan's
                                replay (0: none yet) */
};

static uint32_t occupancy(grape_gc_t* c, const grape_gc_op_t* op, uint32_t* sms) {
  if (c->conc == NULL && (c->conc = calloc(1, sizeof(*c->conc))) == NULL)
    return 1;
  struct conc_cache_s* k = c->conc;
  uint64_t shape = ((uint64_t)op->dims->block[0] * op->dims->block[1] * op->dims->block[2]) << 32 |
                   op->dims->shmem;
  for (size_t i = 0; i < k->len; i++)
    if (k->v[i].fn == op->fn && k->v[i].shape == shape) {
      *sms = k->sms;
      return k->v[i].per_sm;
    }
  uint32_t per_sm = 1, n = 0;
  if (c->drv.occupancy == NULL || c->drv.occupancy(c->drv.self, op, &per_sm, &n) != 0 ||
      per_sm < 1)
    per_sm = 1;
  if (n > 0)
    k->sms = n;
  occ_t* v = grape__grow(k->v, &k->cap, k->len + 1, sizeof(*v), 16);
  if (v != NULL) {
    k->v = v;
    v[k->len++] = (occ_t){op->fn, shape, per_sm};
  }
  *sms = k->sms;
  return per_sm;
}

void grape__conc_destroy(grape_gc_t* c) {
  if (c->conc != NULL)
    free(c->conc->v);
  free(c->conc);
  c->conc = NULL;
}

/* ---- Building a plan's executable ---- */

static int add_nodes(const grape_gc_driver_t* drv, void* graph, const grape_region_t* r,
                     uint32_t from, uint32_t n, void* timer, const void* layout, void** nodes) {
  const grape_plan_t* p = layout;
  int err = 0;
  void* first = NULL;
  void** deps = malloc(((size_t)n + 1) * sizeof(*deps));
  uint8_t* has_succ = calloc((size_t)n + 1, 1);
  if (deps == NULL || has_succ == NULL) {
    err = -ENOMEM;
    goto out;
  }
  if (timer != NULL && (err = drv->graph_add_timer_deps(drv->self, &first, graph, NULL, 0, timer, 0)) != 0)
    goto out;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = p->order[k];
    size_t nd = 0;
    for (uint32_t e = p->pred_off[i]; e < p->pred_off[i + 1]; e++) {
      deps[nd++] = nodes[p->pred[e]];
      has_succ[p->pred[e]] = 1;
    }
    if (nd == 0 && first != NULL)
      deps[nd++] = first;
    grape_gc_op_t op = grape__gc_op_view(r, from + i);
    if ((err = drv->graph_add_deps(drv->self, &nodes[i], graph, deps, nd, &op)) != 0)
      goto out;
  }
  if (timer != NULL) {
    size_t nd = 0;
    for (uint32_t i = 0; i < n; i++)
      if (!has_succ[i])
        deps[nd++] = nodes[i];
    void* last;
    err = drv->graph_add_timer_deps(drv->self, &last, graph, deps, nd, timer, 1);
  }
out:
  free(deps);
  free(has_succ);
  return err;
}

/* ---- The state of a segment's plan ---- */

static const grape_plan_t* plan_of(const seg_t* seg, uint32_t gen) {
  const conc_t* s = seg->conc;
  if (s != NULL && gen != 0 && gen == s->go_gen && s->state == CS_KEPT &&
      (s->go == GO_BUILDING || s->go == GO_TRIAL || s->go == GO_KEPT))
    return &s->go_plan;
  if (s == NULL || gen == 0 || gen != s->gen ||
      (s->state != CS_BUILDING && s->state != CS_TRIAL && s->state != CS_KEPT))
    return NULL;
  return &s->plan;
}

static const void* layout(const seg_t* seg, uint32_t gen) {
  return plan_of(seg, gen);
}

static void* layout_copy(const void* l) {
  grape_plan_t* p = malloc(sizeof(*p));
  if (p != NULL && grape__plan_copy(l, p) != 0) {
    free(p);
    p = NULL;
  }
  return p;
}

static void layout_free(void* l) {
  grape__plan_free(l);
  free(l);
}

static void go_publish(seg_t* seg, conc_t* s, int on);

static int laying_out(const grape_gc_t* c, const seg_t* seg) {
  /* Only a kept plan replays instead of the chain, so only its segment
   * gives up the chain's free sets. A segment whose plan is being built or
   * tried replays the chain meanwhile, and a trial may not end before the
   * run does (4 of moe's 5 plans at --iters 60): held back until then,
   * with no plan ever replayed, moe --iters 60 under fair ended 6.5%
   * behind the chain, 1.0% so. (The builder takes a key's first graphs
   * before sets and plans either way: segment.c.) */
  return c->cfg.concurrency >= GRAPE_GC_CONC_SAFE && seg->conc != NULL &&
         seg->conc->state == CS_KEPT;
}

static void freed(seg_t* seg) {
  if (seg->conc != NULL) {
    for (int i = 0; i < 2; i++)
      free(seg->conc->sig[i].v);
    free(seg->conc->now.v);
    go_publish(seg, seg->conc, 0);
    grape__plan_free(&seg->conc->plan);
    grape__plan_free(&seg->conc->go_plan);
    free(seg->conc->go_target);
    free(seg->conc->go_blocks);
  }
  free(seg->conc);
  seg->conc = NULL;
}

/* go: publishes (on) or withdraws the targets of seg's go plan on the trie
 * nodes its ops lead on from, where a library call asks for them
 * (grape_gc_hint). Only the nodes it set are cleared. */
static void go_publish(seg_t* seg, conc_t* s, int on) {
  if (s->go_target == NULL || (on ? 1 : 0) == s->armed)
    return;
  s->armed = on ? 1 : 0;
  grape_gc_node_t* x = seg->end;
  for (uint32_t step = 1; step <= seg->n && x != NULL && x->parent != NULL; step++) {
    x = x->parent;
    uint32_t i = seg->n - step;
    if (s->go_target[i] != 0)
      __atomic_store_n(&x->hint, on ? s->go_target[i] : 0, __ATOMIC_RELAXED);
  }
}

/* Destroys seg's executables of generation gen. */
static void drop_gen(grape_gc_t* c, seg_t* seg, uint32_t gen) {
  for (int i = seg->nvar; i-- > 0;)
    if (seg->var[i]->gen == gen)
      grape__gc_exec_drop(c, seg->var[i]);
}

static void drop_candidate(grape_gc_t* c, seg_t* seg, conc_t* s, int measured);

/* go: a safe plan held for go (held) goes with the go plan that did not pay
 * for it: dropped for its host cost, as its verdict would have. */
static void go_unhold(grape_gc_t* c, seg_t* seg, conc_t* s) {
  if (!s->held)
    return;
  s->held = 0;
  c->st.conc_host_dropped++;
  c->st.conc_reverted++;
  drop_candidate(c, seg, s, 1);
}

/* The go plan's executables and targets go; looked at again later. */
static void go_drop(grape_gc_t* c, seg_t* seg, conc_t* s, int measured) {
  go_publish(seg, s, 0);
  if (s->go_gen != 0)
    drop_gen(c, seg, s->go_gen);
  grape__plan_free(&s->go_plan);
  free(s->go_target);
  free(s->go_blocks);
  s->go_target = s->go_blocks = NULL;
  s->go_nt = 0;
  s->go = GO_BACKOFF;
  s->go_reverted |= measured;
  if (measured)
    s->go_tried |= (uint64_t)1 << s->go_bit;   /* the next look tries another */
  s->go_retry_at = grape__backoff(seg->launches, RETRY_LAUNCHES, &s->go_backoffs);
  go_unhold(c, seg, s);
}

/* The candidate's executables go; the segment is looked at again later. */
static void drop_candidate(grape_gc_t* c, seg_t* seg, conc_t* s, int measured) {
  if (s->go != GO_NEW && s->go != GO_NONE && s->go != GO_BACKOFF)
    go_drop(c, seg, s, 0);
  drop_gen(c, seg, s->gen);
  grape__plan_free(&s->plan);
  s->state = CS_BACKOFF;
  s->reverted |= measured;
  s->retry_at = grape__backoff(seg->launches, RETRY_LAUNCHES, &s->backoffs);
}

/* Whether an executable of generation gen exists (1), usable now (2). */
static int gen_ready(const grape_gc_t* c, const seg_t* seg, uint32_t gen) {
  uint64_t t = grape__gc_now(c);
  int have = 0;
  for (int i = 0; i < seg->nvar && have < 2; i++)
    if (seg->var[i]->gen == gen)
      have = seg->var[i]->ready_at <= t ? 2 : 1;
  return have;
}

static int candidate_ready(const grape_gc_t* c, const seg_t* seg, const conc_t* s) {
  return gen_ready(c, seg, s->gen);
}

/* The clock a plan's host cost is measured on: the program's (the one
 * replays are timed with, on which the shim's own work shows: config
 * checked), so that on the sim decisions do not depend on how fast the
 * machine ran; the monotonic one without it. */
static double host_now(const grape_gc_t* c) {
  if (c->cfg.now != NULL)
    return (double)c->cfg.now();
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* The footprints of r's ops [from, from + n) in order into g: per op, its
 * barrier flag and span counts, then its spans. @return 0 or -ENOMEM. */
static int sig_make(struct sig_s* g, const grape_region_t* r, uint32_t from, uint32_t n) {
  g->len = 0;
  for (uint32_t i = 0; i < n; i++) {
    grape_dag_op_t o;
    grape__dag_ops(r, from + i, 1, &o);
    size_t need = g->len + 1 + 2 * ((size_t)o.nr + o.nw);
    if (need > g->cap) {
      size_t cap = need * 2 > 64 ? need * 2 : 64;
      uint64_t* v = realloc(g->v, cap * sizeof(*v));
      if (v == NULL)
        return -ENOMEM;
      g->v = v;
      g->cap = cap;
    }
    g->v[g->len++] = (uint64_t)o.barrier << 48 | (uint64_t)o.nr << 24 | o.nw;
    for (uint32_t k = 0; k < (uint32_t)o.nr + o.nw; k++) {
      g->v[g->len++] = o.s[k].lo;
      g->v[g->len++] = o.s[k].hi;
    }
  }
  return 0;
}

/* Whether plan p (w: 0 safe, 1 go) may replay r's held ops from `from`:
 * at once when their footprints are those it was last verified against
 * (or made from), else by its pairwise check (grape__plan_valid). Its host
 * time is counted as the plan's. */
static int plan_valid_timed(grape_gc_t* c, conc_t* s, int w, const grape_plan_t* p,
                            const grape_region_t* r, uint32_t from) {
  double t0 = host_now(c);
  int ok, same = sig_make(&s->now, r, from, p->n) == 0 && s->now.len == s->sig[w].len &&
                 memcmp(s->now.v, s->sig[w].v, s->now.len * sizeof(*s->now.v)) == 0;
  ok = same || grape__plan_valid(p, r, from);
  if (ok && !same && s->now.len > 0) {   /* these footprints are verified now */
    struct sig_s t = s->sig[w];
    s->sig[w] = s->now;
    s->now = t;
  }
  if (c->cfg.checked != NULL)
    c->cfg.checked(p->n);
  double ns = host_now(c) - t0;
  if (c->conc != NULL && p->n > 0 && (c->conc->check_min_ns == 0 || ns / p->n < c->conc->check_min_ns))
    c->conc->check_min_ns = ns / p->n;
  if (s->host_n == 0 || ns < s->host_ns)
    s->host_ns = ns;
  s->host_n++;
  c->st.plan_host_ns += ns;
  c->st.plan_host_n++;
  return ok;
}

/* True when every targeted op of the go plan was launched with its target's
 * grid: the library calls of this replay took the published targets. */
static int go_targeted(const conc_t* s, const grape_region_t* r, uint32_t from) {
  for (uint32_t i = 0; i < s->go_plan.n; i++) {
    const uint32_t* g = r->ops.dims[from + i].grid;
    if (s->go_target[i] != 0 && (uint64_t)g[0] * g[1] * g[2] >= s->go_blocks[i])
      return 0;
  }
  return 1;
}

/* go: the generation of a replay of a segment whose safe plan is kept, or
 * 0 to go on with the safe plan. */
static uint32_t go_pick(grape_gc_t* c, seg_t* seg, conc_t* s, const grape_region_t* r,
                        uint32_t from) {
  if (s->go != GO_BUILDING && s->go != GO_TRIAL && s->go != GO_KEPT)
    return 0;
  if (s->go == GO_BUILDING && c->cfg.deterministic && seg->queued > 0)
    grape__gc_seg_ready(c, seg);
  int have = gen_ready(c, seg, s->go_gen);
  if (have < 2) {
    if (have == 0 && seg->queued == 0)
      go_drop(c, seg, s, 0);
    return 0;
  }
  if (s->go == GO_BUILDING) {
    s->go = GO_TRIAL;
    s->go_sum[0] = s->go_sum[1] = 0;
    s->go_cnt[0] = s->go_cnt[1] = 0;
    go_publish(seg, s, 1);   /* the next replay takes the targets */
    return 0;
  }
  if (!go_targeted(s, r, from))
    return 0;
  if (!plan_valid_timed(c, s, 1, &s->go_plan, r, from)) {
    c->st.conc_fallbacks++;
    return 0;
  }
  return s->go_gen;
}

static uint32_t pick(grape_gc_t* c, seg_t* seg, const grape_region_t* r, uint32_t from) {
  conc_t* s = seg->conc;
  if (s == NULL || (s->state != CS_BUILDING && s->state != CS_TRIAL && s->state != CS_KEPT))
    return 0;
  if (s->state == CS_BUILDING && c->cfg.deterministic && seg->queued > 0)
    grape__gc_seg_ready(c, seg);   /* as for any build: times must not depend on the OS */
  int have = candidate_ready(c, seg, s);
  if (have < 2) {
    if (have == 0 && seg->queued == 0)   /* its build failed, or it was evicted */
      drop_candidate(c, seg, s, 0);
    return 0;
  }
  if (s->state == CS_BUILDING) {
    s->state = CS_TRIAL;
    s->trial_n = 0;
    s->sum[0] = s->sum[1] = 0;
    s->cnt[0] = s->cnt[1] = 0;
  }
  if (s->state == CS_KEPT) {
    uint32_t g = go_pick(c, seg, s, r, from);
    if (g != 0 || s->state != CS_KEPT)   /* a held safe plan goes with its lost go plan */
      return g;
  }
  if (!plan_valid_timed(c, s, 0, &s->plan, r, from)) {
    c->st.conc_fallbacks++;
    return 0;
  }
  if (s->state == CS_TRIAL)
    return (s->trial_n++ & 1) ? s->gen : 0;
  return s->gen;
}

static void launched(grape_gc_t* c, seg_t* seg, uint32_t gen) {
  conc_t* s = seg->conc;
  if (gen != 0)
    c->st.conc_launches++;
  if (s == NULL)
    return;
  s->last = gen;
  if (gen != 0 && gen == s->go_gen)
    c->st.go_launches++;
  /* On trial the targets alternate: after a targeted replay the next one
   * runs the safe plan untargeted, and the other way round. */
  if (s->go == GO_TRIAL)
    go_publish(seg, s, gen != s->go_gen);
}

/* A plan's host cost a launch (the shim's re-verification, the least
 * seen, and go's targets, their least) is at least HOST_SHARE of what it
 * earns: it is dropped. What it earns is the larger of the host time a
 * replay of its segment saves against launching its ops one by one (the
 * ledger's measure, at the costs the run measured) and the device time the
 * plan gains a launch against the chain (gain_ns): re-checking an op costs
 * ~4% of the launch a replay saves, so weighed against the host saving
 * alone every plan would go, those that gain a hundred us a launch
 * included. */
static double host_share(const grape_gc_t* c) {
  return c->cfg.plan_host_share > 0 ? c->cfg.plan_host_share : HOST_SHARE;
}

static int dearer_than_share(const grape_gc_t* c, const seg_t* seg, double per, double gain_ns) {
  double saves = grape__gc_replay_saving(c, seg->n, 1, 0);
  if (gain_ns > saves)
    saves = gain_ns;
  return host_share(c) < 1 && per > host_share(c) * saves;
}

static int host_too_dear(grape_gc_t* c, const seg_t* seg, const conc_t* s, double gain_ns) {
  if (!dearer_than_share(c, seg, s->host_n > 0 ? s->host_ns : 0, gain_ns))
    return 0;
  c->st.conc_host_dropped++;
  return 1;
}

/* go: the go plan replaces its segment's safe plan, whose re-verification
 * it shares. As a plan, its re-verification and targets are weighed as a
 * safe plan's are, against what it earns over the chain (chain_gain_ns);
 * and what it adds, its targets, against what it gains over the safe plan
 * (go_gain_ns): weighing the re-verification the safe plan pays anyway
 * against go's own gain alone dropped plans whose targets cost 1% of
 * their gain. */
static int go_too_dear(grape_gc_t* c, const seg_t* seg, const conc_t* s, double chain_gain_ns,
                       double go_gain_ns) {
  double targets = c->conc != NULL ? s->go_nt * c->conc->hint_min_ns : 0;
  double per = (s->host_n > 0 ? s->host_ns : 0) + targets;
  if (!dearer_than_share(c, seg, per, chain_gain_ns) &&
      !(host_share(c) < 1 && targets > host_share(c) * go_gain_ns))
    return 0;
  c->st.conc_host_dropped++;
  return 1;
}

/* go: a timed launch of the safe plan (w 0) or the go plan (w 1) on trial. */
static void go_sample(grape_gc_t* c, seg_t* seg, conc_t* s, int w, double ns) {
  s->go_sum[w] += ns;
  s->go_cnt[w]++;
  if (s->go_cnt[0] < TRIAL_SAMPLES || s->go_cnt[1] < TRIAL_SAMPLES)
    return;
  double safe = s->go_sum[0] / s->go_cnt[0], go = s->go_sum[1] / s->go_cnt[1];
  double chain = s->cnt[0] > 0 ? s->sum[0] / s->cnt[0] : safe;
  if (go <= MEASURE_GAIN * safe && !go_too_dear(c, seg, s, chain - go, safe - go)) {
    s->go = GO_KEPT;
    s->go_backoffs = 0;
    c->st.go_kept++;
    if (s->held) {   /* the go plan pays for the safe plan it stands on */
      s->held = 0;
      c->st.conc_kept++;
    }
    go_publish(seg, s, 1);
    seg->dev_ns = go;
    seg->dev_n = s->go_cnt[1];
    return;
  }
  c->st.go_reverted++;
  go_drop(c, seg, s, 1);
}

static int sampled(grape_gc_t* c, seg_t* seg, uint64_t ns) {
  conc_t* s = seg->conc;
  uint32_t gen = s != NULL ? s->last : 0;
  if (gen == 0) {
    c->st.dev_chain_ns += ns;
    c->st.dev_chain_n++;
  } else {
    c->st.dev_plan_ns += ns;
    c->st.dev_plan_n++;
  }
  if (s == NULL)
    return 1;
  if (gen != 0 && gen == s->go_gen && s->go_cnt[0] > 0) {
    /* A timed go launch against its segment's measured safe plan. */
    c->st.go_gain_ns += s->go_sum[0] / s->go_cnt[0] - (double)ns;
    c->st.go_gain_n++;
  }
  if (gen != 0 && (gen == s->gen || gen == s->go_gen) && s->cnt[0] > 0) {
    /* A timed plan launch against its own segment's measured chain: what
     * the plans gained or lost, for the report. */
    c->st.conc_gain_ns += s->sum[0] / s->cnt[0] - (double)ns;
    c->st.conc_gain_n++;
  }
  if (s->state == CS_KEPT) {
    if (s->go == GO_TRIAL && gen != 0 && (gen == s->gen || gen == s->go_gen)) {
      int w = gen == s->go_gen;
      go_sample(c, seg, s, w, (double)ns);
      if (s->go == GO_KEPT)
        return 0;   /* go_sample set dev_ns */
      return w == 0;
    }
    if (s->go == GO_KEPT)
      return gen == s->go_gen;
    return gen == s->gen;
  }
  if (s->state != CS_TRIAL || (gen != 0 && gen != s->gen))
    return gen == 0;
  int w = gen != 0;
  s->sum[w] += (double)ns;
  s->cnt[w]++;
  if (s->cnt[0] >= TRIAL_SAMPLES && s->cnt[1] >= TRIAL_SAMPLES) {
    double chain = s->sum[0] / s->cnt[0], plan = s->sum[1] / s->cnt[1];
    int faster = plan <= MEASURE_GAIN * chain;
    /* go: a plan faster on the device but too dear for what it alone
     * earns is held while go looks at it: a go plan that gains more may
     * pay for both (weighed at its own verdict, go_too_dear). Only where
     * go has a GEMM to target (go_may): else it is dropped at once, as in
     * safe mode, not replayed at its host cost until go finds nothing. */
    int hold = faster && c->cfg.concurrency >= GRAPE_GC_CONC_GO && s->go_may &&
               dearer_than_share(c, seg, s->host_n > 0 ? s->host_ns : 0, chain - plan);
    if (hold || (faster && !host_too_dear(c, seg, s, chain - plan))) {
      s->state = CS_KEPT;
      s->backoffs = 0;
      s->held = hold;
      c->st.conc_kept += !hold;
      if (hold)
        s->go_retry_at = 0;   /* go looks at it now */
      seg->dev_ns = plan;   /* cuts.c's cuts see the plan that replays now */
      seg->dev_n = s->cnt[1];
      return 0;
    }
    c->st.conc_reverted++;
    drop_candidate(c, seg, s, 1);
  }
  return w == 0;
}

const grape_gc_policy_t grape__conc_policy = {
  .pick = pick,
  .launched = launched,
  .sampled = sampled,
  .laying_out = laying_out,
  .freed = freed,
  .layout = layout,
  .layout_copy = layout_copy,
  .layout_free = layout_free,
  .add_nodes = add_nodes,
};

/* ---- Looking at a segment ---- */

/* True when two GEMMs of ops are independent: concurrency has something to do. */
static int independent_gemms(const grape_plan_t* p, const grape_dag_op_t* ops) {
  for (uint32_t k = 0; k < p->npairs; k++)
    if (ops[p->pairs[2 * k]].math != GRAPE_MATH_NONE && ops[p->pairs[2 * k + 1]].math != GRAPE_MATH_NONE)
      return 1;
  return 0;
}

/* go: marks in cand (zeroed, n entries) the ops an SM-count target may be
 * given: a GEMM's first kernel filling the device in one wave, with a GEMM
 * it is independent of (branches: the segment's branches plan, whose pairs
 * are its independent ops). @return how many. */
static uint32_t go_targetable(const grape_dag_op_t* ops, const grape_plan_t* branches, uint32_t sms,
                              uint32_t* cand) {
  uint32_t nt = 0;
  if (sms < 16)
    return 0;
  for (uint32_t k = 0; k < branches->npairs; k++) {
    uint32_t a = branches->pairs[2 * k], b = branches->pairs[2 * k + 1];
    if (ops[a].math == GRAPE_MATH_NONE || ops[b].math == GRAPE_MATH_NONE)
      continue;
    for (int j = 0; j < 2; j++) {
      uint32_t i = j ? b : a;
      if (ops[i].kind == GRAPE_OP_KERNEL && !cand[i] &&
          ops[i].blocks == sms * (ops[i].per_sm ? ops[i].per_sm : 1)) {
        cand[i] = 1;
        nt++;
      }
    }
  }
  return nt;
}

/* Plans seg from ops [from, from + seg->n) of r: builds the best candidate
 * when predicted PREDICT_GAIN or faster. */
static void look(grape_gc_t* c, seg_t* seg, conc_t* s, const grape_region_t* r, uint32_t from,
                 void* ctx) {
  uint32_t n = seg->n;
  grape_dag_op_t* ops = n <= GRAPE_DAG_MAX_OPS ? malloc((size_t)n * sizeof(*ops)) : NULL;
  grape_plan_t best = {0};
  s->state = CS_NONE;
  if (ops == NULL)
    goto out;
  grape__dag_ops(r, from, n, ops);
  if (grape__plan_make(ops, n, GRAPE_PLAN_BRANCHES, 0, &best) != 0)
    goto out;
  if (!independent_gemms(&best, ops)) {
    grape__plan_free(&best);
    goto out;
  }
  uint32_t sms = 0;
  for (uint32_t i = 0; i < n; i++)
    if (ops[i].kind == GRAPE_OP_KERNEL) {
      grape_gc_op_t op = grape__gc_op_view(r, from + i);
      ops[i].per_sm = occupancy(c, &op, &sms);
    }
  if (c->cfg.concurrency >= GRAPE_GC_CONC_GO) {
    uint32_t* cand = calloc((size_t)n + 1, sizeof(*cand));
    s->go_may = cand != NULL && go_targetable(ops, &best, sms, cand) > 0;
    free(cand);
  }
  grape__dag_model(ops, n, sms, seg->dev_ns);
  s->est_chain = 0;
  for (uint32_t i = 0; i < n; i++)
    s->est_chain += ops[i].lat_ns + ops[i].work_ns;
  grape__plan_estimate(&best, ops, sms);
  for (int d = 2; d <= 4; d *= 2) {
    grape_plan_t lanes;
    if ((uint32_t)d >= best.width || grape__plan_make(ops, n, GRAPE_PLAN_LANES, d, &lanes) != 0)
      continue;
    /* Fewer lanes win ties: they leave the device to others. */
    if (grape__plan_estimate(&lanes, ops, sms) <= best.est_ns) {
      grape__plan_free(&best);
      best = lanes;
    } else {
      grape__plan_free(&lanes);
    }
  }
  if (best.est_ns > PREDICT_GAIN * s->est_chain) {
    grape__plan_free(&best);
    goto out;
  }
  /* Re-checking its ops before each replay would cost more than the rule
   * allows (at the least cost an op's re-check was measured at, against
   * the predicted gain): the plan would be dropped for it after its build
   * and trial, so none is made. */
  if (c->conc != NULL && dearer_than_share(c, seg, c->conc->check_min_ns * n, s->est_chain - best.est_ns)) {
    grape__plan_free(&best);
    c->st.conc_host_skipped++;
    goto out;
  }
  s->est_plan = best.est_ns;
  grape__plan_free(&s->plan);
  s->plan = best;
  s->gen++;
  s->state = CS_BUILDING;
  c->st.conc_planned++;
  if (sig_make(&s->sig[0], r, from, n) != 0)
    s->sig[0].len = 0;
  if (grape__gc_seg_build(c, seg, r, from, ctx, &s->plan, s->gen) != 0)
    drop_candidate(c, seg, s, 0);
  free(ops);
  return;
out:
  free(ops);
  s->retry_at = grape__backoff(seg->launches, RETRY_LAUNCHES, &s->backoffs);
}

/* go: tops = ops with the candidates (cand) asked for S SMs each. */
static void go_retarget(const grape_dag_op_t* ops, grape_dag_op_t* tops, uint32_t n,
                        const uint32_t* cand, uint32_t S) {
  memcpy(tops, ops, (size_t)n * sizeof(*ops));
  for (uint32_t i = 0; i < n; i++)
    if (cand[i]) {
      uint32_t per = ops[i].per_sm ? ops[i].per_sm : 1;
      tops[i].blocks = S * per;
      /* Its tiles shared out over fewer blocks: rounds of a tile each
       * (when its tiles are known), else its work spread evenly. */
      double b0 = ops[i].blocks, b1 = tops[i].blocks, t = ops[i].tiles;
      tops[i].work_ns = t > b0 ? ops[i].work_ns * ceil(t / b1) / ceil(t / b0)
                               : ops[i].work_ns * b0 / b1;
    }
}

/* The estimate of plan kind `like` (its kind and lanes) made over ops
 * [lo, hi) alone, or INFINITY. */
static double stage_estimate(const grape_dag_op_t* ops, uint32_t lo, uint32_t hi,
                             const grape_plan_t* like, uint32_t sms) {
  grape_plan_t p;
  if (hi <= lo || grape__plan_make(ops + lo, hi - lo, like->kind, like->lanes, &p) != 0)
    return INFINITY;
  double e = grape__plan_estimate(&p, ops + lo, sms);
  grape__plan_free(&p);
  return e;
}

/* go: whether the go plan (plan, on the targeted ops tops) is predicted
 * PREDICT_GAIN or faster than the safe plan (safe, on ops) on the regions a
 * target changes: each stage between the barriers around a targeted GEMM
 * (GOLDYLOC's fork/join; a barrier orders everything on either side, so a
 * stage's makespan is its own), summed. Judged on the whole segment, the
 * same gain was diluted by the segment's other stages, which a target does
 * not touch: 11 us of a 250 us segment is 4.4%, under the bar, for a
 * fork/join made ~1.25x faster. */
static int go_region_gains(const grape_dag_op_t* ops, const grape_dag_op_t* tops, uint32_t n,
                           const uint32_t* cand, const grape_plan_t* safe, const grape_plan_t* plan,
                           uint32_t sms) {
  double was = 0, now = 0;
  for (uint32_t i = 0, hi = 0; i < n; i++) {
    if (!cand[i] || i < hi)
      continue;   /* not targeted, or its stage is counted */
    uint32_t lo = i;
    while (lo > 0 && !ops[lo - 1].barrier)
      lo--;
    for (hi = i + 1; hi < n && !ops[hi].barrier; hi++)
      ;
    was += stage_estimate(ops, lo, hi, safe, sms);
    now += stage_estimate(tops, lo, hi, plan, sms);
  }
  return isfinite(was) && now <= PREDICT_GAIN * was;
}

/* go: the SM-count target and plan for seg, whose safe plan is kept, from
 * ops [from, from + seg->n) of r. A GEMM whose blocks fill the device in one
 * wave (a persistent kernel, one block per SM) and that has an independent
 * co-runner may be asked for S of the device's SMs: its blocks then loop
 * over its tiles and leave the rest of the device to its co-runners.
 * GOLDYLOC's GO-kernels fit their tiles to the share they get: S is never
 * below the fewest blocks that keep the GEMM's rounds of tiles (176 tiles
 * take 2 rounds on 132 blocks and on 88), so a target never lengthens the
 * GEMM alone and can only free SMs; the estimator, whose rates are nominal,
 * is not trusted to trade the GEMM's own time against its co-runners'.
 * Candidates: that fewest S and the sixteenths of the device above it, each
 * with the full branches and 2 and 4 lanes, estimated against the kept safe
 * plan; the best not yet measured no faster (go_tried) is built when
 * predicted PREDICT_GAIN or faster on the fork/join it changes
 * (go_region_gains) and faster on the segment; a revert moves the next
 * look on to the next candidate. */
static void go_look(grape_gc_t* c, seg_t* seg, conc_t* s, const grape_region_t* r, uint32_t from,
                    void* ctx) {
  uint32_t n = seg->n;
  grape_dag_op_t* ops = n <= GRAPE_DAG_MAX_OPS ? malloc((size_t)n * sizeof(*ops)) : NULL;
  grape_dag_op_t* tops = ops != NULL ? malloc((size_t)n * sizeof(*ops)) : NULL;
  uint32_t* cand = calloc((size_t)n + 1, sizeof(*cand));
  grape_plan_t kinds[3] = {{0}}, best = {0};
  uint32_t best_s = 0;
  s->go = GO_NONE;
  if (ops == NULL || tops == NULL || cand == NULL)
    goto out;
  grape__dag_ops(r, from, n, ops);
  uint32_t sms = 0;
  for (uint32_t i = 0; i < n; i++)
    if (ops[i].kind == GRAPE_OP_KERNEL) {
      grape_gc_op_t op = grape__gc_op_view(r, from + i);
      ops[i].per_sm = occupancy(c, &op, &sms);
    }
  if (sms < 16)
    goto out;
  grape__dag_model(ops, n, sms, s->cnt[0] > 0 ? s->sum[0] / s->cnt[0] : seg->dev_ns);
  if (grape__plan_make(ops, n, GRAPE_PLAN_BRANCHES, 0, &kinds[0]) != 0)
    goto out;
  uint32_t nt = go_targetable(ops, &kinds[0], sms, cand);
  if (nt == 0)
    goto out;
  s->go_est_safe = grape__plan_estimate(&s->plan, ops, sms);
  int nk = 1;
  for (int d = 2; d <= 4; d *= 2)
    if ((uint32_t)d < kinds[0].width && grape__plan_make(ops, n, GRAPE_PLAN_LANES, d, &kinds[nk]) == 0)
      nk++;
  /* The fewest SMs that keep every candidate's rounds of tiles. */
  uint32_t floor_s = 1;
  for (uint32_t i = 0; i < n; i++)
    if (cand[i] && ops[i].tiles > ops[i].blocks) {
      uint32_t per = ops[i].per_sm ? ops[i].per_sm : 1;
      uint32_t rounds = (ops[i].tiles + ops[i].blocks - 1) / ops[i].blocks;
      uint32_t keep = (ops[i].tiles + rounds - 1) / rounds;
      keep = (keep + per - 1) / per;
      if (keep > floor_s)
        floor_s = keep;
    }
  double best_est = INFINITY;
  int best_k = -1;
  uint32_t best_bit = 0;
  for (uint32_t q = 1; q < 16; q++) {
    /* q = 1: the floor itself; then sixteenths above it */
    uint32_t S = q == 1 ? floor_s : sms * q / 16;
    if (S >= sms || (q == 1 && floor_s <= 1) || (q > 1 && S <= floor_s))
      continue;
    go_retarget(ops, tops, n, cand, S);
    for (int k = 0; k < nk; k++) {
      /* Fewer lanes, then fewer SMs, win ties. */
      uint32_t bit = (uint32_t)k * 16 + q;
      if (s->go_tried & ((uint64_t)1 << bit))
        continue;
      double e = grape__plan_estimate(&kinds[k], tops, sms);
      if (e < best_est * 0.999) {
        best_est = e;
        best_k = k;
        best_s = S;
        best_bit = bit;
      }
    }
  }
  if (best_k < 0 || best_est >= s->go_est_safe)
    goto out;
  go_retarget(ops, tops, n, cand, best_s);
  if (!go_region_gains(ops, tops, n, cand, &s->plan, &kinds[best_k], sms))
    goto out;
  s->go_target = calloc(n, sizeof(*s->go_target));
  s->go_blocks = calloc(n, sizeof(*s->go_blocks));
  if (s->go_target == NULL || s->go_blocks == NULL) {
    free(s->go_target);
    free(s->go_blocks);
    s->go_target = s->go_blocks = NULL;
    goto out;
  }
  for (uint32_t i = 0; i < n; i++)
    if (cand[i]) {
      s->go_target[i] = best_s;
      s->go_blocks[i] = ops[i].blocks;
    }
  best = kinds[best_k];
  kinds[best_k] = (grape_plan_t){0};
  best.est_ns = best_est;
  grape__plan_free(&s->go_plan);
  s->go_plan = best;
  s->go_nt = nt;
  s->go_bit = best_bit;
  s->go_est = best_est;
  s->go_gen = s->go_gen != 0 ? s->go_gen + 1 : GO_GEN_BASE + 1;
  s->go = GO_BUILDING;
  s->armed = 0;
  s->sig[1].len = 0;   /* its targeted replays differ in grids only: verified at the first */
  c->st.go_planned++;
  if (grape__gc_seg_build(c, seg, r, from, ctx, &s->go_plan, s->go_gen) != 0)
    go_drop(c, seg, s, 0);
  for (int k = 0; k < 3; k++)
    grape__plan_free(&kinds[k]);
  free(ops);
  free(tops);
  free(cand);
  return;
out:
  for (int k = 0; k < 3; k++)
    grape__plan_free(&kinds[k]);
  free(ops);
  free(tops);
  free(cand);
  s->go_retry_at = grape__backoff(seg->launches, RETRY_LAUNCHES, &s->go_backoffs);
  go_unhold(c, seg, s);   /* no go plan to pay for it */
}

static const char* plan_words(const gkey_t* k);

void grape__conc_assess(grape_gc_t* c, gkey_t* k, const grape_region_t* r) {
  if (c->cfg.concurrency < GRAPE_GC_CONC_SAFE || c->drv.graph_add_deps == NULL ||
      c->drv.graph_add_timer_deps == NULL || c->stopping)
    return;
  /* Kept with the key: the report comes after the segments are gone. */
  k->conc_plan = plan_words(k);
  seg_t* segs[MAX_CUTS];
  uint32_t from[MAX_CUTS];
  grape_gc_node_t* end[MAX_CUTS];
  int m = grape__gc_key_segments(c, k, segs, from, end);
  for (int j = 0; j < m; j++) {
    seg_t* seg = segs[j];
    if (seg == NULL || seg->timer == NULL || seg->nvar == 0 || seg->failed)
      continue;
    if (seg->conc == NULL && (seg->conc = calloc(1, sizeof(*seg->conc))) == NULL)
      return;
    conc_t* s = seg->conc;
    int due = s->state == CS_NEW ||
              ((s->state == CS_NONE || s->state == CS_BACKOFF) && seg->launches >= s->retry_at);
    if (due && seg->dev_n >= MIN_CHAIN_SAMPLES)
      look(c, seg, s, r, from[j], k->ctx);
    else if (c->cfg.concurrency >= GRAPE_GC_CONC_GO && s->state == CS_KEPT &&
             (s->go == GO_NEW ||
              ((s->go == GO_NONE || s->go == GO_BACKOFF) && seg->launches >= s->go_retry_at)))
      go_look(c, seg, s, r, from[j], k->ctx);
  }
}

/* ---- The report ---- */

void grape__conc_path(grape_gc_t* c, path_t* p, const grape_region_t* r) {
  if (c->cfg.concurrency == GRAPE_GC_CONC_OFF || r->ops.n == 0)
    return;
  grape_dag_summary_t* sum = calloc(1, sizeof(*sum));
  uint32_t n = r->ops.n <= GRAPE_DAG_MAX_OPS ? r->ops.n : 0;
  grape_dag_op_t* ops = n ? malloc((size_t)n * sizeof(*ops)) : NULL;
  if (sum == NULL || ops == NULL) {
    free(sum);
    free(ops);
    return;
  }
  grape__dag_ops(r, 0, n, ops);
  grape__dag_model(ops, n, 0, 0);
  grape__dag_summary(ops, n, 0, sum);
  free(ops);
  p->conc = sum;
}

/* The plan of k's segments now, in words. */
static const char* plan_words(const gkey_t* k) {
  if (k->node == NULL)
    return NULL;
  const char* words = NULL;
  for (grape_gc_node_t* x = k->node; x != NULL && x->depth > 0; x = x->parent) {
    const seg_t* seg = x->seg;
    const conc_t* s = seg != NULL ? seg->conc : NULL;
    if (s == NULL)
      continue;
    switch (s->state) {
    case CS_KEPT:
      if (s->go == GO_KEPT)
        return s->go_plan.kind == GRAPE_PLAN_LANES
                   ? (s->go_plan.lanes == 2 ? "go, 2 lanes and SM-count targets: kept (measured faster than safe)"
                                            : "go, 4 lanes and SM-count targets: kept (measured faster than safe)")
                   : "go, branches and SM-count targets: kept (measured faster than safe)";
      return s->plan.kind == GRAPE_PLAN_LANES ? (s->plan.lanes == 2 ? "2 lanes: kept (measured faster)"
                                                                    : "4 lanes: kept (measured faster)")
                                              : "branches: kept (measured faster)";
    case CS_BUILDING:
    case CS_TRIAL:
      words = "a concurrent plan on trial";
      break;
    case CS_BACKOFF:
      if (words == NULL)
        words = s->reverted ? "chain: a concurrent plan was measured no faster"
                            : "chain: a concurrent plan was lost";
      break;
    case CS_NONE:
      if (words == NULL)
        words = "chain: no concurrent plan predicted 5% faster";
      break;
    default:
      break;
    }
  }
  return words;
}

const char* grape__conc_key_plan(const grape_gc_t* c, const gkey_t* k) {
  return c->cfg.concurrency >= GRAPE_GC_CONC_SAFE ? k->conc_plan : NULL;
}

void grape_gc_hint_cost(grape_gc_t* c, double ns, uint32_t n) {
  if (c == NULL || n == 0)
    return;
  pthread_mutex_lock(&c->lock);
  if (c->conc == NULL)
    c->conc = calloc(1, sizeof(*c->conc));
  if (c->conc != NULL && (c->conc->hint_min_ns == 0 || ns / n < c->conc->hint_min_ns))
    c->conc->hint_min_ns = ns / n;
  c->st.hint_host_ns += ns;
  c->st.hint_host_n += n;
  c->st.plan_host_ns += ns;
  pthread_mutex_unlock(&c->lock);
}

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
#include <stdlib.h>
#include <string.h>

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
};

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

static void freed(seg_t* seg) {
  if (seg->conc != NULL)
    grape__plan_free(&seg->conc->plan);
  free(seg->conc);
  seg->conc = NULL;
}

/* The candidate's executables go; the segment is looked at again later. */
static void drop_candidate(grape_gc_t* c, seg_t* seg, conc_t* s, int measured) {
  for (int i = seg->nvar; i-- > 0;)
    if (seg->var[i]->gen == s->gen)
      grape__gc_exec_drop(c, seg->var[i]);
  grape__plan_free(&s->plan);
  s->state = CS_BACKOFF;
  s->reverted |= measured;
  s->retry_at = grape__backoff(seg->launches, RETRY_LAUNCHES, &s->backoffs);
}

/* Whether an executable of the candidate exists (1), usable now (2). */
static int candidate_ready(const grape_gc_t* c, const seg_t* seg, const conc_t* s) {
  uint64_t t = grape__gc_now(c);
  int have = 0;
  for (int i = 0; i < seg->nvar && have < 2; i++)
    if (seg->var[i]->gen == s->gen)
      have = seg->var[i]->ready_at <= t ? 2 : 1;
  return have;
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
  if (!grape__plan_valid(&s->plan, r, from)) {
    c->st.conc_fallbacks++;
    return 0;
  }
  if (s->state == CS_TRIAL)
    return (s->trial_n++ & 1) ? s->gen : 0;
  return s->gen;
}

static void launched(grape_gc_t* c, seg_t* seg, uint32_t gen) {
  if (gen != 0)
    c->st.conc_launches++;
  if (seg->conc != NULL)
    seg->conc->last = gen;
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
  if (gen != 0 && gen == s->gen && s->cnt[0] > 0) {
    /* A timed plan launch against its own segment's measured chain: what
     * the plans gained or lost, for the report. */
    c->st.conc_gain_ns += s->sum[0] / s->cnt[0] - (double)ns;
    c->st.conc_gain_n++;
  }
  if (s->state == CS_KEPT)
    return gen == s->gen;
  if (s->state != CS_TRIAL || (gen != 0 && gen != s->gen))
    return gen == 0;
  int w = gen != 0;
  s->sum[w] += (double)ns;
  s->cnt[w]++;
  if (s->cnt[0] >= TRIAL_SAMPLES && s->cnt[1] >= TRIAL_SAMPLES) {
    double chain = s->sum[0] / s->cnt[0], plan = s->sum[1] / s->cnt[1];
    if (plan <= MEASURE_GAIN * chain) {
      s->state = CS_KEPT;
      s->backoffs = 0;
      c->st.conc_kept++;
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
  s->est_plan = best.est_ns;
  grape__plan_free(&s->plan);
  s->plan = best;
  s->gen++;
  s->state = CS_BUILDING;
  c->st.conc_planned++;
  if (grape__gc_seg_build(c, seg, r, from, ctx, &s->plan, s->gen) != 0)
    drop_candidate(c, seg, s, 0);
  free(ops);
  return;
out:
  free(ops);
  s->retry_at = grape__backoff(seg->launches, RETRY_LAUNCHES, &s->backoffs);
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
  int m = grape__gc_key_segments(k, segs, from, end);
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

/* The dependence DAG, plans, the estimator and per-replay verification (see
 * dag.h for the design). */
#include "dag.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* ---- Ops as the DAG sees them ---- */

void grape__dag_ops(const grape_region_t* r, uint32_t from, uint32_t n, grape_dag_op_t* ops) {
  uint32_t prev_grp = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t at = from + i;
    grape_dag_op_t* o = &ops[i];
    memset(o, 0, sizeof(*o));
    o->kind = (uint8_t)r->ops.keys[at].kind;
    o->per_sm = 1;
    uint32_t g = r->ops.grp != NULL ? r->ops.grp[at] : 0;
    const grape_op_dims_t* d = &r->ops.dims[at];
    if (o->kind == GRAPE_OP_KERNEL) {
      o->blocks = d->grid[0] * d->grid[1] * d->grid[2];
      o->threads = (uint64_t)o->blocks * d->block[0] * d->block[1] * d->block[2];
    }
    if (g != 0 && g < GRAPE_GRP_SPECIAL && g <= r->ops.nfoot) {
      const grape_foot_t* f = &r->ops.foot[g - 1];
      o->grp = g;
      o->why = f->why;
      o->barrier = f->why != GRAPE_WHY_EXACT;
      o->s = f->s;
      o->nr = f->nr;
      o->nw = f->nw;
      /* The call's work goes to its first kernel (a split-K reduce after it
       * is modelled by its threads). */
      if (o->kind == GRAPE_OP_KERNEL && g != prev_grp && f->math != GRAPE_MATH_NONE) {
        o->math = f->math;
        o->flops = f->flops;
        o->bytes = f->bytes;
        o->tiles = f->tiles;
      }
    } else if (g == 0 && o->kind == GRAPE_OP_MEMSET) {
      grape_memset_params_t m;
      memcpy(&m, r->ops.params + r->ops.poff[at], sizeof(m));
      o->own[0] = (grape_span_t){m.dst, m.dst + m.count * m.esize};
      o->s = o->own;
      o->nw = 1;
      o->bytes = (double)(m.count * m.esize);
    } else if (g == 0 && o->kind == GRAPE_OP_MEMCPY) {
      grape_memcpy_params_t m;
      memcpy(&m, r->ops.params + r->ops.poff[at], sizeof(m));
      o->own[0] = (grape_span_t){m.src, m.src + m.bytes};
      o->own[1] = (grape_span_t){m.dst, m.dst + m.bytes};
      o->s = o->own;
      o->nr = o->nw = 1;
      o->bytes = 2.0 * (double)m.bytes;
    } else {
      o->barrier = 1;
      o->why = g >= GRAPE_GRP_SPECIAL            ? (uint8_t)(g - GRAPE_GRP_SPECIAL)
               : (r->ops.keys[at].flags & GRAPE_SIG_COOPERATIVE) ? GRAPE_WHY_COOPERATIVE
               : g != 0                          ? GRAPE_WHY_CALL
                                                 : GRAPE_WHY_KERNEL;
    }
    prev_grp = g;
  }
}

int grape__dag_dependent(const grape_dag_op_t* a, const grape_dag_op_t* b) {
  if (a->barrier || b->barrier)
    return 1;
  if (a->grp != 0 && a->grp == b->grp)
    return 1;   /* one call's kernels stay in order (their footprint is the call's) */
  const grape_span_t *ar = a->s, *aw = a->s + a->nr, *br = b->s, *bw = b->s + b->nr;
  return grape__spans_meet(aw, a->nw, br, b->nr) || grape__spans_meet(aw, a->nw, bw, b->nw) ||
         grape__spans_meet(ar, a->nr, bw, b->nw);
}

/* ---- The work model ---- */

/* Nominal H100/H200 figures (the datasheet derated to published cuBLAS
 * measurements, as docs/sim.md lists them): per-SM GEMM throughput by class
 * (flop per ns), the memory bandwidth (bytes per ns), a graph kernel node's
 * launch latency and a non-GEMM kernel's threads per ns. They set only the
 * relative weights of the ops: a measured chain rescales them. */
#define NOMINAL_SMS 132.0
static const double rate_per_sm[] = {
  [GRAPE_MATH_NONE] = 0,
  [GRAPE_MATH_TENSOR16] = 989.4e3 * 0.806 / NOMINAL_SMS,
  [GRAPE_MATH_TF32] = 494.7e3 * 0.813 / NOMINAL_SMS,
  [GRAPE_MATH_SIMT32] = 66.9e3 * 0.776 / NOMINAL_SMS,
  [GRAPE_MATH_SIMT64] = 66.9e3 * 0.776 / NOMINAL_SMS,
};
#define BYTES_PER_NS 4200.0
#define NODE_NS 500.0
#define THREADS_PER_NS 16.0

static double waves_of(const grape_dag_op_t* o, uint32_t sms) {
  double per_round = (sms ? sms : NOMINAL_SMS) * (o->per_sm ? o->per_sm : 1);
  return o->blocks ? ceil((double)o->blocks / per_round) : 0;
}

void grape__dag_model(grape_dag_op_t* ops, uint32_t n, uint32_t sms, double measured_ns) {
  double lat = 0, work = 0;
  for (uint32_t i = 0; i < n; i++) {
    grape_dag_op_t* o = &ops[i];
    o->lat_ns = NODE_NS;
    if (o->kind != GRAPE_OP_KERNEL) {
      o->work_ns = o->bytes / BYTES_PER_NS;
    } else if (o->math != GRAPE_MATH_NONE && o->blocks > 0 && o->math < sizeof(rate_per_sm) / sizeof(*rate_per_sm)) {
      /* A block's share of the flops at its share of one SM, wave by wave;
       * no faster than its bytes allow. */
      double per_block = o->flops / o->blocks;
      double block_ns = per_block / (rate_per_sm[o->math] / (o->per_sm ? o->per_sm : 1));
      double compute = waves_of(o, sms) * block_ns, memory = o->bytes / BYTES_PER_NS;
      o->work_ns = compute > memory ? compute : memory;
    } else {
      o->work_ns = (double)o->threads / THREADS_PER_NS;
    }
    lat += o->lat_ns;
    work += o->work_ns;
  }
  if (measured_ns > lat && work > 0) {
    double f = (measured_ns - lat) / work;
    for (uint32_t i = 0; i < n; i++)
      ops[i].work_ns *= f;
  }
}

/* ---- Bitsets ---- */

typedef struct bits_s {
  uint32_t n, words;
  uint64_t* v;   /* n rows of words */
} bits_t;

static int bits_init(bits_t* b, uint32_t n) {
  b->n = n;
  b->words = (n + 63) / 64;
  b->v = calloc((size_t)n * b->words + 1, sizeof(*b->v));
  return b->v != NULL ? 0 : -ENOMEM;
}

static inline uint64_t* row(const bits_t* b, uint32_t i) {
  return b->v + (size_t)i * b->words;
}

static inline int has(const uint64_t* r, uint32_t j) {
  return (int)((r[j / 64] >> (j % 64)) & 1);
}

static inline void set(uint64_t* r, uint32_t j) {
  r[j / 64] |= (uint64_t)1 << (j % 64);
}

/* ---- Plans ---- */

typedef struct edges_s {
  uint32_t* v;   /* pairs: from, to */
  size_t len, cap;
} edges_t;

static int edge_add(edges_t* e, uint32_t from, uint32_t to) {
  if (2 * e->len + 2 > e->cap) {
    uint32_t* v = grape__grow(e->v, &e->cap, 2 * e->len + 2, sizeof(*v), 64);
    if (v == NULL)
      return -ENOMEM;
    e->v = v;
  }
  e->v[2 * e->len] = from;
  e->v[2 * e->len + 1] = to;
  e->len++;
  return 0;
}

/* The DAG's closure: anc[j] = every op that must precede j. */
static void dag_closure(const grape_dag_op_t* ops, uint32_t n, bits_t* anc) {
  for (uint32_t j = 0; j < n; j++) {
    uint64_t* a = row(anc, j);
    if (ops[j].barrier) {
      for (uint32_t i = 0; i < j; i++)
        set(a, i);
      continue;
    }
    for (uint32_t i = j; i-- > 0;) {
      if (has(a, i))
        continue;   /* implied already */
      if (!grape__dag_dependent(&ops[i], &ops[j]))
        continue;
      const uint64_t* ai = row(anc, i);
      for (uint32_t w = 0; w < anc->words; w++)
        a[w] |= ai[w];
      set(a, i);
      if (ops[i].barrier)
        break;   /* everything before a barrier precedes it */
    }
  }
}

/* Reduced predecessors of every op from a closure (ops in topological
 * order `order`), as CSR into p. */
static int reduce(const bits_t* anc, const uint32_t* order, grape_plan_t* p) {
  uint32_t n = anc->n;
  size_t cap = 0, len = 0;
  uint32_t* pred = NULL;
  uint64_t* u = calloc(anc->words + 1, sizeof(*u));
  p->pred_off = calloc((size_t)n + 1, sizeof(*p->pred_off));
  if (u == NULL || p->pred_off == NULL) {
    free(u);
    return -ENOMEM;
  }
  (void)order;
  for (uint32_t j = 0; j < n; j++) {
    const uint64_t* a = row(anc, j);
    memset(u, 0, anc->words * sizeof(*u));
    for (uint32_t i = 0; i < n; i++)
      if (has(a, i)) {
        const uint64_t* ai = row(anc, i);
        for (uint32_t w = 0; w < anc->words; w++)
          u[w] |= ai[w];
      }
    p->pred_off[j] = (uint32_t)len;
    for (uint32_t i = 0; i < n; i++)
      if (has(a, i) && !has(u, i)) {
        if (len + 1 > cap) {
          uint32_t* v = grape__grow(pred, &cap, len + 1, sizeof(*v), 64);
          if (v == NULL) {
            free(u);
            free(pred);
            return -ENOMEM;
          }
          pred = v;
        }
        pred[len++] = i;
      }
  }
  p->pred_off[n] = (uint32_t)len;
  p->pred = pred != NULL ? pred : calloc(1, sizeof(*pred));
  free(u);
  return p->pred != NULL ? 0 : -ENOMEM;
}

/* A topological order of n ops under edges e (lowest index first among the
 * ready), and the closure of the edges into anc. @return 0, -ENOMEM, or
 * -EINVAL on a cycle. */
static int order_and_closure(uint32_t n, const edges_t* e, uint32_t* order, bits_t* anc) {
  uint32_t* indeg = calloc((size_t)n + 1, sizeof(*indeg));
  uint32_t* off = calloc((size_t)n + 2, sizeof(*off));
  uint32_t* succ = malloc((e->len + 1) * sizeof(*succ));
  uint8_t* done = calloc((size_t)n + 1, 1);
  int rc = -ENOMEM;
  if (indeg == NULL || off == NULL || succ == NULL || done == NULL)
    goto out;
  for (size_t k = 0; k < e->len; k++) {
    off[e->v[2 * k] + 1]++;
    indeg[e->v[2 * k + 1]]++;
  }
  for (uint32_t i = 0; i < n; i++)
    off[i + 1] += off[i];
  {
    uint32_t* fill = calloc((size_t)n + 1, sizeof(*fill));
    if (fill == NULL)
      goto out;
    for (size_t k = 0; k < e->len; k++) {
      uint32_t f = e->v[2 * k];
      succ[off[f] + fill[f]++] = e->v[2 * k + 1];
    }
    free(fill);
  }
  /* Kahn's algorithm, lowest ready index first: O(n^2), n is small. */
  for (uint32_t k = 0; k < n; k++) {
    uint32_t pick = n;
    for (uint32_t i = 0; i < n; i++)
      if (!done[i] && indeg[i] == 0) {
        pick = i;
        break;
      }
    if (pick == n) {
      rc = -EINVAL;
      goto out;
    }
    done[pick] = 1;
    order[k] = pick;
    const uint64_t* ap = row(anc, pick);
    for (uint32_t s = off[pick]; s < off[pick + 1]; s++) {
      uint32_t j = succ[s];
      indeg[j]--;
      uint64_t* aj = row(anc, j);
      for (uint32_t w = 0; w < anc->words; w++)
        aj[w] |= ap[w];
      set(aj, pick);
    }
  }
  rc = 0;
out:
  free(indeg);
  free(off);
  free(succ);
  free(done);
  return rc;
}

/* The widest stage: the most ops at one depth of the DAG between two
 * barriers (an antichain, so ops that may run at once). */
static uint32_t dag_width(const grape_dag_op_t* ops, uint32_t n, const bits_t* anc) {
  uint32_t* depth = calloc((size_t)n + 1, sizeof(*depth));
  uint32_t* count = calloc((size_t)n + 1, sizeof(*count));
  uint32_t best = 0;
  if (depth == NULL || count == NULL)
    goto out;
  uint32_t start = 0;
  for (uint32_t j = 0; j <= n; j++) {
    if (j < n && !ops[j].barrier) {
      uint32_t d = 0;
      for (uint32_t i = start; i < j; i++)
        if (has(row(anc, j), i) && depth[i] + 1 > d)
          d = depth[i] + 1;
      depth[j] = d;
      if (++count[d] > best)
        best = count[d];
      continue;
    }
    for (uint32_t i = start; i < j; i++)   /* a stage ends: its depth counts reset */
      count[depth[i]] = 0;
    start = j + 1;
  }
out:
  free(depth);
  free(count);
  return best;
}

static int by_work_desc(const void* a, const void* b, const grape_dag_op_t* ops) {
  double x = ops[*(const uint32_t*)a].work_ns, y = ops[*(const uint32_t*)b].work_ns;
  if (x != y)
    return x > y ? -1 : 1;
  return *(const uint32_t*)a < *(const uint32_t*)b ? -1 : 1;
}

/* Sorts idx[0, m) by work, longest first (insertion sort: stages are small). */
static void sort_lpt(uint32_t* idx, uint32_t m, const grape_dag_op_t* ops) {
  for (uint32_t i = 1; i < m; i++)
    for (uint32_t j = i; j > 0 && by_work_desc(&idx[j], &idx[j - 1], ops) < 0; j--) {
      uint32_t t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }
}

/* The edges of plan kind over the DAG anc: the chain; the DAG itself; or d
 * lanes per stage (between barriers), longest ops first onto the least
 * loaded lane, each lane a chain, keeping the DAG's own edges. */
static int plan_edges(const grape_dag_op_t* ops, uint32_t n, const bits_t* anc, int kind, int d,
                      edges_t* e) {
  if (kind == GRAPE_PLAN_CHAIN) {
    for (uint32_t i = 1; i < n; i++)
      if (edge_add(e, i - 1, i) != 0)
        return -ENOMEM;
    return 0;
  }
  for (uint32_t j = 0; j < n; j++)
    for (uint32_t i = 0; i < j; i++)
      if (has(row(anc, j), i) && edge_add(e, i, j) != 0)
        return -ENOMEM;
  if (kind != GRAPE_PLAN_LANES || d < 1)
    return 0;
  uint32_t* idx = malloc(((size_t)n + 1) * sizeof(*idx));
  uint32_t tail[64];
  double load[64];
  if (idx == NULL)
    return -ENOMEM;
  if (d > 64)
    d = 64;
  uint32_t start = 0;
  for (uint32_t j = 0; j <= n; j++) {
    if (j < n && !ops[j].barrier)
      continue;
    /* Stage [start, j): its ops onto d lanes. */
    uint32_t m = 0;
    for (uint32_t i = start; i < j; i++)
      idx[m++] = i;
    int antichain = 1;
    for (uint32_t a = start; a < j && antichain; a++)
      for (uint32_t b = start; b < a && antichain; b++)
        antichain = !has(row(anc, a), b);
    if (antichain)
      sort_lpt(idx, m, ops);
    for (int l = 0; l < d; l++) {
      tail[l] = UINT32_MAX;
      load[l] = 0;
    }
    for (uint32_t k = 0; k < m; k++) {
      int best = 0;
      for (int l = 1; l < d; l++)
        if (load[l] < load[best])
          best = l;
      uint32_t op = idx[k];
      if (tail[best] != UINT32_MAX && edge_add(e, tail[best], op) != 0) {
        free(idx);
        return -ENOMEM;
      }
      tail[best] = op;
      load[best] += ops[op].lat_ns + ops[op].work_ns;
    }
    start = j + 1;
  }
  free(idx);
  return 0;
}

void grape__plan_free(grape_plan_t* p) {
  free(p->pred_off);
  free(p->pred);
  free(p->order);
  free(p->pairs);
  memset(p, 0, sizeof(*p));
}

int grape__plan_make(const grape_dag_op_t* ops, uint32_t n, int kind, int lanes, grape_plan_t* out) {
  memset(out, 0, sizeof(*out));
  if (n == 0 || n > GRAPE_DAG_MAX_OPS)
    return -E2BIG;
  bits_t dag = {0}, anc = {0};
  edges_t e = {0};
  int rc = -ENOMEM;
  out->n = n;
  out->kind = kind;
  out->lanes = kind == GRAPE_PLAN_LANES ? lanes : 0;
  out->order = malloc((size_t)n * sizeof(*out->order));
  if (out->order == NULL || bits_init(&dag, n) != 0 || bits_init(&anc, n) != 0)
    goto out;
  dag_closure(ops, n, &dag);
  out->width = dag_width(ops, n, &dag);
  if ((rc = plan_edges(ops, n, &dag, kind, lanes, &e)) != 0)
    goto out;
  if ((rc = order_and_closure(n, &e, out->order, &anc)) != 0 || (rc = reduce(&anc, out->order, out)) != 0)
    goto out;
  /* The pairs it leaves unordered: re-verified at every replay. */
  size_t cap = 0;
  for (uint32_t j = 0; j < n; j++)
    for (uint32_t i = 0; i < j; i++) {
      if (has(row(&anc, j), i) || has(row(&anc, i), j))
        continue;
      if (out->npairs >= GRAPE_PLAN_MAX_PAIRS) {
        rc = -E2BIG;
        goto out;
      }
      if (2 * (size_t)out->npairs + 2 > cap) {
        uint32_t* v = grape__grow(out->pairs, &cap, 2 * (size_t)out->npairs + 2, sizeof(*v), 16);
        if (v == NULL) {
          rc = -ENOMEM;
          goto out;
        }
        out->pairs = v;
      }
      out->pairs[2 * out->npairs] = i;
      out->pairs[2 * out->npairs + 1] = j;
      out->npairs++;
    }
  rc = 0;
out:
  free(dag.v);
  free(anc.v);
  free(e.v);
  if (rc != 0)
    grape__plan_free(out);
  return rc;
}

static void* dup_n(const void* p, size_t n) {
  void* d = malloc(n ? n : 1);
  if (d != NULL && n)
    memcpy(d, p, n);
  return d;
}

int grape__plan_copy(const grape_plan_t* p, grape_plan_t* out) {
  *out = *p;
  out->pred_off = dup_n(p->pred_off, ((size_t)p->n + 1) * sizeof(*p->pred_off));
  out->pred = dup_n(p->pred, (size_t)p->pred_off[p->n] * sizeof(*p->pred));
  out->order = dup_n(p->order, (size_t)p->n * sizeof(*p->order));
  out->pairs = dup_n(p->pairs, 2 * (size_t)p->npairs * sizeof(*p->pairs));
  if (out->pred_off == NULL || out->pred == NULL || out->order == NULL || out->pairs == NULL) {
    grape__plan_free(out);
    return -ENOMEM;
  }
  return 0;
}

/* ---- Verification at replay ---- */

int grape__plan_valid(const grape_plan_t* p, const grape_region_t* r, uint32_t from) {
  for (uint32_t k = 0; k < p->npairs; k++) {
    uint32_t i = p->pairs[2 * k], j = p->pairs[2 * k + 1];
    grape_dag_op_t a, b;
    grape__dag_ops(r, from + i, 1, &a);
    grape__dag_ops(r, from + j, 1, &b);
    if (grape__dag_dependent(&a, &b))
      return 0;
  }
  return 1;
}

/* ---- The estimator ---- */

/* The SM slots over time: [t, next t) has `used` units of DEV_UNITS held. */
#define SM_UNITS 720720ULL   /* lcm(1..16): every occupancy up to 16 divides it */

typedef struct cal_s {
  double* t;
  uint64_t* used;
  size_t len, cap;
  uint64_t total;
} cal_t;

static size_t cal_at(const cal_t* c, double t) {
  size_t lo = 0, hi = c->len;
  while (hi - lo > 1) {
    size_t mid = (lo + hi) / 2;
    if (c->t[mid] <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* A boundary at t; @return its index, or SIZE_MAX without memory. */
static size_t cal_split(cal_t* c, double t) {
  size_t i = cal_at(c, t);
  if (c->t[i] == t)
    return i;
  if (c->len == c->cap) {
    size_t ncap = c->cap * 2;
    double* nt = realloc(c->t, ncap * sizeof(*nt));
    if (nt == NULL)
      return SIZE_MAX;
    c->t = nt;
    uint64_t* nu = realloc(c->used, ncap * sizeof(*nu));
    if (nu == NULL)
      return SIZE_MAX;
    c->used = nu;
    c->cap = ncap;
  }
  memmove(&c->t[i + 2], &c->t[i + 1], (c->len - i - 1) * sizeof(*c->t));
  memmove(&c->used[i + 2], &c->used[i + 1], (c->len - i - 1) * sizeof(*c->used));
  c->t[i + 1] = t;
  c->used[i + 1] = c->used[i];
  c->len++;
  return i + 1;
}

static uint64_t cal_free(const cal_t* c, double t0, double t1) {
  uint64_t m = 0;
  for (size_t i = cal_at(c, t0); i < c->len && c->t[i] < t1; i++)
    if (c->used[i] > m)
      m = c->used[i];
  return m < c->total ? c->total - m : 0;
}

static double cal_next(const cal_t* c, double t) {
  size_t i = cal_at(c, t);
  return i + 1 < c->len ? c->t[i + 1] : INFINITY;
}

static int cal_hold(cal_t* c, double t0, double t1, uint64_t units) {
  size_t a = cal_split(c, t0);
  if (a == SIZE_MAX || cal_split(c, t1) == SIZE_MAX)
    return -ENOMEM;
  for (size_t i = cal_at(c, t0); i < c->len && c->t[i] < t1; i++)
    c->used[i] += units;
  return 0;
}

/* When op o, its blocks free to start at t0, has finished. */
static double place(cal_t* c, const grape_dag_op_t* o, double t0) {
  if (o->blocks == 0 || o->work_ns <= 0)
    return t0 + (o->work_ns > 0 ? o->work_ns : 0);
  uint64_t per_sm = o->per_sm ? o->per_sm : 1;
  if (per_sm > 16)
    per_sm = 16;
  uint64_t unit = SM_UNITS / per_sm;
  uint64_t per_round = (c->total / SM_UNITS) * per_sm;
  uint64_t waves = (o->blocks + per_round - 1) / per_round;
  double round = o->work_ns / (double)waves;
  uint64_t left = o->blocks;
  double t = t0, end = t0;
  while (left > 0) {
    uint64_t fit = cal_free(c, t, t + round) / unit;
    if (fit > 0) {
      uint64_t take = fit < left ? fit : left;
      if (cal_hold(c, t, t + round, take * unit) != 0)
        return t + round * (double)((left + per_round - 1) / per_round);   /* out of memory: alone */
      left -= take;
      end = t + round;
    }
    if (left > 0) {
      double nt = cal_next(c, t);
      if (!(nt < INFINITY))
        break;   /* cannot happen: the calendar empties */
      t = nt;
    }
  }
  return end;
}

double grape__plan_estimate(grape_plan_t* p, const grape_dag_op_t* ops, uint32_t sms) {
  uint32_t n = p->n;
  cal_t c = {0};
  c.cap = 64;
  c.len = 1;
  c.total = (uint64_t)(sms ? sms : (uint32_t)NOMINAL_SMS) * SM_UNITS;
  c.t = calloc(c.cap, sizeof(*c.t));
  c.used = calloc(c.cap, sizeof(*c.used));
  double* fin = calloc((size_t)n + 1, sizeof(*fin));
  uint8_t* placed = calloc((size_t)n + 1, 1);
  double makespan = 0;
  if (c.t == NULL || c.used == NULL || fin == NULL || placed == NULL) {
    /* Out of memory: the plan as if its ops ran one after another. */
    for (uint32_t i = 0; i < n; i++)
      makespan += ops[i].lat_ns + ops[i].work_ns;
    goto out;
  }
  /* Nodes are placed in the order they become ready; ties in the plan's
   * topological order. */
  for (uint32_t k = 0; k < n; k++) {
    uint32_t pick = n;
    double best = INFINITY;
    for (uint32_t q = 0; q < n; q++) {
      uint32_t j = p->order[q];
      if (placed[j])
        continue;
      double ready = 0;
      int ok = 1;
      for (uint32_t e = p->pred_off[j]; e < p->pred_off[j + 1] && ok; e++) {
        ok = placed[p->pred[e]];
        if (fin[p->pred[e]] > ready)
          ready = fin[p->pred[e]];
      }
      if (ok && ready < best) {
        best = ready;
        pick = j;
      }
    }
    if (pick == n)
      break;   /* cannot happen: the order is topological */
    placed[pick] = 1;
    fin[pick] = place(&c, &ops[pick], best + ops[pick].lat_ns);
    if (fin[pick] > makespan)
      makespan = fin[pick];
  }
out:
  free(c.t);
  free(c.used);
  free(fin);
  free(placed);
  p->est_ns = makespan;
  return makespan;
}

/* ---- Summary ---- */

int grape__dag_summary(const grape_dag_op_t* ops, uint32_t n, uint32_t sms, grape_dag_summary_t* s) {
  memset(s, 0, sizeof(*s));
  s->ops = n;
  for (uint32_t i = 0; i < n; i++) {
    s->barriers[ops[i].barrier ? ops[i].why : GRAPE_WHY_EXACT]++;
    s->gemms += ops[i].math != GRAPE_MATH_NONE;
    s->chain_ns += ops[i].lat_ns + ops[i].work_ns;
  }
  s->crit_ns = s->chain_ns;
  grape_plan_t p;
  int rc = grape__plan_make(ops, n, GRAPE_PLAN_BRANCHES, 0, &p);
  if (rc != 0)
    return rc;
  s->width = p.width;
  s->crit_ns = grape__plan_estimate(&p, ops, sms);
  grape__plan_free(&p);
  return 0;
}

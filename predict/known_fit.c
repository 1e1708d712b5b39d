/* The known regime's fit: per (GPU, class) of the training data, boosted
 * trees (boost.c) on the residual of the transfer regime, their interval
 * calibrated on shape families held out of trees fitted on the rest
 * (interval_fit.c turns the residuals into bounds), and how their
 * correction and interval behave beyond the GPU's rows. train.c calls
 * grape__fit_known after the transfer regime is fitted.
 *
 * DESIGN: the rules below are per class and written in the model file;
 * each says what decided it. Sequential in row order, so deterministic
 * to the byte.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grape/predict.h"
#include "predict/boost.h"
#include "predict/gpu.h"
#include "predict/interval_fit.h"
#include "predict/kernel.h"
#include "predict/model.h"
#include "predict/rows.h"
#include "predict/known_fit.h"

#define MIN_ROWS GRAPE__MIN_ROWS
#define MIN_KNOWN 100       /* rows a (GPU, class) needs for a learned regime */

/* The widening a unit of distance, per class, of the known regime's
 * intervals of kernels with op dims beyond the span (the transfer
 * regime's, and why these are the outer 75% split's, in train.c). */
static const double widen_known[GRAPE_KC_COUNT] = {0.072, 0.075, 0.208, 0.114, 0, 0};

/* Beyond a known GPU's rows, per class: -1 its trees' correction fades as
 * the inner extrapolation split chooses (fades[] below), >= 0 that fade
 * (0: kept whole). A class fades only where every outer extrapolation
 * split (`grape train --cv extrapolate` at 50%, 75% and 90%) shows fading
 * helps it; none does (docs/predictor.md). The inner split chose e^-0.5d
 * for elementwise, and the 50% and 75% splits agreed (8.9 -> 7.3%, 5.5 ->
 * 4.9%), but at the 90% split, whose fit holds every regime the whole data
 * holds, as the shipped model's does, it hurt (3.5 -> 4.1%): fading moves
 * a known GPU to the spec-based level, the transfer regime's error there,
 * not the GPU's. */
static const double fade_rule[GRAPE_KC_COUNT] = {0, 0, 0, 0, 0, 0};

/* Whether a class's known-regime interval is two, by the harness's floor
 * (grape__known_bin): on where held-out shape families (`grape train
 * --cv-families`) show the rows the floor hides and the rows above it
 * each covered nearer 80% than by one interval (docs/predictor.md,
 * *Intervals*): elementwise, softmax and layer norm. GEMM keeps its
 * nn.Linear bin; conv was not measured (no family split of its rows was
 * run), so it keeps one interval. */
static const int floor_split_rule[GRAPE_KC_COUNT] = {0, 1, 1, 1, 0, 0};

/* Whether a class's known-regime interval is a level per held-out shape
 * family plus the spread within one (grape__level_interval), not the
 * quantiles of the pooled residuals (docs/predictor.md, *Intervals*).
 * Softmax: on held-out shape families (`grape train --cv-families`) its
 * held-out corner of the (rows, cols) grid is one level shared by a
 * thousand rows (65.7 -> 72.6%). GEMM (bmm and nn.Linear): the training
 * rows' families cannot tell (pooled 81.1 / 81.3%, a level per family
 * 93.8 / 92.7%), real models' shapes can: on the half of NeuSight's
 * held-out real-model rows that decides (bench/predict/real_rows.py, split
 * by shape) the pooled intervals held 52.1 / 64.5% of the known rows, a
 * level per family 72.0 / 85.8% (the other half, the score: 51.6 / 62.2
 * -> 71.2 / 86.8%); a real model's shapes are a family the fit has few
 * rows of, off by one level. Elementwise (92.8%, 98.1% with a level per
 * family) and layer norm (84.0%, 88.0%, 25 rows) stay pooled. Conv was
 * not measured. */
static const int family_level_rule[GRAPE_KC_COUNT] = {1, 0, 1, 0, 0, 0};

/* Whether a class split at the harness's floor splits the kernels above
 * the floor again, at their median predicted latency (high_ms), each half
 * with its own interval. The error of a latency above the floor shrinks
 * as the kernel rises clear of it: on held-out shape families the
 * elementwise rows from 1.2 to 2 floors err by +-4-8% (what the harness
 * adds and overlaps is unsure there), those past 4 floors by +-0.5-2%
 * (the kernel's bandwidth), so one interval for both over-covered the
 * high ones (91-100% of them) and under-covered the low. Real models'
 * kernels stand high: on the half of NeuSight's held-out real-model rows
 * that decides (bench/predict/real_rows.py) the known regime's intervals
 * held elementwise 92.8 -> 84.5% (375 rows), softmax 100 -> 90% (10), layer
 * norm 84.0 -> 80.0% (25) with the split (the other half, the score:
 * 91.5 -> 84.1, 92.0 -> 84.0, 66.7 -> 66.7; docs/predictor.md). The split
 * is each fit's own median, not a constant. Conv keeps one interval. */
static const int height_split_rule[GRAPE_KC_COUNT] = {0, 1, 1, 1, 0, 0};

/* The trees' features of p (grape__gpu_features), the alignment ones read
 * as 0 where the options turn them off (an experiment's before). */
static void known_features(const grape_train_opts_t* o, const grape__kprep_t* p,
                           const double* x, const grape__roof_t* r, double t0, float* xf) {
  grape__gpu_features(p, x, r, t0, xf);
  if (!o->align)
    for (int i = GRAPE__NGF - GRAPE__NALIGN; i < GRAPE__NGF; i++)
      xf[i] = 0;
}

/* Rows of one (GPU, class) with op dims, in the form the trees fit: the
 * features, log(measured / transfer prediction) and the shape hash. */
typedef struct kset_s {
  float* x;
  double* r;
  uint32_t* shape;         /* what calibration folds are taken by (shape or family) */
  uint8_t* bin;            /* interval bin */
  double* t0;              /* the transfer prediction under the trees, ms */
  size_t n;
} kset_t;

static void kset_free(kset_t* k) {
  free(k->x);
  free(k->r);
  free(k->shape);
  free(k->bin);
  free(k->t0);
}

/* Rows of GPU `gpu` and class c: with op dims (launch 0), or all of them
 * as launches alone (launch 1: what the shim knows of a kernel). */
static int kset_collect(const grape_dataset_t* d, const sel_t* s, const grape_model_t* m,
                        const char* gpu, int c, int launch, kset_t* k) {
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    n += grape__selected(r, s, c) && (launch || r->p.has_dims) && strcmp(r->gpu->name, gpu) == 0;
  }
  k->n = 0;
  k->x = malloc((n + 1) * GRAPE__NGF * sizeof(float));
  k->r = malloc((n + 1) * sizeof(double));
  k->shape = malloc((n + 1) * sizeof(uint32_t));
  k->bin = malloc(n + 1);
  k->t0 = malloc((n + 1) * sizeof(double));
  if (k->x == NULL || k->r == NULL || k->shape == NULL || k->bin == NULL || k->t0 == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__selected(r, s, c) || !(launch || r->p.has_dims) || strcmp(r->gpu->name, gpu) != 0)
      continue;
    const grape__kprep_t* p = launch ? &r->pl : &r->p;
    double x[GRAPE__NFEAT];
    grape__roof_t rf;
    double t0 = grape__predict_x(m, GRAPE_METHOD_GRAPE, p, r->gpu, x, &rf);
    known_features(s->o, p, x, &rf, t0, &k->x[k->n * GRAPE__NGF]);
    k->r[k->n] = log(r->lat / t0);
    /* The interval's calibration folds: shape families by default. */
    k->shape[k->n] = grape__fold_key(r, s->o->calib);
    k->bin[k->n] = (uint8_t)grape__interval_bin(p);
    k->t0[k->n] = t0;
    k->n++;
  }
  return 0;
}

static grape__boost_opts_t known_opts(const grape_train_opts_t* k) {
  grape__boost_opts_t o = {.trees = k->trees, .rate = k->rate, .min_leaf = 5, .l2 = 1};
  return o;
}

/* Calibrates the interval of one (GPU, class): its shape families (or,
 * with calib 0, its shapes) split into folds (by hash bits other than
 * those of the outer cross-validation),
 * trees fitted on all folds but one predict that one, and the quantiles of
 * what is left, log(measured / prediction), over every row are the
 * interval. The transfer prediction under the trees is fitted on all rows:
 * with its 24 weights it is not what overfits. *keep says whether the
 * trees beat the transfer prediction alone on the held-out shapes
 * (per-kernel MAPE): from the launch alone, a GEMM's time is too loosely
 * tied to what the trees see (no K) for them to help. split_ms > 0 (a
 * class other than GEMM whose floor rule is on: GRAPE__FLOOR_SPLIT times
 * the GPU's harness floor) bins each row by its latency as predicted
 * (grape__known_bin): the floor's rows, whose error is the floor's few
 * percent, and the rows above it, whose error is the kernel's.
 * height (with split_ms): the rows above the floor split again at their
 * median predicted latency, *high_ms (split_high), the higher ones bin 2.
 * family_level: per bin, a level per held-out family plus the spread
 * within one (grape__level_interval) in place of the pooled quantiles. */
static int known_interval(const kset_t* k, const grape_train_opts_t* opts, double split_ms,
                          int family_level, int height, double* iv, double* high_ms,
                          int* keep) {
  int folds = opts->folds, err = 0;
  double ape_trees = 0, ape_base = 0;
  grape__boost_opts_t o = known_opts(opts);
  float* x = malloc((k->n + 1) * GRAPE__NGF * sizeof(float));
  double* r = malloc((k->n + 1) * sizeof(double));
  grape__tree_t* t = malloc((size_t)(o.trees + 1) * sizeof(*t));
  double* lat = malloc((k->n + 1) * sizeof(double));
  grape__resid_t held;
  *high_ms = 0;
  if ((grape__resid_alloc(&held, k->n) | (x == NULL || r == NULL || t == NULL || lat == NULL)) !=
      0) {
    err = -ENOMEM;
    goto done;
  }
  for (int f = 0; f < folds; f++) {
    size_t n = 0;
    for (size_t i = 0; i < k->n; i++)
      if ((k->shape[i] >> 16) % (uint32_t)folds != (uint32_t)f) {
        memcpy(&x[n * GRAPE__NGF], &k->x[i * GRAPE__NGF], GRAPE__NGF * sizeof(float));
        r[n++] = k->r[i];
      }
    int nt = grape__boost_fit(x, n, GRAPE__NGF, r, &o, t);
    if (nt < 0) {
      err = nt;
      goto done;
    }
    for (size_t i = 0; i < k->n; i++)
      if ((k->shape[i] >> 16) % (uint32_t)folds == (uint32_t)f) {
        double cr = grape__boost_eval(t, nt, &k->x[i * GRAPE__NGF]);
        held.key[held.n] = k->shape[i];   /* its family: a level per family */
        lat[held.n] = k->t0[i] * exp(cr);
        held.v[held.n] = k->r[i] - cr;
        /* With a floor split, the bin of the latency as predicted. */
        held.bin[held.n++] = split_ms > 0 ? k->t0[i] * exp(cr) >= split_ms : k->bin[i];
        /* Per-kernel error with and without the trees: r = log(measured /
         * predicted), so |predicted - measured| / measured = |e^-r - 1|. */
        ape_trees += fabs(expm1(-held.v[held.n - 1]));
        ape_base += fabs(expm1(-k->r[i]));
      }
  }
  *keep = ape_trees < ape_base;
  if (split_ms > 0 && height)
    err = grape__split_high(&held, lat, high_ms);
  if (err == 0 && !family_level)
    err = grape__bin_quantiles(&held, GRAPE__NKIVB, iv);
  for (int b = 0; family_level && b < GRAPE__NKIVB && err == 0; b++)
    err = grape__level_interval(&held, b, &iv[2 * b]);
done:
  free(lat);
  free(x);
  free(r);
  free(t);
  grape__resid_free(&held);
  return err;
}

/* The fades the known regime's calibration chooses from (exp(-fade d)):
 * from keeping the trees' correction whole to dropping it at once. */
static const double fades[] = {0, 0.25, 0.5, 1, 2, 4, 1000};
#define NFADE (sizeof(fades) / sizeof(fades[0]))

/* The upper half's rows of an inner split as the known regime predicts
 * them: the transfer regime's in-range and extrapolated times, the trees'
 * correction, the distance, the measured time and the row's in-range
 * interval. */
#define NUP 8
typedef struct pool_s {
  double* v;               /* NUP a row: t0, tx, cr, dk, lat, lo, hi, GPU index */
  size_t n;
} pool_t;

/* The known regime of GPU gpu and class c (launch: its launch-only fit)
 * beyond its rows: kc's span, and, when it has trees, its upper rows of the
 * inner split lo into pool: trees fitted on the lower half (over the
 * transfer regime fitted there, ml) predict the upper half. */
static int known_extrap(const grape_dataset_t* d, const sel_t* s, const sel_t* lo,
                        const grape_model_t* ml, const char* gpu, int gi, int c, int l,
                        double floor_ms, grape__known_class_t* kc, pool_t* pool) {
  grape__span_of(d, s, c, l, gpu, &kc->x);
  if (kc->ntrees == 0 || ml == NULL)
    return 0;
  grape__boost_opts_t o = known_opts(s->o);
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if ((l || r->p.has_dims) && grape__selected(r, lo, c) && strcmp(r->gpu->name, gpu) == 0)
      n++;
  }
  int err = -ENOMEM;
  float* x = malloc((n + 1) * GRAPE__NGF * sizeof(float));
  double* rr = malloc((n + 1) * sizeof(double));
  grape__tree_t* t = malloc((size_t)(o.trees + 1) * sizeof(*t));
  if (x == NULL || rr == NULL || t == NULL)
    goto done;
  size_t nl = 0;
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!(l || r->p.has_dims) || !grape__selected(r, lo, c) || strcmp(r->gpu->name, gpu) != 0)
      continue;
    const grape__kprep_t* p = l ? &r->pl : &r->p;
    double xv[GRAPE__NFEAT], t0, dist;
    grape__roof_t rf;
    grape__predict_transfer(ml, p, r->gpu, xv, &rf, &t0, &dist);
    known_features(s->o, p, xv, &rf, t0, &x[nl * GRAPE__NGF]);
    rr[nl++] = log(r->lat / t0);
  }
  err = 0;
  if (nl < MIN_KNOWN)
    goto done;
  int nt = grape__boost_fit(x, nl, GRAPE__NGF, rr, &o, t);
  if (nt < 0) {
    err = nt;
    goto done;
  }
  grape__extrap_t lx;
  grape__span_of(d, lo, c, l, gpu, &lx);
  for (size_t i = 0; i < d->n; i++) {
    const row_t* r = &d->rows[i];
    if (!grape__upper(r, s, lo, c) || strcmp(r->gpu->name, gpu) != 0)
      continue;
    const grape__kprep_t* p = l ? &r->pl : &r->p;
    double xv[GRAPE__NFEAT], t0, dist;
    grape__roof_t rf;
    float xf[GRAPE__NGF];
    double* u = &pool->v[NUP * pool->n++];
    u[1] = grape__predict_transfer(ml, p, r->gpu, xv, &rf, &t0, &dist);
    known_features(s->o, p, xv, &rf, t0, xf);
    u[0] = t0;
    u[2] = fmin(fmax(grape__boost_eval(t, nt, xf), -8), 8);
    u[3] = grape__span_distance(p, &lx);
    u[4] = r->lat;
    int bin = grape__known_bin(p, u[1] * exp(u[2]), floor_ms, kc->high_ms);
    while (bin > 0 && !(kc->iv[2 * bin] <= kc->iv[2 * bin + 1]))
      bin--;   /* not calibrated: the bin below, as a prediction takes it */
    const double* iv = &kc->iv[2 * bin];
    u[5] = iv[0];
    u[6] = iv[1];
    u[7] = gi;
  }
done:
  free(x);
  free(rr);
  free(t);
  return err;
}

/* The fade and the widening of class c's known regime (one fit, l), from
 * the upper rows of every GPU pooled: beyond its rows a GPU's error drifts
 * in a way its own rows do not tell, as an unseen GPU's level does. */
static int known_beyond(pool_t* pool, grape__known_t* known, int ngpu, int c, int l,
                        double rule, double* rho, FILE* logf) {
  if (pool->n < MIN_ROWS)
    return 0;
  double best = INFINITY, fade = 0;
  grape__known_class_t k = {0};
  for (size_t f = 0; f < NFADE; f++) {
    k.x.fade = fades[f];
    double ape = 0;
    for (size_t i = 0; i < pool->n; i++) {
      const double* u = &pool->v[NUP * i];
      ape += fabs(grape__known_time(&k, u[0], u[1], u[2], u[3]) - u[4]) / u[4];
    }
    if (ape < best) {
      best = ape;
      fade = fades[f];
    }
  }
  double inner = fade;
  if (rule >= 0)
    fade = rule;
  k.x.fade = fade;
  grape__beyond_t b;
  double* res = malloc((pool->n + 1) * sizeof(double));
  uint32_t* gi = malloc((pool->n + 1) * sizeof(uint32_t));
  if (grape__beyond_alloc(&b, pool->n) < 0 || res == NULL || gi == NULL) {
    grape__beyond_free(&b);
    free(res);
    free(gi);
    return -ENOMEM;
  }
  for (size_t i = 0; i < pool->n; i++) {
    const double* u = &pool->v[NUP * i];
    res[i] = log(u[4] / grape__known_time(&k, u[0], u[1], u[2], u[3]));
    gi[i] = (uint32_t)u[7];
    grape__beyond_add(&b, res[i], u[5], u[6], u[3]);
  }
  /* Beyond its rows a known GPU's error is mostly a drift of its own (a
   * level per GPU), which a path's kernels share. */
  int err = grape__level_share(res, gi, pool->n, rho);
  free(res);
  free(gi);
  double widen[2] = {-widen_known[c], widen_known[c]};
  if (err == 0 && l)
    err = grape__widen_slopes(&b, widen);
  grape__beyond_free(&b);
  if (logf != NULL)
    fprintf(logf, "grape: %s%s: known regime beyond its rows (%zu): fade %g (the inner split's "
            "choice %g), widening %.4f a unit of distance, shared level %.2f\n",
            grape_kclass_name(c), l ? " (launch only)" : "", pool->n, fade, inner, widen[1],
            *rho);
  for (int g = 0; g < ngpu; g++) {
    grape__known_class_t* kc = &known[g].c[c][l];
    kc->x.fade = fade;
    memcpy(kc->x.widen, widen, sizeof(widen));
  }
  return err;
}

/* The known regime: per GPU of the selected rows and class with MIN_KNOWN
 * rows with op dims, trees on log(measured / transfer prediction) and
 * their interval, and (ml, the transfer regime fitted on the lower half of
 * the inner split lo; NULL none) their behaviour beyond those rows. m's
 * transfer regime is fitted. */
int grape__fit_known(const grape_dataset_t* d, const sel_t* s, const sel_t* lo,
                     const grape_model_t* ml, const double (*hf)[GRAPE_KC_COUNT],
                     grape_model_t* m) {
  const char* gpus[MAXGPU];
  int ngpu = grape__list_gpus(d, s, -1, gpus);
  ngpu = ngpu > MAXGPU ? MAXGPU : ngpu;
  m->known = calloc((size_t)ngpu + 1, sizeof(*m->known));
  if (m->known == NULL)
    return -ENOMEM;
  m->nknown = ngpu;
  grape__boost_opts_t o = known_opts(s->o);
  pool_t pool = {malloc((d->n + 1) * NUP * sizeof(double)), 0};
  if (pool.v == NULL)
    return -ENOMEM;
  for (int g = 0; g < ngpu; g++) {
    snprintf(m->known[g].name, sizeof(m->known[g].name), "%s", gpus[g]);
    m->known[g].cc = grape__gpu_cc(grape_gpu_find(gpus[g]));
  }
  for (int c = 0; c < GRAPE_KC_COUNT; c++)
    for (int l = 0; l < 2; l++) {
      pool.n = 0;
      int err = 0;
      for (int g = 0; g < ngpu && err == 0; g++) {
        grape__known_class_t* kc = &m->known[g].c[c][l];
        kset_t k = {0};
        err = kset_collect(d, s, m, gpus[g], c, l, &k);
        kc->rows = (double)k.n;
        for (int j = 0; j < 2 * GRAPE__NKIVB; j++)
          kc->iv[j] = j % 2 ? -1 : 1;
        kc->high_ms = 0;
        int keep = 0, split = c != GRAPE_KC_GEMM && (s->o->floor_split < 0
                                                          ? floor_split_rule[c]
                                                          : s->o->floor_split);
        double floor_ms = split ? hf[g][c] : 0;
        int fl = s->o->family_level < 0 ? family_level_rule[c] : s->o->family_level;
        int hs = s->o->height_split < 0 ? height_split_rule[c] : s->o->height_split;
        if (err == 0 && k.n >= MIN_KNOWN && o.trees > 0)
          err = known_interval(&k, s->o, GRAPE__FLOOR_SPLIT * floor_ms, fl, hs, kc->iv,
                               &kc->high_ms, &keep);
        if (!keep) {
          for (int j = 0; j < 2 * GRAPE__NKIVB; j++)
            kc->iv[j] = j % 2 ? -1 : 1;
          kc->high_ms = 0;
        }
        if (err == 0 && keep) {
          kc->trees = malloc((size_t)o.trees * sizeof(*kc->trees));
          err = kc->trees == NULL ? -ENOMEM
                                  : grape__boost_fit(k.x, k.n, GRAPE__NGF, k.r, &o, kc->trees);
          kc->ntrees = err > 0 ? err : 0;
          err = err > 0 ? 0 : err;
        }
        kset_free(&k);
        if (err == 0)
          err = known_extrap(d, s, lo, ml, gpus[g], g, c, l, floor_ms, kc, &pool);
      }
      double rule = s->o->fade == -1 ? fade_rule[c] : s->o->fade;
      double rho = 0;
      if (err == 0)
        err = known_beyond(&pool, m->known, ngpu, c, l, rule, &rho, s->o->log);
      if (l == 0)
        m->rho[c][1] = rho;
      if (err < 0) {
        free(pool.v);
        return err;
      }
    }
  free(pool.v);
  return 0;
}


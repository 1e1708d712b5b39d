/* Intervals from held-out residuals: every regime's interval is quantiles
 * of log(measured / predicted) over rows a fit did not see (train.c
 * chooses the rows and the bins; this file turns residuals into bounds).
 *
 * DESIGN: two forms. Pooled quantiles per bin, and a level per group plus
 * the spread within one, for residuals whose groups (a held-out GPU, a
 * held-out shape family) each share one error: the same computation for
 * the transfer regime's GPUs and the known regime's families, so it is
 * written once. Beyond a fit's span, the slopes by which its interval
 * widens with the distance. Sequential and deterministic, like all of
 * training.
 */
#include "predict/interval_fit.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "predict/model.h"
#include "predict/rows.h"

int grape__resid_alloc(grape__resid_t* r, size_t n) {
  r->n = 0;
  r->v = malloc((n + 1) * sizeof(double));
  r->bin = malloc(n + 1);
  r->key = malloc((n + 1) * sizeof(uint32_t));
  return r->v && r->bin && r->key ? 0 : -ENOMEM;
}

void grape__resid_free(grape__resid_t* r) {
  free(r->v);
  free(r->bin);
  free(r->key);
}

void grape__resid_add(grape__resid_t* r, double v, const grape__kprep_t* p, uint32_t key) {
  r->v[r->n] = v;
  r->bin[r->n] = (uint8_t)grape__interval_bin(p);
  r->key[r->n] = key;
  r->n++;
}

void grape__quantiles(double* v, size_t n, double* iv) {
  iv[0] = 1;
  iv[1] = -1;
  if (n < GRAPE__MIN_ROWS)
    return;
  qsort(v, n, sizeof(double), grape__cmp_double);
  iv[0] = v[(size_t)((1 - GRAPE__LEVEL) / 2 * (double)(n - 1) + 0.5)];
  iv[1] = v[(size_t)((1 + GRAPE__LEVEL) / 2 * (double)(n - 1) + 0.5)];
}

int grape__bin_quantiles(const grape__resid_t* r, int nb, double* iv) {
  double* v = malloc((r->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  for (int b = 0; b < nb; b++) {
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
      if (r->bin[i] == b)
        v[n++] = r->v[i];
    grape__quantiles(v, n, &iv[2 * b]);
  }
  free(v);
  return 0;
}

/* A residual with its group's key, sorted by key, then value. */
typedef struct keyed_s {
  uint32_t key;
  double v;
} keyed_t;

static int cmp_keyed(const void* a, const void* b) {
  const keyed_t *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return (x->v > y->v) - (x->v < y->v);
}

/* Groups kv[0..n) (sorted here) by key: each group's median, its level,
 * into level[] (in key order), and every residual less its group's level
 * into within. @return the groups; *nw the residuals in within. */
static size_t group_levels(keyed_t* kv, size_t n, double* level, double* within, size_t* nw) {
  size_t k = 0;
  *nw = 0;
  qsort(kv, n, sizeof(*kv), cmp_keyed);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && kv[j].key == kv[i].key)
      j++;
    double med = kv[i + (j - i) / 2].v;
    level[k++] = med;
    for (size_t q = i; q < j; q++)
      within[(*nw)++] = kv[q].v - med;
    i = j;
  }
  return k;
}

/* The residuals of r's bin b (-1 all) with their keys into kv. @return how many. */
static size_t keyed_rows(const grape__resid_t* r, int b, keyed_t* kv) {
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++)
    if (b < 0 || r->bin[i] == b)
      kv[n++] = (keyed_t){r->key[i], r->v[i]};
  return n;
}

static double normal_cdf(double z) {
  return 0.5 * erfc(-z / sqrt(2));
}

/* The level's quantiles of shift + within into iv: shift ~ N(mean, sd^2)
 * of the k group levels, within the nw residuals w (each less its group's
 * level; sorted here), by bisection over up to 1000 of their quantiles. v:
 * scratch of nw values. */
static void level_spread_quantiles(const double* shift, size_t k, double* w, size_t nw, double* v,
                                   double* iv) {
  double mu = 0, var = 0;
  for (size_t g = 0; g < k; g++)
    mu += shift[g] / (double)k;
  for (size_t g = 0; g < k; g++)
    var += (shift[g] - mu) * (shift[g] - mu) / (double)(k - 1);
  double sd = sqrt(var);
  qsort(w, nw, sizeof(double), grape__cmp_double);
  /* The within-group residuals at up to 1000 evenly spaced ranks. */
  size_t nq = nw < 1000 ? nw : 1000;
  for (size_t j = 0; j < nq; j++)
    v[j] = w[(size_t)(((double)j + 0.5) / (double)nq * (double)nw)];
  for (int side = 0; side < 2; side++) {
    double target = side == 0 ? (1 - GRAPE__LEVEL) / 2 : (1 + GRAPE__LEVEL) / 2;
    double lo = mu + v[0] - 8 * sd - 1e-9, hi = mu + v[nq - 1] + 8 * sd + 1e-9;
    for (int it = 0; it < 60; it++) {
      double x = (lo + hi) / 2, cdf = 0;
      for (size_t j = 0; j < nq; j++)
        cdf += sd > 0 ? normal_cdf((x - mu - v[j]) / sd) : x >= mu + v[j];
      if (cdf / (double)nq < target)
        lo = x;
      else
        hi = x;
    }
    iv[side] = (lo + hi) / 2;
  }
}

/* Pooling the residuals alone undercovers a new group (a held-out GPU is
 * often beyond all the others: softmax 74% on leave-one-GPU-out; a
 * held-out corner of softmax's shape grid is one level shared by a
 * thousand rows); widening tau for its estimate from a few GPUs
 * (Student's t) overcovers (86%), because the inner folds' models, fitted
 * on one GPU fewer, already err more than the model they calibrate
 * (docs/predictor.md). */
int grape__level_interval(const grape__resid_t* r, int b, double* iv) {
  iv[0] = 1;
  iv[1] = -1;
  keyed_t* kv = malloc((r->n + 1) * sizeof(*kv));
  double* shift = malloc((r->n + 1) * sizeof(double));
  double* w = malloc((r->n + 1) * sizeof(double));
  double* v = malloc((r->n + 1) * sizeof(double));
  int err = kv && shift && w && v ? 0 : -ENOMEM;
  size_t n = err == 0 ? keyed_rows(r, b, kv) : 0;
  if (n >= GRAPE__MIN_ROWS) {
    size_t nw, k = group_levels(kv, n, shift, w, &nw);
    if (k >= 2) {
      level_spread_quantiles(shift, k, w, nw, v, iv);
    } else {
      for (size_t i = 0; i < n; i++)
        v[i] = kv[i].v;
      grape__quantiles(v, n, iv);
    }
  }
  free(kv);
  free(shift);
  free(w);
  free(v);
  return err;
}

int grape__level_share(const double* vals, const uint32_t* key, size_t n, double* rho) {
  keyed_t* kv = malloc((n + 1) * sizeof(*kv));
  double* level = malloc((n + 1) * sizeof(double));
  double* w = malloc((n + 1) * sizeof(double));
  *rho = 0;
  int err = kv && level && w ? 0 : -ENOMEM;
  for (size_t i = 0; err == 0 && i < n; i++)
    kv[i] = (keyed_t){key[i], vals[i]};
  size_t nw = 0, k = err == 0 ? group_levels(kv, n, level, w, &nw) : 0;
  if (k >= 2 && nw >= GRAPE__MIN_ROWS) {
    double mu = 0, tau2 = 0;
    for (size_t g = 0; g < k; g++)
      mu += level[g] / (double)k;
    for (size_t g = 0; g < k; g++)
      tau2 += (level[g] - mu) * (level[g] - mu) / (double)(k - 1);
    qsort(w, nw, sizeof(double), grape__cmp_double);
    double sd = (w[(size_t)(0.9 * (double)(nw - 1))] - w[(size_t)(0.1 * (double)(nw - 1))]) /
                2.5631;
    *rho = tau2 + sd * sd > 0 ? tau2 / (tau2 + sd * sd) : 0;
  }
  free(kv);
  free(level);
  free(w);
  return err;
}

int grape__split_high(grape__resid_t* r, const double* lat, double* high_ms) {
  double* v = malloc((r->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++)
    if (r->bin[i] == 1)
      v[n++] = lat[i];
  if (n >= 2 * GRAPE__MIN_ROWS) {
    qsort(v, n, sizeof(double), grape__cmp_double);
    *high_ms = v[n / 2];
    for (size_t i = 0; i < r->n; i++)
      if (r->bin[i] == 1 && lat[i] >= *high_ms)
        r->bin[i] = 2;
  }
  free(v);
  return 0;
}

int grape__beyond_alloc(grape__beyond_t* b, size_t n) {
  b->n = 0;
  b->r = malloc((n + 1) * sizeof(double));
  b->lo = malloc((n + 1) * sizeof(double));
  b->hi = malloc((n + 1) * sizeof(double));
  b->d = malloc((n + 1) * sizeof(double));
  return b->r && b->lo && b->hi && b->d ? 0 : -ENOMEM;
}

void grape__beyond_free(grape__beyond_t* b) {
  free(b->r);
  free(b->lo);
  free(b->hi);
  free(b->d);
}

void grape__beyond_add(grape__beyond_t* b, double r, double lo, double hi, double d) {
  b->r[b->n] = r;
  b->lo[b->n] = lo;
  b->hi[b->n] = hi;
  b->d[b->n++] = d;
}

/* The slope by which an interval must widen on both sides with the
 * distance to keep its level beyond the span: the level's quantile of
 * max(r - hi, lo - r) / d, the least widening that holds that share of the
 * rows; 0 where the in-range bounds already hold them. Both sides alike:
 * beyond the span a fit's error drifts in a direction its own rows do not
 * tell (the same GPU and class drifted up in the inner split and down in
 * the outer one). Rows nearer than GRAPE__EXTRAP_DMIN calibrate nothing; fewer
 * than GRAPE__MIN_ROWS farther leave the slope 0. */
int grape__widen_slopes(const grape__beyond_t* b, double* widen) {
  widen[0] = widen[1] = 0;
  double* v = malloc((b->n + 1) * sizeof(double));
  if (v == NULL)
    return -ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < b->n; i++)
    if (b->d[i] >= GRAPE__EXTRAP_DMIN)
      v[n++] = fmax(b->r[i] - b->hi[i], b->lo[i] - b->r[i]) / b->d[i];
  if (n >= GRAPE__MIN_ROWS) {
    qsort(v, n, sizeof(double), grape__cmp_double);
    double q = fmax(v[(size_t)(GRAPE__LEVEL * (double)(n - 1) + 0.5)], 0);
    widen[0] = -q;
    widen[1] = q;
  }
  free(v);
  return 0;
}

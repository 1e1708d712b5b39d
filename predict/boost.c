/* Oblivious gradient-boosted regression trees for the residuals of grape's
 * log-space kernel-time model.
 *
 * DESIGN: each tree uses one (feature, threshold) test per level for all its
 * nodes (CatBoost's "oblivious" trees). That keeps a tree to DEPTH tests and
 * 2^DEPTH leaves, so evaluation is a few comparisons and an index (fast
 * enough for a million predictions a second), the model file stays small,
 * and the trees regularise well: a split must help every node of its level.
 * Candidate thresholds are up to NBIN quantiles of each feature, computed
 * once; rows are binned into bytes; each level builds one histogram of
 * residual sums per (node, feature, bin) and picks the split that maximises
 * the summed squared-sum gain. Everything runs in row order with no
 * randomness, so a fit is reproducible bit for bit.
 */
#include "predict/boost.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NBIN 32   /* thresholds per feature (bins = NBIN + 1) */

static int cmp_float(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

/* Picks up to NBIN thresholds between distinct quantiles of column f. */
static int thresholds(const float* x, size_t n, int nf, int f, float* tmp, float* thr) {
  for (size_t i = 0; i < n; i++)
    tmp[i] = x[i * nf + f];
  qsort(tmp, n, sizeof(float), cmp_float);
  int k = 0;
  for (int q = 1; q <= NBIN; q++) {
    size_t i = (size_t)((double)q * (double)n / (NBIN + 1));
    if (i == 0 || i >= n)
      continue;
    /* Midway between the quantile and the next larger distinct value. */
    float lo = tmp[i - 1];
    size_t j = i;
    while (j < n && tmp[j] == lo)
      j++;
    if (j >= n)
      continue;
    float t = lo + (tmp[j] - lo) / 2;
    if (k == 0 || t > thr[k - 1])
      thr[k++] = t;
  }
  return k;
}

int grape__boost_fit(const float* x, size_t n, int nf, double* r, const grape__boost_opts_t* o,
                     grape__tree_t* out) {
  int err = -ENOMEM, fitted = 0;
  float* thr = calloc((size_t)nf * NBIN, sizeof(float));
  int* nthr = calloc((size_t)nf, sizeof(int));
  uint8_t* bin = malloc(n * (size_t)nf);
  float* tmp = malloc(n * sizeof(float));
  uint8_t* leaf = malloc(n);
  size_t hsz = (size_t)GRAPE__TREE_LEAVES * nf * (NBIN + 1);
  double* hs = malloc(hsz * sizeof(double));
  double* hc = malloc(hsz * sizeof(double));
  if (!thr || !nthr || !bin || !tmp || !leaf || !hs || !hc)
    goto done;
  for (int f = 0; f < nf; f++)
    nthr[f] = thresholds(x, n, nf, f, tmp, thr + (size_t)f * NBIN);
  for (size_t i = 0; i < n; i++)
    for (int f = 0; f < nf; f++) {
      const float* t = thr + (size_t)f * NBIN;
      float v = x[i * nf + f];
      int lo = 0, hi = nthr[f];     /* bin = number of thresholds below v */
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t[mid] < v)
          lo = mid + 1;
        else
          hi = mid;
      }
      bin[i * nf + f] = (uint8_t)lo;
    }
  for (int tr = 0; tr < o->trees; tr++) {
    grape__tree_t* T = &out[tr];
    memset(T, 0, sizeof(*T));
    memset(leaf, 0, n);
    int depth;
    for (depth = 0; depth < GRAPE__TREE_DEPTH; depth++) {
      int nodes = 1 << depth;
      size_t used = (size_t)nodes * nf * (NBIN + 1);
      memset(hs, 0, used * sizeof(double));
      memset(hc, 0, used * sizeof(double));
      for (size_t i = 0; i < n; i++) {
        size_t base = (size_t)leaf[i] * nf * (NBIN + 1);
        const uint8_t* b = bin + i * nf;
        for (int f = 0; f < nf; f++) {
          size_t k = base + (size_t)f * (NBIN + 1) + b[f];
          hs[k] += r[i];
          hc[k] += 1;
        }
      }
      double best = -1;
      int bf = -1, bb = -1;
      for (int f = 0; f < nf; f++) {
        for (int b = 0; b < nthr[f]; b++) {
          double gain = 0;
          for (int nd = 0; nd < nodes; nd++) {
            const double* s = hs + ((size_t)nd * nf + f) * (NBIN + 1);
            const double* c = hc + ((size_t)nd * nf + f) * (NBIN + 1);
            double sl = 0, cl = 0, st = 0, ct = 0;
            for (int k = 0; k <= NBIN; k++) {
              if (k <= b) {
                sl += s[k];
                cl += c[k];
              }
              st += s[k];
              ct += c[k];
            }
            double sr = st - sl, cr = ct - cl;
            gain += sl * sl / (cl + o->l2) + sr * sr / (cr + o->l2);
          }
          if (gain > best) {
            best = gain;
            bf = f;
            bb = b;
          }
        }
      }
      if (bf < 0)
        break;
      T->feat[depth] = bf;
      T->thr[depth] = thr[(size_t)bf * NBIN + bb];
      for (size_t i = 0; i < n; i++)
        leaf[i] = (uint8_t)(leaf[i] * 2 + (bin[i * nf + bf] > bb));
    }
    if (depth < GRAPE__TREE_DEPTH) {
      /* No feature can split: pad with always-false tests on feature 0
       * (a finite threshold, so model files hold only finite numbers). */
      for (int d = depth; d < GRAPE__TREE_DEPTH; d++) {
        T->feat[d] = 0;
        T->thr[d] = 1e30;
      }
      for (size_t i = 0; i < n; i++)
        leaf[i] = (uint8_t)(leaf[i] << (GRAPE__TREE_DEPTH - depth));
    }
    double s[GRAPE__TREE_LEAVES] = {0}, c[GRAPE__TREE_LEAVES] = {0};
    for (size_t i = 0; i < n; i++) {
      s[leaf[i]] += r[i];
      c[leaf[i]] += 1;
    }
    for (int l = 0; l < GRAPE__TREE_LEAVES; l++)
      T->leaf[l] = c[l] >= o->min_leaf ? o->rate * s[l] / (c[l] + o->l2) : 0;
    for (size_t i = 0; i < n; i++)
      r[i] -= T->leaf[leaf[i]];
    fitted++;
  }
  err = fitted;
done:
  free(thr);
  free(nthr);
  free(bin);
  free(tmp);
  free(leaf);
  free(hs);
  free(hc);
  return err;
}

double grape__boost_eval(const grape__tree_t* t, int ntrees, const double* x) {
  double s = 0;
  for (int k = 0; k < ntrees; k++) {
    unsigned idx = 0;
    for (int d = 0; d < GRAPE__TREE_DEPTH; d++)
      idx = idx * 2 + (x[t[k].feat[d]] > t[k].thr[d]);
    s += t[k].leaf[idx];
  }
  return s;
}

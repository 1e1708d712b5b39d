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

/* One histogram bin: the residual sum and the row count. */
typedef struct hbin_s {
  double s, c;
} hbin_t;

/* Sums and counts of bins 0..NBIN of one (node, feature) histogram. */
static void hist_total(const hbin_t* h, double* st, double* ct) {
  *st = *ct = 0;
  for (int k = 0; k <= NBIN; k++) {
    *st += h[k].s;
    *ct += h[k].c;
  }
}

/* Bins every row's features by the thresholds: bin = how many are below. */
static void bin_rows(const float* x, size_t n, int nf, const float* thr, const int* nthr,
                     uint8_t* bin) {
  for (size_t i = 0; i < n; i++)
    for (int f = 0; f < nf; f++) {
      const float* t = thr + (size_t)f * NBIN;
      float v = x[i * nf + f];
      int lo = 0, hi = nthr[f];
      while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t[mid] < v)
          lo = mid + 1;
        else
          hi = mid;
      }
      bin[i * nf + f] = (uint8_t)lo;
    }
}

int grape__boost_fit(const float* x, size_t n, int nf, double* r, const grape__boost_opts_t* o,
                     grape__tree_t* out) {
  int err = -ENOMEM, fitted = 0;
  size_t stride = (size_t)nf * (NBIN + 1);     /* bins of one node */
  size_t hsz = (size_t)GRAPE__TREE_LEAVES * stride;
  float* thr = calloc((size_t)nf * NBIN, sizeof(float));
  int* nthr = calloc((size_t)nf, sizeof(int));
  uint8_t* bin = malloc(n * (size_t)nf + 1);
  float* tmp = malloc(n * sizeof(float) + 1);
  uint8_t* leaf = malloc(n + 1);
  hbin_t* cur = malloc(hsz * sizeof(hbin_t));
  hbin_t* par = malloc(hsz * sizeof(hbin_t));
  if (!thr || !nthr || !bin || !tmp || !leaf || !cur || !par)
    goto done;
  for (int f = 0; f < nf; f++)
    nthr[f] = thresholds(x, n, nf, f, tmp, thr + (size_t)f * NBIN);
  bin_rows(x, n, nf, thr, nthr, bin);
  for (int tr = 0; tr < o->trees; tr++) {
    grape__tree_t* T = &out[tr];
    memset(T, 0, sizeof(*T));
    memset(leaf, 0, n);
    /* small[p]: the child of node p with fewer rows (0 left, 1 right); its
     * histogram is summed from the rows, its sibling's is the parent's
     * minus it, so each level reads at most half the rows. */
    uint8_t small[GRAPE__TREE_LEAVES / 2] = {0};
    int depth;
    for (depth = 0; depth < GRAPE__TREE_DEPTH; depth++) {
      int nodes = 1 << depth;
      memset(cur, 0, (size_t)nodes * stride * sizeof(hbin_t));
      for (size_t i = 0; i < n; i++) {
        unsigned nd = leaf[i];
        if (depth > 0 && (nd & 1) != small[nd >> 1])
          continue;
        hbin_t* h = cur + nd * stride;
        const uint8_t* b = bin + i * nf;
        for (int f = 0; f < nf; f++) {
          hbin_t* e = &h[(size_t)f * (NBIN + 1) + b[f]];
          e->s += r[i];
          e->c += 1;
        }
      }
      if (depth > 0)
        for (int p = 0; p < nodes / 2; p++) {
          const hbin_t* ph = par + (size_t)p * stride;
          const hbin_t* sh = cur + (size_t)(2 * p + small[p]) * stride;
          hbin_t* oh = cur + (size_t)(2 * p + !small[p]) * stride;
          for (size_t k = 0; k < stride; k++) {
            oh[k].s = ph[k].s - sh[k].s;
            oh[k].c = ph[k].c - sh[k].c;
          }
        }
      /* Gain of each (feature, threshold): per node, the sums left of the
       * threshold are running sums over the bins. */
      double best = -1;
      int bf = -1, bb = -1;
      for (int f = 0; f < nf; f++) {
        double gain[NBIN] = {0};
        for (int nd = 0; nd < nodes; nd++) {
          const hbin_t* h = cur + (size_t)nd * stride + (size_t)f * (NBIN + 1);
          double st, ct, sl = 0, cl = 0;
          hist_total(h, &st, &ct);
          for (int b = 0; b < nthr[f]; b++) {
            sl += h[b].s;
            cl += h[b].c;
            double sr = st - sl, cr = ct - cl;
            gain[b] += sl * sl / (cl + o->l2) + sr * sr / (cr + o->l2);
          }
        }
        for (int b = 0; b < nthr[f]; b++)
          if (gain[b] > best) {
            best = gain[b];
            bf = f;
            bb = b;
          }
      }
      if (bf < 0)
        break;
      T->feat[depth] = (uint8_t)bf;
      T->thr[depth] = thr[(size_t)bf * NBIN + bb];
      for (int nd = 0; nd < nodes; nd++) {
        const hbin_t* h = cur + (size_t)nd * stride + (size_t)bf * (NBIN + 1);
        double st, ct, cl = 0;
        hist_total(h, &st, &ct);
        for (int b = 0; b <= bb; b++)
          cl += h[b].c;
        small[nd] = cl <= ct - cl ? 0 : 1;
      }
      hbin_t* t = par;
      par = cur;
      cur = t;
      for (size_t i = 0; i < n; i++)
        leaf[i] = (uint8_t)(leaf[i] * 2 + (bin[i * nf + bf] > bb));
    }
    if (depth < GRAPE__TREE_DEPTH) {
      /* No feature can split: pad with always-false tests on feature 0
       * (a finite threshold, so model files hold only finite numbers). */
      for (int d = depth; d < GRAPE__TREE_DEPTH; d++) {
        T->feat[d] = 0;
        T->thr[d] = 1e30f;
      }
      for (size_t i = 0; i < n; i++)
        leaf[i] = (uint8_t)(leaf[i] << (GRAPE__TREE_DEPTH - depth));
    }
    double s[GRAPE__TREE_LEAVES] = {0}, c[GRAPE__TREE_LEAVES] = {0};
    for (size_t i = 0; i < n; i++) {
      s[leaf[i]] += r[i];
      c[leaf[i]] += 1;
    }
    /* Leaves are rounded to float before the residuals are updated, so the
     * next tree fits exactly what the stored model predicts. */
    for (int l = 0; l < GRAPE__TREE_LEAVES; l++)
      T->leaf[l] = c[l] >= o->min_leaf ? (float)(o->rate * s[l] / (c[l] + o->l2)) : 0.0f;
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
  free(cur);
  free(par);
  return err;
}

double grape__boost_eval(const grape__tree_t* t, int ntrees, const float* x) {
  /* The depth is a constant: unrolled, the levels' tests are straight-line
   * compares with no loop (a third fewer instructions per tree). */
  double s = 0;
  for (int k = 0; k < ntrees; k++, t++) {
    unsigned idx = 0;
#pragma GCC unroll 16
    for (int d = 0; d < GRAPE__TREE_DEPTH; d++)
      idx = idx * 2 + (x[t->feat[d]] > t->thr[d]);
    s += t->leaf[idx];
  }
  return s;
}

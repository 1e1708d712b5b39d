/* lsq.c: weighted linear least squares through the normal equations, with a
 * ridge on standardised features, solved by Cholesky decomposition: the
 * closed-form fits of training (train.c).
 *
 * DESIGN: rows are accumulated one at a time into A'WA and A'Wy (lower
 * triangle only) with the weighted sums that give each feature's variance,
 * so a fit over any selection of rows needs no design matrix in memory. The
 * ridge is scaled by each non-intercept feature's variance (features on very
 * different scales are penalised alike) plus a tiny constant that keeps the
 * system positive definite when a feature is constant. Sequential sums in
 * row order make a fit deterministic to the byte.
 */
#include "predict/lsq.h"

#include <errno.h>
#include <math.h>
#include <string.h>

/* Solves A x = b (A symmetric positive definite, n x n, overwritten). */
static int cholesky_solve(double* a, double* b, int n) {
  for (int j = 0; j < n; j++) {
    double s = a[j * n + j];
    for (int k = 0; k < j; k++)
      s -= a[j * n + k] * a[j * n + k];
    if (!(s > 0))
      return -EDOM;
    double l = sqrt(s);
    a[j * n + j] = l;
    for (int i = j + 1; i < n; i++) {
      double t = a[i * n + j];
      for (int k = 0; k < j; k++)
        t -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = t / l;
    }
  }
  for (int i = 0; i < n; i++) {
    double t = b[i];
    for (int k = 0; k < i; k++)
      t -= a[i * n + k] * b[k];
    b[i] = t / a[i * n + i];
  }
  for (int i = n - 1; i >= 0; i--) {
    double t = b[i];
    for (int k = i + 1; k < n; k++)
      t -= a[k * n + i] * b[k];
    b[i] = t / a[i * n + i];
  }
  return 0;
}

void grape__ls_init(grape__ls_t* l, int n) {
  memset(l, 0, sizeof(*l));
  l->n = n;
}

void grape__ls_add(grape__ls_t* l, const double* x, double y, double w) {
  int n = l->n;
  for (int i = 0; i < n; i++) {
    double wx = w * x[i];
    for (int j = 0; j <= i; j++)
      l->ata[i * n + j] += wx * x[j];
    l->atb[i] += wx * y;
    l->sx[i] += wx;
    l->sxx[i] += wx * x[i];
  }
  l->sw += w;
}

int grape__ls_solve(const grape__ls_t* l, double ridge, double* out) {
  int n = l->n;
  double a[GRAPE__LS_MAX * GRAPE__LS_MAX];
  for (int i = 0; i < n; i++)
    for (int j = 0; j <= i; j++)
      a[i * n + j] = a[j * n + i] = l->ata[i * n + j];
  for (int i = 1; i < n; i++) {
    double mean = l->sw > 0 ? l->sx[i] / l->sw : 0;
    double var = l->sw > 0 ? l->sxx[i] / l->sw - mean * mean : 0;
    a[i * n + i] += ridge * l->sw * (var > 1e-12 ? var : 1e-6) + 1e-12;
  }
  memcpy(out, l->atb, n * sizeof(double));
  return cholesky_solve(a, out, n);
}

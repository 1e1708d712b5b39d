/* simblas_sim.c: CPU bodies of libsimblas's kernels for sim/ (see simcu.h).
 * Same arithmetic, same order, fmaf as on the GPU. */
#include <math.h>

#include "simblas_math.h"
#include "simcu.h"

SIMCU_PARAMS(simblas_sgemm_kernel, 4, 4, 4, 4, 4, 4, 8, 4, 8, 8, 4, 8, 4, 8, 4, 8);
SIMCU_KERNEL(simblas_sgemm_kernel) {
  int ta = SIMCU_ARG(0, int), tb = SIMCU_ARG(1, int);
  int m = SIMCU_ARG(2, int), n = SIMCU_ARG(3, int), k = SIMCU_ARG(4, int);
  float alpha = SIMCU_ARG(5, float);
  const float* A = SIMCU_ARG(6, const float*);
  int lda = SIMCU_ARG(7, int);
  long long sa = SIMCU_ARG(8, long long);
  const float* B = SIMCU_ARG(9, const float*);
  int ldb = SIMCU_ARG(10, int);
  long long sb = SIMCU_ARG(11, long long);
  float beta = SIMCU_ARG(12, float);
  float* C = SIMCU_ARG(13, float*);
  int ldc = SIMCU_ARG(14, int);
  long long sc = SIMCU_ARG(15, long long);
  A += sa * simcu_blk->idx.z;
  B += sb * simcu_blk->idx.z;
  C += sc * simcu_blk->idx.z;
  SIMCU_FOR_THREADS(t) {
    int j = (int)SIMCU_GLOBAL_X(t), i = (int)SIMCU_GLOBAL_Y(t);
    if (i < m && j < n)
      simblas_sgemm_at(ta, tb, i, j, k, alpha, A, lda, B, ldb, beta, C, ldc);
  }
}

SIMCU_PARAMS(simblas_saxpy_kernel, 4, 4, 8, 8);
SIMCU_KERNEL(simblas_saxpy_kernel) {
  int n = SIMCU_ARG(0, int);
  float alpha = SIMCU_ARG(1, float);
  const float* x = SIMCU_ARG(2, const float*);
  float* y = SIMCU_ARG(3, float*);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      y[i] = fmaf(alpha, x[i], y[i]);
  }
}

/* simblas_math.h: the arithmetic of libsimblas's kernels, shared by the CUDA
 * kernels (simblas_kernels.cu) and their CPU bodies (simblas_sim.c) so both
 * sum in the same order with fmaf and give the same bits. */
#ifndef SIMBLAS_MATH_H
#define SIMBLAS_MATH_H
#include <math.h>

#ifdef __CUDACC__
#define SIMBLAS_HD __host__ __device__ static inline
#else
#define SIMBLAS_HD static inline
#endif

/* One element: C[i,j] = alpha * (op(A) op(B))[i,j] + beta * C[i,j], where
 * op transposes when ta / tb is set and beta 0 ignores C (as BLAS does). */
SIMBLAS_HD void simblas_sgemm_at(int ta, int tb, int i, int j, int k, float alpha, const float* A,
                                 int lda, const float* B, int ldb, float beta, float* C, int ldc) {
  float acc = 0.0f;
  for (int p = 0; p < k; p++) {
    float a = ta ? A[p * lda + i] : A[i * lda + p];
    float b = tb ? B[j * ldb + p] : B[p * ldb + j];
    acc = fmaf(a, b, acc);
  }
  float c = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
  C[i * ldc + j] = fmaf(alpha, acc, c);
}

#endif

// simblas_kernels.cu: the kernels of libsimblas (see simblas.h), compiled by
// nvcc into the fatbin the library loads with cuModuleLoadData. C linkage
// keeps their names plain for cuModuleGetFunction.
#include "simblas_math.h"

extern "C" __global__ void simblas_sgemm_kernel(int ta, int tb, int m, int n, int k, float alpha,
                                                const float* A, int lda, long long sa,
                                                const float* B, int ldb, long long sb, float beta,
                                                float* C, int ldc, long long sc) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n)
    return;
  A += sa * blockIdx.z;
  B += sb * blockIdx.z;
  C += sc * blockIdx.z;
  simblas_sgemm_at(ta, tb, i, j, k, alpha, A, lda, B, ldb, beta, C, ldc);
}

extern "C" __global__ void simblas_saxpy_kernel(int n, float alpha, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = fmaf(alpha, x[i], y[i]);
}

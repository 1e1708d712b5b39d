// simblas_kernels.cu: the kernels of libsimblas (see simblas.h), compiled by
// nvcc into the fatbin the library loads with cuModuleLoadData. C linkage
// keeps their names plain for cuModuleGetFunction.
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
  float acc = 0.0f;
  for (int p = 0; p < k; p++) {
    float a = ta ? A[p * lda + i] : A[i * lda + p];
    float b = tb ? B[j * ldb + p] : B[p * ldb + j];
    acc = fmaf(a, b, acc);
  }
  float c = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
  C[i * ldc + j] = fmaf(alpha, acc, c);
}

extern "C" __global__ void simblas_saxpy_kernel(int n, float alpha, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = fmaf(alpha, x[i], y[i]);
}

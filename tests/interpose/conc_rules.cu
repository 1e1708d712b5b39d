// Concurrency plans under graph mode (GRAPE_CONCURRENCY=safe), on the sim
// with its cuBLAS: programs whose results show a missed dependence when
// graph nodes with no edge between them run in an adversarial order
// (SIMCU_GRAPH_ORDER=reverse | shuffle:<seed>), and the barrier classes.
//
//   conc_rules dep     per step: fill A (a kernel); C1 = A B1 (cublasSgemm);
//                      C2 = A B2 (cublasSgemm_v2 found by dlsym of
//                      libcublas.so.13); C3 = C1 B3 (cublasGemmEx: reads C1);
//                      C4 = C2 B4 (cublasLtMatmul: reads C2); sum C3 and C4
//                      (a kernel); the sums are read back. C3 after C1 and C4
//                      after C2 are the dependences a plan must keep.
//   conc_rules alias   per step: fill A; C1 = A B1; X = A B2 with X = C1 on
//                      every third step (both write C1: the second must win),
//                      else C2; sum C1 and C2. One graph key; its plan is
//                      made on a step without the alias and must not be used
//                      on one with it.
//   conc_rules nccl    per step: two kernels, then a kernel named like NCCL's
//                      device kernels, then a sync: the barrier class by name.
//   conc_rules coop    the same with a cooperative launch.
//   conc_rules batched per step: fill A; C1 = A B1; C2 = A B2 (cublasSgemm);
//                      {C3, C4} = {C1, C2} B3 (cublasSgemmBatched: its
//                      pointer arrays, in device memory, alias C1 and C2);
//                      C1 = A B4 (overwrites what the batch read); C5 = C3 B1
//                      (reads what it wrote); sum C1 and C5, C3 and C4. The
//                      batch's footprint is not known without reading the
//                      arrays: it must be ordered after C1 and C2 and before
//                      the overwrite and C5, while C1 = A B1 and C2 = A B2 may
//                      run side by side.
//
// Prints "checksum <hex>" (FNV-1a over every step's sums); exit 1 on a CUDA
// or cuBLAS error. Values are small integers in fp32: every GEMM is exact.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcu.h"

#define N 64   // every matrix is N x N, column-major
#define STEPS 24

__global__ void fill(float* a, int step) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  a[i] = (float)((i * 7 + step) % 5 - 2);
}

__global__ void sum2(const float* x, const float* y, long long* out) {
  long long s = 0;
  for (int i = 0; i < N * N; i++)
    s += (long long)x[i] + 3 * (long long)y[i];
  *out = s;
}

__global__ void bump(int* x, int v) {
  *x += v;
}

__global__ void ncclDevKernel_AllReduce_Sum_i32(int* x, int v) {
  *x += v;
}

extern "C" {
SIMCU_KERNEL(_Z4fillPfi) {
  float* a = SIMCU_ARG(0, float*);
  int step = SIMCU_ARG(1, int);
  SIMCU_FOR_THREADS(t) {
    int i = SIMCU_GLOBAL_X(t);
    a[i] = (float)((i * 7 + step) % 5 - 2);
  }
}
SIMCU_KERNEL(_Z4sum2PKfS0_Px) {
  (void)simcu_blk;
  const float* x = SIMCU_ARG(0, const float*);
  const float* y = SIMCU_ARG(1, const float*);
  long long s = 0;
  for (int i = 0; i < N * N; i++)
    s += (long long)x[i] + 3 * (long long)y[i];
  *SIMCU_ARG(2, long long*) = s;
}
SIMCU_KERNEL(_Z4bumpPii) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) += SIMCU_ARG(1, int);
}
SIMCU_KERNEL(_Z31ncclDevKernel_AllReduce_Sum_i32Pii) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) += SIMCU_ARG(1, int);
}
}

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      fprintf(stderr, "conc_rules: %s failed at line %d: %s\n", #x, __LINE__, cudaGetErrorName(e_)); \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)
#define BLAS(x)                                                                               \
  do {                                                                                        \
    int s_ = (int)(x);                                                                        \
    if (s_ != 0) {                                                                            \
      fprintf(stderr, "conc_rules: %s failed at line %d: %d\n", #x, __LINE__, s_);            \
      exit(1);                                                                                \
    }                                                                                         \
  } while (0)

static float* matrix(int seed) {
  float h[N * N];
  for (int i = 0; i < N * N; i++)
    h[i] = (float)((i * (seed + 3) + seed) % 3 - 1);
  float* d;
  CHECK(cudaMalloc((void**)&d, sizeof(h)));
  CHECK(cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice));
  return d;
}

static uint64_t fnv(uint64_t h, const void* p, size_t n) {
  for (size_t i = 0; i < n; i++)
    h = (h ^ ((const uint8_t*)p)[i]) * 0x100000001b3ULL;
  return h;
}

typedef cublasStatus_t (*sgemm_fn)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                   int, const float*, const float*, int, const float*, int,
                                   const float*, float*, int);

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "dep";
  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t sum = 0xcbf29ce484222325ULL;
  long long *out, host;
  CHECK(cudaMalloc((void**)&out, sizeof(long long)));
  if (!strcmp(mode, "nccl") || !strcmp(mode, "coop")) {
    int *x, hx;
    CHECK(cudaMalloc((void**)&x, sizeof(int)));
    CHECK(cudaMemset(x, 0, sizeof(int)));
    for (int step = 0; step < STEPS; step++) {
      bump<<<1, 1, 0, s>>>(x, step);
      bump<<<1, 1, 0, s>>>(x, 1);
      int v = 100;
      if (!strcmp(mode, "nccl")) {
        ncclDevKernel_AllReduce_Sum_i32<<<1, 1, 0, s>>>(x, v);
      } else {
        void* args[] = {&x, &v};
        CHECK(cudaLaunchCooperativeKernel((const void*)bump, dim3(1), dim3(1), args, 0, s));
      }
      bump<<<1, 1, 0, s>>>(x, 2);
      CHECK(cudaMemcpyAsync(&hx, x, sizeof(int), cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      sum = fnv(sum, &hx, sizeof(hx));
    }
    printf("checksum %016llx\n", (unsigned long long)sum);
    return 0;
  }
  cublasHandle_t h;
  cublasLtHandle_t lt;
  BLAS(cublasCreate(&h));
  BLAS(cublasSetStream(h, s));
  BLAS(cublasLtCreate(&lt));
  void* lib = dlopen("libcublas.so.13", RTLD_NOW);
  sgemm_fn sgemm_dl = lib ? (sgemm_fn)dlsym(lib, "cublasSgemm_v2") : NULL;
  if (sgemm_dl == NULL) {
    fprintf(stderr, "conc_rules: no cublasSgemm_v2 by dlsym\n");
    return 1;
  }
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t lay;
  BLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  BLAS(cublasLtMatrixLayoutCreate(&lay, CUDA_R_32F, N, N, N));
  float *A, *C1, *C2, *C3, *C4;
  CHECK(cudaMalloc((void**)&A, N * N * sizeof(float)));
  CHECK(cudaMalloc((void**)&C1, N * N * sizeof(float)));
  CHECK(cudaMalloc((void**)&C2, N * N * sizeof(float)));
  CHECK(cudaMalloc((void**)&C3, N * N * sizeof(float)));
  CHECK(cudaMalloc((void**)&C4, N * N * sizeof(float)));
  float *B1 = matrix(1), *B2 = matrix(2), *B3 = matrix(3), *B4 = matrix(4);
  const float one = 1.0f, zero = 0.0f;
  if (!strcmp(mode, "batched")) {
    float* C5;
    long long *out2, host2[2];
    CHECK(cudaMalloc((void**)&C5, N * N * sizeof(float)));
    CHECK(cudaMalloc((void**)&out2, sizeof(host2)));
    const float* in[2] = {C1, C2};
    const float* b3[2] = {B3, B3};
    float* res[2] = {C3, C4};
    const float **din, **db3;
    float** dres;
    CHECK(cudaMalloc((void**)&din, sizeof(in)));
    CHECK(cudaMalloc((void**)&db3, sizeof(b3)));
    CHECK(cudaMalloc((void**)&dres, sizeof(res)));
    CHECK(cudaMemcpy(din, in, sizeof(in), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(db3, b3, sizeof(b3), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(dres, res, sizeof(res), cudaMemcpyHostToDevice));
    for (int step = 0; step < STEPS; step++) {
      fill<<<N * N / 256, 256, 0, s>>>(A, step);
      BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, N, B1, N, &zero, C1, N));
      BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, N, B2, N, &zero, C2, N));
      BLAS(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, din, N, db3, N, &zero,
                              dres, N, 2));
      BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, N, B4, N, &zero, C1, N));
      BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, C3, N, B1, N, &zero, C5, N));
      sum2<<<1, 1, 0, s>>>(C1, C5, out2);
      sum2<<<1, 1, 0, s>>>(C3, C4, out2 + 1);
      CHECK(cudaMemcpyAsync(host2, out2, sizeof(host2), cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      sum = fnv(sum, host2, sizeof(host2));
    }
    printf("checksum %016llx\n", (unsigned long long)sum);
    return 0;
  }
  int dep = !strcmp(mode, "dep");
  for (int step = 0; step < STEPS; step++) {
    fill<<<N * N / 256, 256, 0, s>>>(A, step);
    BLAS(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, N, B1, N, &zero, C1, N));
    float* x = dep || step % 3 != 2 ? C2 : C1;
    BLAS(sgemm_dl(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, A, N, B2, N, &zero, x, N));
    if (dep) {
      BLAS(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, N, N, N, &one, C1, CUDA_R_32F, N, B3,
                        CUDA_R_32F, N, &zero, C3, CUDA_R_32F, N, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT));
      BLAS(cublasLtMatmul(lt, desc, &one, C2, lay, B4, lay, &zero, C4, lay, C4, lay, NULL, NULL,
                          0, s));
      sum2<<<1, 1, 0, s>>>(C3, C4, out);
    } else {
      sum2<<<1, 1, 0, s>>>(C1, C2, out);
    }
    CHECK(cudaMemcpyAsync(&host, out, sizeof(host), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    sum = fnv(sum, &host, sizeof(host));
  }
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

// bf16_gemm.h: the GEMMs moe and prefill issue as frameworks do, through
// cublasGemmEx on bf16 inputs with float outputs, and their device buffers.
// Included by one translation unit each (its statics are that program's).
#ifndef GRAPE_EXAMPLES_BF16_GEMM_H
#define GRAPE_EXAMPLES_BF16_GEMM_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "common.h"
#include "moe_math.h"

typedef uint16_t bf16;   // bfloat16 bits

#define CUBLAS(call)                                                               \
  do {                                                                             \
    cublasStatus_t s_ = (call);                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                             \
      fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, (int)s_); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static cublasHandle_t blas;
static long gemms;

// Y (rows x n, row-major, float) = X (rows x k, row-major, bf16) W (k x n):
// in cuBLAS's column-major terms Y^T = W^T X^T.
static void gemm(const bf16* W, const bf16* X, float* Y, int rows, int k, int n) {
  const float one = 1.0f, zero = 0.0f;
  CUBLAS(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, rows, k, &one, W, CUDA_R_16BF, n, X,
                      CUDA_R_16BF, k, &zero, Y, CUDA_R_32F, n, CUBLAS_COMPUTE_32F,
                      CUBLAS_GEMM_DEFAULT));
  gemms++;
}

// A weight matrix (k x n) on the device.
static bf16* weights(int which, int k, int n) {
  size_t len = (size_t)k * n;
  bf16* h = (bf16*)malloc(len * sizeof(bf16));
  for (size_t i = 0; i < len; i++)
    h[i] = moe_bf16(moe_weight(which, (int)i));
  bf16* d;
  CHECK(cudaMalloc((void**)&d, len * sizeof(bf16)));
  CHECK(cudaMemcpy(d, h, len * sizeof(bf16), cudaMemcpyHostToDevice));
  free(h);
  return d;
}

template <typename T>
static T* dev(size_t n) {
  T* p;
  CHECK(cudaMalloc((void**)&p, n * sizeof(T)));
  return p;
}

#endif

/* engine.h: the GEMM engine of the sim's cuBLAS stand-ins (sim/cublas/),
 * which lives in libcublasLt.so.13: its heuristic (tile, persistent grid,
 * split-K), its checks, and its launches through the driver. libcublas.so.13
 * calls it through one private export, simcublasLt_gemm, as NVIDIA's
 * libcublas reaches libcublasLt through private entries of its own
 * (cublasLt_for_cublas_*), never through the public cublasLtMatmul: a shim
 * that interposes cublasLtMatmul sees the program's own calls only.
 *
 * Matrices are described as they are stored (rows, columns, leading
 * dimension, order, batch), the way cublasLtMatrixLayout_t does; the legacy
 * API's column-major arguments map onto that directly.
 */
#ifndef SIMCUBLAS_ENGINE_H
#define SIMCUBLAS_ENGINE_H

#include <cublasLt.h>
#include <stddef.h>
#include <stdint.h>

/* The magic of a cuBLAS handle (blas.c): cuBLASLt's calls accept one where
 * an Lt handle is expected, as PyTorch passes its cuBLAS handle to
 * cublasLtMatmul (it never calls cublasLtCreate) and NVIDIA's library
 * serves it. */
#define SIMCUBLAS_BLAS_HANDLE_MAGIC 0x534c4243u

typedef struct simcublas_mat_s {
  const void* ptr;
  int type;                 /* cudaDataType */
  int row_major;            /* CUBLASLT_ORDER_ROW, else column-major */
  int64_t rows, cols, ld;   /* as stored */
  int batch;                /* entries, 1 when not batched */
  int64_t batch_stride;     /* elements between entries */
} simcublas_mat_t;

/* D = epilogue(alpha op(A) op(B) + beta C), as a call asked for it. */
typedef struct simcublas_gemm_s {
  int trans_a, trans_b;     /* cublasOperation_t */
  simcublas_mat_t a, b, c, d;
  int compute;              /* cublasComputeType_t */
  int scale_type;           /* cudaDataType of alpha and beta */
  int tf32;                 /* the handle's math mode lets fp32 use TF32 */
  const void* alpha;
  const void* beta;
  int device_scalars;       /* alpha and beta are device pointers */
  int epilogue;             /* cublasLtEpilogue_t: DEFAULT, RELU, BIAS, RELU_BIAS */
  const void* bias;
  int bias_type;
  int64_t bias_batch_stride;
  int sm_target;            /* 0: every SM */
  void* workspace;
  size_t workspace_size;
  const cublasLtMatmulAlgo_t* algo;   /* NULL: the heuristic's first choice */
  int ptr_array;            /* a, b, c, d .ptr are device arrays of batch pointers (gemmBatched) */
} simcublas_gemm_t;

/* Checks, plans and launches g on stream (the engine's driver table: raw
 * dlsym of libcuda.so.1, as cuBLASLt's). */
cublasStatus_t simcublasLt_gemm(const simcublas_gemm_t* g, cudaStream_t stream);

#endif

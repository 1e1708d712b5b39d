/* Kernel records and features (kernel.c): internal part. */
#ifndef GRAPE_PREDICT_KERNEL_H
#define GRAPE_PREDICT_KERNEL_H

#include "grape/predict.h"

/* A kernel with its name parsed and its op counts computed; what the models
 * read. Lives inside grape_kernel_prep_t (checked by a static assert). */
typedef struct grape__kprep_s {
  double cls;          /* grape_kclass_t */
  double blocks;       /* grid.x * grid.y * grid.z */
  double threads;      /* per block */
  double smem;         /* bytes per block: dynamic + estimated static */
  double regs;         /* per thread, estimated when unknown */
  double flops;        /* useful floating-point operations; 0 = unknown */
  double bytes;        /* minimum DRAM traffic; 0 = unknown */
  double tile_m, tile_n; /* GEMM thread-block tile, 0 = unknown */
  double kred;         /* GEMM reduction length, 0 = unknown */
  double numel;        /* elements of the output (elementwise, rows x cols ...) */
  double cols;         /* reduced length (softmax, layernorm) */
  double variant;      /* class-specific kernel family, 0..GRAPE__NVARIANT-1 */
  double operands;     /* elementwise tensors touched (inputs + output) */
  double dtype;        /* element size, bytes */
  double math;         /* 0 FP32 SIMT, 1 TF32, 2 FP16, 3 BF16 tensor, 4 FP64 */
  double has_dims;     /* 1 when flops/bytes come from op dims */
  double layout;       /* GEMM operand layout: 1 nn, 2 nt, 3 tn, 4 tt, 0 unknown */
  double blk_flops;    /* GEMM: padded FLOPs of one block (tiles, split-K), 0 = unknown */
  double gen;          /* cuBLAS kernel generation prefix: 0 none, 1 maxwell_, 2 volta_/turing_, 3 ampere_ */
  /* The op's shape, 0 = unknown: GEMM batch, M, N, K; elementwise numel;
   * softmax and layer norm rows, cols; conv batch, in and out channels,
   * input size (the kernel size is in kred). What the per-GPU models split
   * on, and what groups the rows of one shape in cross-validation. */
  double shape[4];
} grape__kprep_t;

#define GRAPE__NVARIANT 8

/* Occupancy of a kernel on a GPU. */
typedef struct grape__occ_s {
  double per_sm;       /* resident blocks per SM (>= 1) */
  double waves;        /* ceil(blocks / (SMs x per_sm)) */
  double util;         /* blocks / (waves x SMs x per_sm), in (0, 1] */
  double fill;         /* resident threads / max threads of the whole GPU, <= 1 */
} grape__occ_t;

void grape__kernel_prep(const grape_kernel_desc_t* k, grape__kprep_t* p);
void grape__occupancy(const grape__kprep_t* p, const grape_gpu_spec_t* g, grape__occ_t* o);
/* Peak FLOP/s (TFLOP/s) that applies to the kernel's data type on g. */
double grape__peak_tflops(const grape__kprep_t* p, const grape_gpu_spec_t* g);

#endif

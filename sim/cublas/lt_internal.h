/* lt_internal.h: what the files of libcublasLt.so.13's stand-in share
 * (engine.c, lt.c); nothing here is exported. */
#ifndef SIMCUBLAS_LT_INTERNAL_H
#define SIMCUBLAS_LT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

#define SIMCUBLAS_EXPORT __attribute__((visibility("default")))
#define SIMCUBLAS_ALGO_MAGIC 0x5343414cu   /* "SCAL" */

/* A checked problem. */
typedef struct simcublas_shape_s {
  int m, n, k, batch;
  int acc;    /* SC_ACC_* (gemm_math.h) */
  int kind;   /* SC_KIND_* */
} simcublas_shape_t;

/* What cublasLtMatmulAlgo_t holds (its 64 bytes): the kernel and its tiling. */
typedef struct simcublas_algo_s {
  uint32_t magic;
  int32_t kind;
  int32_t tile_m, tile_n;
  uint32_t tile;     /* cublasLtMatmulTile_t */
  int32_t splits;    /* 1: no split-K */
  int32_t grid;      /* persistent: blocks; 0: one block per tile */
  int32_t id;
} simcublas_algo_t;
_Static_assert(sizeof(simcublas_algo_t) <= sizeof(cublasLtMatmulAlgo_t), "algo fits");

/* The library's driver binding and this thread's context. */
cublasStatus_t simcublas__enter(void);
/* The problem g describes, or why it cannot run; pointers: also check the
 * operands' and scalars' pointers (not for the heuristic, which has none). */
cublasStatus_t simcublas__check(const simcublas_gemm_t* g, simcublas_shape_t* s, int pointers);
/* The heuristic: the kernel for s on sm_target SMs (0: all) with at most
 * ws_max bytes of workspace (no split-K when no_split), and the bytes it needs. */
void simcublas__plan(const simcublas_shape_t* s, int sm_target, size_t ws_max, int no_split,
                     simcublas_algo_t* a, size_t* ws_needed);
/* cublasLtMatmulHeuristicResult_t's wavesCount: blocks over what one round holds. */
float simcublas__waves(const simcublas_shape_t* s, const simcublas_algo_t* a);

#endif

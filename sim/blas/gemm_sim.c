/* gemm_sim.c: CPU bodies and device-model costs of the sim's cuBLAS kernels
 * (gemm_kernels.cu; see sim/simcu.h). The bodies run gemm_math.h's
 * arithmetic, as the kernels do.
 *
 * DESIGN: a block's simulated time is its tiles' multiply-adds at one
 * multiprocessor's share of the device's GEMM throughput, by kernel family,
 * and a launch moves each operand through device memory once (the L2 keeps
 * the reuse), writing D or the split-K partial sums. The throughputs are
 * H100/H200 (the same SMs and clocks) peaks derated to published cuBLAS
 * measurements (docs/sim.md, "The cuBLAS stand-ins"):
 *   bf16/fp16 tensor-op   989.4 TFLOP/s x 0.806 (797.5 measured at 8192^3)
 *   TF32 tensor-op        494.7 TFLOP/s x 0.813 (402 measured at 4096^3)
 *   fp32 SIMT              66.9 TFLOP/s x 0.776 (51.9 measured at 4096^3)
 *   fp64                   66.9 TFLOP/s x 0.776 (nominal: the fp32 ratio) */
#include <math.h>
#include <stdlib.h>

#include "gemm_math.h"
#include "simcu.h"

static const double flops_per_ns[] = {
  [SC_KIND_TENSOR16] = 989.4e3 * 0.806,   /* per ns, whole device */
  [SC_KIND_TF32] = 494.7e3 * 0.813,
  [SC_KIND_SIMT32] = 66.9e3 * 0.776,
  [SC_KIND_SIMT64] = 66.9e3 * 0.776,
};
#define SC_SMS 132

static double elt(int type) {
  return type == SC_F64 ? 8.0 : (type == SC_F32 ? 4.0 : 2.0);
}

static double acc_bytes(const simcublas_params_t* p) {
  return p->acc == SC_ACC_F64 ? 8.0 : 4.0;
}

static int reads_c(const simcublas_params_t* p) {
  return p->beta_ptr != NULL || p->beta != 0.0;
}

/* SIMCU_TARGET_SLOWDOWN (default 1): a persistent kernel launched on fewer
 * blocks than SMs (an SM-count target) takes this many times longer per
 * tile: a library whose algorithm under a target is slower, for tests of
 * go mode's verdict. Read once. */
static double target_slowdown(void) {
  static double f;
  if (f == 0) {
    const char* e = getenv("SIMCU_TARGET_SLOWDOWN");
    double v = e != NULL ? atof(e) : 1.0;
    f = v >= 1.0 ? v : 1.0;
  }
  return f;
}

/* A GEMM kernel: its tiles at one SM's share, each operand read once. */
static void gemm_cost(const simcu_block_t* launch, const simcublas_params_t* p, simcu_cost_t* out) {
  int kind = p->kind >= SC_KIND_TENSOR16 && p->kind <= SC_KIND_SIMT64 ? p->kind : SC_KIND_SIMT32;
  double per_sm = flops_per_ns[kind] / SC_SMS;
  double occ = p->occupancy > 0 ? p->occupancy : 1;   /* blocks sharing one SM */
  double total = (double)p->tiles_m * p->tiles_n * p->batch;
  double grid = (double)launch->grid.x;
  double tiles = p->persistent ? ceil(total / grid) : 1.0;
  double klen = (double)p->k / (p->splits > 0 ? p->splits : 1);
  out->cta_ns = tiles * 2.0 * p->tile_m * p->tile_n * klen / (per_sm / occ);
  if (p->persistent && grid < SC_SMS)
    out->cta_ns *= target_slowdown();
  double mn = (double)p->m * p->n, b = (double)p->batch;
  out->bytes = b * ((double)p->m * p->k * elt(p->type_a) + (double)p->k * p->n * elt(p->type_b));
  if (p->splits > 1)
    out->bytes += b * mn * p->splits * acc_bytes(p);
  else
    out->bytes += b * mn * (elt(p->type_d) + (reads_c(p) ? elt(p->type_c) : 0.0));
}

/* A GEMM kernel's body (its tiles, gemm_math.h) and its cost. */
#define GEMM_KERNEL(name)                                                                   \
  SIMCU_PARAMS(name, sizeof(simcublas_params_t));                                           \
  SIMCU_KERNEL(name) {                                                                      \
    const simcublas_params_t* p = &SIMCU_ARG(0, simcublas_params_t);                        \
    sc_gemm_block(p, simcu_blk->idx.x, simcu_blk->grid.x, (int)simcu_blk->idx.z, 0, 1);     \
  }                                                                                         \
  SIMCU_COST(name) {                                                                        \
    gemm_cost(simcu_blk, &SIMCU_ARG(0, simcublas_params_t), simcu_cost);                    \
  }

GEMM_KERNEL(simcublas_sm90_gemm_tensorop)
GEMM_KERNEL(simcublas_sm90_gemm_tensorop_persistent)
GEMM_KERNEL(simcublas_sm90_gemm_simt)

SIMCU_PARAMS(simcublas_sm90_splitk_reduce, sizeof(simcublas_params_t));
SIMCU_KERNEL(simcublas_sm90_splitk_reduce) {
  const simcublas_params_t* p = &SIMCU_ARG(0, simcublas_params_t);
  int64_t base = (int64_t)simcu_blk->idx.x * simcu_blk->block.x;
  SIMCU_FOR_THREADS(t) {
    sc_reduce_at(p, base + t);
  }
}
/* Memory-bound: the partial sums in, D (and C) through; no arithmetic to speak of. */
SIMCU_COST(simcublas_sm90_splitk_reduce) {
  (void)simcu_blk;
  const simcublas_params_t* p = &SIMCU_ARG(0, simcublas_params_t);
  double mn = (double)p->m * p->n * p->batch;
  simcu_cost->cta_ns = 0.0;
  simcu_cost->bytes =
      mn * (p->splits * acc_bytes(p) + elt(p->type_d) + (reads_c(p) ? elt(p->type_c) : 0.0));
}

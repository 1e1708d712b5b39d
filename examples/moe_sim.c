/* moe_sim.c: CPU bodies of moe's own kernels for the simulated device (see
 * sim/simcu.h); its GEMMs run in the sim's cuBLAS.
 *
 * DESIGN: each body runs one block, a loop over its threads in place of
 * threadIdx, and calls the same moe_math.h functions as the kernel. */
#include "moe_math.h"
#include "simcu.h"

typedef uint16_t bf16;

/* embed(const int*, bf16*, moe_rows_t) */
SIMCU_PARAMS(_Z5embedPKiPt10moe_rows_s, 8, 8, sizeof(moe_rows_t));
SIMCU_KERNEL(_Z5embedPKiPt10moe_rows_s) {
  const int32_t* tok = SIMCU_ARG(0, const int32_t*);
  bf16* x = SIMCU_ARG(1, bf16*);
  moe_rows_t rows = SIMCU_ARG(2, moe_rows_t);
  unsigned r = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) { x[r * MOE_D + j] = moe_bf16(moe_embed(tok[rows.slot[r]], (int)j)); }
}

SIMCU_PARAMS(_Z4attnPKfS0_S0_Pt, 8, 8, 8, 8);
SIMCU_KERNEL(_Z4attnPKfS0_S0_Pt) {
  const float* q = SIMCU_ARG(0, const float*);
  const float* k = SIMCU_ARG(1, const float*);
  const float* v = SIMCU_ARG(2, const float*);
  bf16* o = SIMCU_ARG(3, bf16*);
  unsigned r = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) {
    unsigned g = j % MOE_KV;
    o[r * MOE_D + j] = moe_bf16(moe_attn(q[r * MOE_D + j], k[r * MOE_KV + g], v[r * MOE_KV + g]));
  }
}

SIMCU_PARAMS(_Z8residualPtPKf, 8, 8);
SIMCU_KERNEL(_Z8residualPtPKf) {
  bf16* x = SIMCU_ARG(0, bf16*);
  const float* h = SIMCU_ARG(1, const float*);
  SIMCU_FOR_THREADS(j) {
    unsigned i = simcu_blk->idx.x * MOE_D + j;
    x[i] = moe_bf16(moe_residual(moe_int(x[i]), h[i]));
  }
}

SIMCU_PARAMS(_Z5routePKtPii, 8, 8, 4);
SIMCU_KERNEL(_Z5routePKtPii) {
  const bf16* x = SIMCU_ARG(0, const bf16*);
  int32_t* expert = SIMCU_ARG(1, int32_t*);
  int layer = SIMCU_ARG(2, int);
  unsigned r = simcu_blk->idx.x;
  expert[r] = moe_route(x + r * MOE_D, layer);   /* thread 0's work */
}

SIMCU_PARAMS(_Z6gatherPKtPKiPt, 8, 8, 8);
SIMCU_KERNEL(_Z6gatherPKtPKiPt) {
  const bf16* x = SIMCU_ARG(0, const bf16*);
  const int32_t* perm = SIMCU_ARG(1, const int32_t*);
  bf16* xg = SIMCU_ARG(2, bf16*);
  unsigned i = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) { xg[i * MOE_D + j] = x[perm[i] * MOE_D + j]; }
}

SIMCU_PARAMS(_Z3actPKfPt, 8, 8);
SIMCU_KERNEL(_Z3actPKfPt) {
  const float* u = SIMCU_ARG(0, const float*);
  bf16* a = SIMCU_ARG(1, bf16*);
  SIMCU_FOR_THREADS(j) {
    unsigned i = simcu_blk->idx.x * MOE_F + j;
    a[i] = moe_bf16(moe_act(u[i]));
  }
}

SIMCU_PARAMS(_Z7scatterPtPKfPKi, 8, 8, 8);
SIMCU_KERNEL(_Z7scatterPtPKfPKi) {
  bf16* x = SIMCU_ARG(0, bf16*);
  const float* y = SIMCU_ARG(1, const float*);
  const int32_t* perm = SIMCU_ARG(2, const int32_t*);
  unsigned i = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) {
    unsigned d = (unsigned)perm[i] * MOE_D + j;
    x[d] = moe_bf16(moe_combine(moe_int(x[d]), y[i * MOE_D + j]));
  }
}

SIMCU_PARAMS(_Z6samplePKfPi10moe_rows_sji, 8, 8, sizeof(moe_rows_t), 4, 4);
SIMCU_KERNEL(_Z6samplePKfPi10moe_rows_sji) {
  const float* logits = SIMCU_ARG(0, const float*);
  int32_t* tok = SIMCU_ARG(1, int32_t*);
  moe_rows_t rows = SIMCU_ARG(2, moe_rows_t);
  uint32_t seed = SIMCU_ARG(3, uint32_t);
  int step = SIMCU_ARG(4, int);
  SIMCU_FOR_THREADS(r) { tok[rows.slot[r]] = moe_sample(logits + r * MOE_V, seed, step, rows.slot[r]); }
}

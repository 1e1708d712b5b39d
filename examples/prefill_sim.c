/* prefill_sim.c: CPU bodies of prefill's own kernels for the simulated
 * device (see sim/simcu.h); its GEMMs run in the sim's cuBLAS.
 *
 * DESIGN: each body runs one block: the loop over a row's columns that the
 * block's threads share, calling the same prefill_math.h functions as the
 * kernel. */
#include <stddef.h>

#include "prefill_math.h"
#include "simcu.h"

typedef uint16_t bf16;

/* embed(const int*, bf16*, int) */
SIMCU_PARAMS(_Z5embedPKiPti, 8, 8, 4);
SIMCU_KERNEL(_Z5embedPKiPti) {
  const int32_t* tok = SIMCU_ARG(0, const int32_t*);
  bf16* x = SIMCU_ARG(1, bf16*);
  int d = SIMCU_ARG(2, int), r = (int)simcu_blk->idx.x;
  for (int j = 0; j < d; j++)
    x[r * d + j] = moe_bf16(moe_embed(tok[r], j));
}

SIMCU_PARAMS(_Z4attnPKfS0_S0_Ptii, 8, 8, 8, 8, 4, 4);
SIMCU_KERNEL(_Z4attnPKfS0_S0_Ptii) {
  const float* q = SIMCU_ARG(0, const float*);
  const float* k = SIMCU_ARG(1, const float*);
  const float* v = SIMCU_ARG(2, const float*);
  bf16* o = SIMCU_ARG(3, bf16*);
  int d = SIMCU_ARG(4, int), kv = SIMCU_ARG(5, int), r = (int)simcu_blk->idx.x;
  for (int j = 0; j < d; j++)
    o[r * d + j] = moe_bf16(moe_attn(q[r * d + j], k[r * kv + j % kv], v[r * kv + j % kv]));
}

SIMCU_PARAMS(_Z8residualPtPKfi, 8, 8, 4);
SIMCU_KERNEL(_Z8residualPtPKfi) {
  bf16* x = SIMCU_ARG(0, bf16*);
  const float* h = SIMCU_ARG(1, const float*);
  int d = SIMCU_ARG(2, int), r = (int)simcu_blk->idx.x;
  for (int j = 0; j < d; j++)
    x[r * d + j] = moe_bf16(moe_residual(moe_int(x[r * d + j]), h[r * d + j]));
}

SIMCU_PARAMS(_Z6gatherPKtPKiPti, 8, 8, 8, 4);
SIMCU_KERNEL(_Z6gatherPKtPKiPti) {
  const bf16* x = SIMCU_ARG(0, const bf16*);
  const int32_t* perm = SIMCU_ARG(1, const int32_t*);
  bf16* xg = SIMCU_ARG(2, bf16*);
  int d = SIMCU_ARG(3, int), i = (int)simcu_blk->idx.x, p = perm[i];
  for (int j = 0; j < d; j++)
    xg[i * d + j] = p >= 0 ? x[p * d + j] : moe_bf16(0);
}

SIMCU_PARAMS(_Z3actPKfPtiiS0_S1_i, 8, 8, 4, 4, 8, 8, 4);
SIMCU_KERNEL(_Z3actPKfPtiiS0_S1_i) {
  const float* u = SIMCU_ARG(0, const float*);
  bf16* a = SIMCU_ARG(1, bf16*);
  int f = SIMCU_ARG(2, int), nrouted = SIMCU_ARG(3, int);
  const float* us = SIMCU_ARG(4, const float*);
  bf16* as = SIMCU_ARG(5, bf16*);
  int s = SIMCU_ARG(6, int), i = (int)simcu_blk->idx.x;
  if (i < nrouted) {
    for (int j = 0; j < f; j++)
      a[i * f + j] = moe_bf16(moe_act(u[i * f + j]));
  } else {
    int t = i - nrouted;
    for (int j = 0; j < s; j++)
      as[t * s + j] = moe_bf16(pf_gated(us[t * 2 * s + j], us[t * 2 * s + s + j]));
  }
}

SIMCU_PARAMS(_Z7combinePtPKfS1_PKii, 8, 8, 8, 8, 4);
SIMCU_KERNEL(_Z7combinePtPKfS1_PKii) {
  bf16* x = SIMCU_ARG(0, bf16*);
  const float* y = SIMCU_ARG(1, const float*);
  const float* ys = SIMCU_ARG(2, const float*);
  const int32_t* slot = SIMCU_ARG(3, const int32_t*);
  int d = SIMCU_ARG(4, int), r = (int)simcu_blk->idx.x, s0 = slot[2 * r], s1 = slot[2 * r + 1];
  for (int j = 0; j < d; j++)
    x[r * d + j] = moe_bf16(pf_combine(moe_int(x[r * d + j]), ys[r * d + j],
                                       s0 >= 0 ? &y[s0 * d + j] : NULL,
                                       s1 >= 0 ? &y[s1 * d + j] : NULL));
}

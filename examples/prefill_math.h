/* prefill_math.h: the sizes, routing and element arithmetic of prefill (a
 * chunked prefill through mixture-of-experts layers at serving sizes),
 * shared by its CUDA kernels, their CPU bodies and the host code.
 *
 * DESIGN: the values are moe's (moe_math.h): small integers in bfloat16,
 * GEMMs in float that stay exact integers in any summation order (at most
 * PF_S products of magnitude <= 24 per sum: 135,168 < 2^24), turned back into
 * small integers between GEMMs. So every plan, order and kernel cuBLAS picks
 * gives the same bits.
 *
 * Routing is by a hash of the token id (hash layers, Roller et al., NeurIPS
 * 2021), top-2 with a fixed capacity per expert (Switch Transformer): the
 * host knows a prompt's tokens, so it routes each chunk without reading
 * anything back, and the experts' GEMMs have one shape per chunk length, as
 * in serving engines that pad to a capacity to replay graphs. A run's path
 * therefore never depends on a GEMM's result, so SIMCU_TIME_ONLY=1 runs
 * (bodies skipped) take the same path and the same simulated time as full
 * ones. */
#ifndef PREFILL_MATH_H
#define PREFILL_MATH_H
#include "moe_math.h"

/* The model's sizes (full; --small: widths / 16, chunks / 8). */
typedef struct pf_dims_s {
  int d;      /* model width */
  int kv;     /* width of K and V (grouped-query attention) */
  int f;      /* routed expert width */
  int s;      /* shared expert width; its gate|up projection is 2s wide */
  int tmax;   /* tokens per chunk (the scheduler's token budget) */
  int tstep;  /* a prompt's last chunk is padded to a multiple of this */
} pf_dims_t;

#define PF_L 4   /* layers */
#define PF_E 8   /* routed experts, top-2 */
#define PF_FULL ((pf_dims_t){2048, 256, 1024, 5632, 512, 64})
#define PF_SMALL ((pf_dims_t){128, 32, 64, 352, 64, 8})
#define PF_S 5632   /* the largest inner dimension of any GEMM (exactness bound) */

/* Each expert takes at most 2T/E tokens of a T-token chunk (capacity factor 1). */
EX_HD int pf_capacity(int t) {
  return 2 * t / PF_E;
}

/* Token position p of prompt b, and the prompt's length. */
EX_HD int pf_token(int b, int p) {
  return (int)(moe_hash(0x70cu, (uint32_t)b, (uint32_t)p) % 32000u);
}

EX_HD int pf_prompt_len(int b, int tmax) {
  return tmax / 2 + (int)(moe_hash(0x1e4u, (uint32_t)b, 0u) % (uint32_t)(tmax * 3));
}

/* Token tok's k-th expert (k = 0, 1) in layer l: two different experts. */
EX_HD int pf_expert(int tok, int l, int k) {
  uint32_t h = moe_hash(0xe7u, (uint32_t)tok, (uint32_t)l);
  int e0 = (int)(h % PF_E);
  return k == 0 ? e0 : (e0 + 1 + (int)((h >> 8) % (PF_E - 1))) % PF_E;
}

/* The shared expert's gated activation: ReLU(gate) times up, rescaled. */
EX_HD int pf_gated(float g, float u) {
  return moe_clamp(moe_shr(moe_act(g) * moe_requant(u, 4), 2));
}

/* A token's update: its shared expert's output and its routed experts'
 * (y0, y1 NULL where the token was dropped at an expert's capacity). */
EX_HD int pf_combine(int x, float ys, const float* y0, const float* y1) {
  int v = x + moe_requant(ys, 4);
  if (y0 != NULL)
    v += moe_requant(*y0, 4);
  if (y1 != NULL)
    v += moe_requant(*y1, 4);
  return moe_clamp(v);
}

#endif

/* moe_math.h: the arithmetic of moe (a decode step with separate Q, K and V
 * projections and a mixture of experts), shared by its CUDA kernels, their
 * CPU bodies and the test's plain-C reference.
 *
 * DESIGN: every activation and weight is a small integer held in bfloat16,
 * and every GEMM (cuBLAS, bfloat16 in, float out, float accumulation) sums at
 * most MOE_F products of magnitude <= 8 * 3, so its result is an exact
 * integer in any summation order, on any kernel NVIDIA's heuristic picks, on
 * tensor cores or not: the sim's cuBLAS and a GPU's give the same bits. The
 * kernels between the GEMMs turn the float results back into small integers
 * (a floor shift and a clamp), so values never grow. The sizes, the weights
 * and each batch's sequences are here too, because the program, its bodies
 * and the reference must agree on them.
 */
#ifndef MOE_MATH_H
#define MOE_MATH_H
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define EX_HD __host__ __device__ static inline
#else
#define EX_HD static inline
#endif

#define MOE_L 2          /* layers */
#define MOE_D 256        /* model width */
#define MOE_KV 64        /* width of K and V (grouped-query attention) */
#define MOE_F 512        /* expert width */
#define MOE_E 4          /* experts, top-1 routing */
#define MOE_V 64         /* vocabulary */
#define MOE_B 8          /* sequences in a batch */
#define MOE_EOS 3        /* a sampled token below this ends its sequence */
#define MOE_MINLEN 4     /* shortest per-sequence length limit */
#define MOE_MAXLEN 20    /* longest */
#define MOE_LO (-8)      /* activations stay in [MOE_LO, MOE_HI] */
#define MOE_HI 7

/* Weight matrices (row-major, k x n for a GEMM from width k to width n),
 * named for moe_weight: layer l's Q, K, V, O, expert e's up and down
 * projection, the router (not a GEMM: one row of MOE_D per expert) and the
 * LM head. */
#define MOE_W_Q(l) ((l) * 16 + 0)
#define MOE_W_K(l) ((l) * 16 + 1)
#define MOE_W_V(l) ((l) * 16 + 2)
#define MOE_W_O(l) ((l) * 16 + 3)
#define MOE_W_UP(l, e) ((l) * 16 + 4 + (e))
#define MOE_W_DOWN(l, e) ((l) * 16 + 8 + (e))
#define MOE_W_ROUTER(l, e) (100 + (l) * MOE_E + (e))
#define MOE_W_LM 1000

/* The GEMMs of one step: per layer Q, K, V, O, then one up and one down
 * projection per expert that got tokens; then the LM head. */
#define MOE_GEMMS_FIXED_PER_LAYER 4
/* Kernels of one step other than GEMMs: embed; per layer attn, residual,
 * route, gather, act, scatter; sample. */
#define MOE_OWN_KERNELS_PER_STEP (2 + 6 * MOE_L)

/* Row r of a step reads and writes slot slot[r] of the batch. */
typedef struct moe_rows_s {
  int32_t slot[MOE_B];
} moe_rows_t;

/* ---- Values ---- */

EX_HD uint32_t moe_hash(uint32_t a, uint32_t b, uint32_t c) {
  uint32_t h = a * 0x9e3779b1u ^ (b + 0x7f4a7c15u) * 0x85ebca6bu ^ (c + 0x165667b1u) * 0xc2b2ae35u;
  h ^= h >> 15;
  h *= 0x2c1b3c6du;
  h ^= h >> 12;
  h *= 0x297a2d39u;
  return h ^ (h >> 15);
}

/* Weight idx of matrix `which` (layer and role, see moe.cu): -3 .. 3. */
EX_HD int moe_weight(int which, int idx) {
  return (int)(moe_hash(0x3e0eu + (uint32_t)which, (uint32_t)idx, 17u) % 7u) - 3;
}

/* Token t's embedding, element j: MOE_LO .. MOE_HI. */
EX_HD int moe_embed(int t, int j) {
  return (int)(moe_hash(0xe3bu, (uint32_t)t, (uint32_t)j) % 16u) + MOE_LO;
}

EX_HD int moe_clamp(int v) {
  return v < MOE_LO ? MOE_LO : (v > MOE_HI ? MOE_HI : v);
}

/* floor(v / 2^s): the same for negative v in C and CUDA. */
EX_HD int moe_shr(int v, int s) {
  return v >= 0 ? v >> s : -((-v + (1 << s) - 1) >> s);
}

/* A GEMM result (an exact integer in a float) back to an activation. */
EX_HD int moe_requant(float y, int s) {
  return moe_clamp(moe_shr((int)y, s));
}

/* A small integer as bfloat16 bits (exact: at most 8 significant bits). */
EX_HD uint16_t moe_bf16(int v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

EX_HD int moe_int(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return (int)f;
}

/* ---- One element each ---- */

/* Attention stand-in: the query plus the key-value product of its group. */
EX_HD int moe_attn(float q, float k, float v) {
  return moe_clamp(moe_requant(q, 4) + moe_shr(moe_requant(k, 4) * moe_requant(v, 4), 2));
}

EX_HD int moe_residual(int x, float h) {
  return moe_clamp(x + moe_requant(h, 4));
}

/* The expert's hidden value: ReLU of the requantised up projection. */
EX_HD int moe_act(float u) {
  int v = moe_requant(u, 4);
  return v > 0 ? v : 0;
}

EX_HD int moe_combine(int x, float y) {
  return moe_clamp(x + moe_requant(y, 4));
}

/* Router score of expert e for an activation row (integers, exact). */
EX_HD int moe_route(const uint16_t* x, int layer) {
  int best = 0, best_s = 0;
  for (int e = 0; e < MOE_E; e++) {
    int s = 0;
    for (int j = 0; j < MOE_D; j++)
      s += moe_int(x[j]) * moe_weight(MOE_W_ROUTER(layer, e), j);
    if (e == 0 || s > best_s) {
      best = e;
      best_s = s;
    }
  }
  return best;
}

/* The next token of a slot: the best logit with seeded noise. */
EX_HD int moe_sample(const float* logits, uint32_t seed, int step, int slot) {
  int best = 0, best_s = 0;
  for (int v = 0; v < MOE_V; v++) {
    int s = moe_requant(logits[v], 3) * 16 +
            (int)(moe_hash(seed, (uint32_t)(step * MOE_B + slot), (uint32_t)v) & 15u);
    if (v == 0 || s > best_s) {
      best = v;
      best_s = s;
    }
  }
  return best;
}

/* ---- Batches (host data) ---- */

/* Slot s of batch b: its first token and its length limit. */
EX_HD int moe_first_token(int b, int s) {
  return (int)(moe_hash(0xf1u, (uint32_t)b, (uint32_t)s) % (MOE_V - MOE_EOS)) + MOE_EOS;
}

EX_HD int moe_limit(int b, int s) {
  return MOE_MINLEN + (int)(moe_hash(0x11u, (uint32_t)b, (uint32_t)s) % (MOE_MAXLEN - MOE_MINLEN + 1));
}

EX_HD uint32_t moe_seed(int b) {
  return moe_hash(0x5eedu, (uint32_t)b, 0u);
}

#endif

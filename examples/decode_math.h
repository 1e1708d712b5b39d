/* decode_math.h: the arithmetic of decode (a small transformer decoder), shared
 * by its CUDA kernels, their CPU bodies and the test's plain-C reference.
 *
 * DESIGN: integers only (activations in Q8 fixed point, weights small
 * integers, 64-bit accumulators, division that truncates toward zero as C and
 * CUDA both define it), so a GPU and the sim compute the same bits without
 * relying on float rounding or on a library's expf. Each function computes
 * one output element or one row, in a fixed order; the loops over rows,
 * heads and layers belong to the callers. The sizes and the weight layout are
 * here too because the program, its bodies and the reference must agree on
 * them, and so are the weights and each batch's sequences (input data, host
 * code). Values stay inside +-DEC_CLAMP after every step, so no product of
 * two of them overflows the 64-bit accumulators.
 */
#ifndef DECODE_MATH_H
#define DECODE_MATH_H
#include <stdint.h>

#include "common.h"

#ifdef __CUDACC__
#define EX_HD __host__ __device__ static inline
#else
#define EX_HD static inline
#endif

#define DEC_L 6                     /* layers */
#define DEC_D 32                    /* model width */
#define DEC_NH 4                    /* attention heads */
#define DEC_HD (DEC_D / DEC_NH)     /* width of one head */
#define DEC_F 64                    /* MLP width */
#define DEC_V 64                    /* vocabulary */
#define DEC_B 8                     /* most sequences in a batch (= KV-cache slots) */
#define DEC_T 64                    /* longest sequence (KV-cache positions per slot) */
#define DEC_EOS 2                   /* a sampled token below this ends its sequence */
#define DEC_MINLEN 8                /* shortest per-sequence length limit */
#define DEC_ONE 256                 /* 1.0 in Q8 */
#define DEC_CLAMP (1 << 15)
#define DEC_WDIV 16                 /* GEMM output scale: weights are about 16x too big */
#define DEC_SDIV 1024               /* attention score scale */
#define DEC_SM_STEP 32              /* a score this much below the max halves its weight */
#define DEC_KERNELS_PER_LAYER 16
/* embed; the layers; final norm, LM-head GEMM, sample. */
#define DEC_KERNELS_PER_STEP (1 + DEC_L * DEC_KERNELS_PER_LAYER + 3)

/* Weight layout (int32 elements). One layer: norm gain 1, Wq, Wk, Wv, Wo
 * (D x D each), norm gain 2, W_gate|up (D x 2F: gate columns first), W_down
 * (F x D). Then the embedding (V x D), the final gain and the LM head (D x V).
 * Matrices are row-major, k x m for a GEMM from width k to width m. */
#define DEC_W_G1 0
#define DEC_W_Q (DEC_W_G1 + DEC_D)
#define DEC_W_K (DEC_W_Q + DEC_D * DEC_D)
#define DEC_W_V (DEC_W_K + DEC_D * DEC_D)
#define DEC_W_O (DEC_W_V + DEC_D * DEC_D)
#define DEC_W_G2 (DEC_W_O + DEC_D * DEC_D)
#define DEC_W_GU (DEC_W_G2 + DEC_D)
#define DEC_W_DOWN (DEC_W_GU + DEC_D * 2 * DEC_F)
#define DEC_W_LAYER (DEC_W_DOWN + DEC_F * DEC_D)
#define DEC_W_EMB (DEC_L * DEC_W_LAYER)
#define DEC_W_GF (DEC_W_EMB + DEC_V * DEC_D)
#define DEC_W_LM (DEC_W_GF + DEC_D)
#define DEC_W_TOTAL (DEC_W_LM + DEC_D * DEC_V)

/* The model's weights (host code): small integer matrices, norm gains near
 * 16 (1.0 in Q4) and an embedding in Q8, drawn from one fixed seed. The
 * weights are the program's input data, so the test's reference takes them
 * from here too. */
static inline void dec_weights(int32_t* W) {
  uint64_t seed = 2024;
  for (int l = 0; l < DEC_L; l++) {
    int32_t* lw = W + l * DEC_W_LAYER;
    for (int i = 0; i < DEC_W_LAYER; i++)
      lw[i] = (int32_t)(ex_rand(&seed) % 9) - 4;
    for (int i = 0; i < DEC_D; i++) {
      lw[DEC_W_G1 + i] = 12 + (int32_t)(ex_rand(&seed) % 9);
      lw[DEC_W_G2 + i] = 12 + (int32_t)(ex_rand(&seed) % 9);
    }
  }
  for (int i = 0; i < DEC_V * DEC_D; i++)
    W[DEC_W_EMB + i] = (int32_t)(ex_rand(&seed) % 513) - 256;
  for (int i = 0; i < DEC_D; i++)
    W[DEC_W_GF + i] = 12 + (int32_t)(ex_rand(&seed) % 9);
  for (int i = 0; i < DEC_D * DEC_V; i++)
    W[DEC_W_LM + i] = (int32_t)(ex_rand(&seed) % 9) - 4;
}

/* The sequences of batch `it` (host code), drawn from its own seed: how many
 * there are (DEC_B - 3 to DEC_B, the return value), and per sequence its
 * first token tok[], its sampling seed seed[] and its length limit maxlen[]. */
static inline int dec_batch(int it, int32_t* tok, int32_t* seed, int32_t* maxlen) {
  uint64_t s = 77 + (uint64_t)it;
  int n = DEC_B - (int)(ex_rand(&s) % 4);
  for (int b = 0; b < n; b++) {
    tok[b] = DEC_EOS + (int32_t)(ex_rand(&s) % (DEC_V - DEC_EOS));
    seed[b] = (int32_t)ex_rand(&s);
    maxlen[b] = DEC_MINLEN + (int32_t)(ex_rand(&s) % (DEC_T - DEC_MINLEN + 1));
  }
  return n;
}

/* KV cache: [slot][layer][position][D] int32, one array for K then one for V. */
#define DEC_KV_SLOT (DEC_L * DEC_T * DEC_D)
#define DEC_KV_LAYER (DEC_T * DEC_D)
#define DEC_KV_HALF (DEC_B * DEC_KV_SLOT)

/* The active rows of a step, passed by value: row r of every activation is
 * the sequence in KV-cache slot slot[r]. Changes only when the batch shrinks. */
typedef struct dec_rows_s {
  int32_t n;
  int32_t slot[DEC_B];
} dec_rows_t;

EX_HD int32_t dec_clamp(int64_t v) {
  return (int32_t)(v > DEC_CLAMP ? DEC_CLAMP : v < -DEC_CLAMP ? -DEC_CLAMP : v);
}

/* floor(sqrt(v)), bit by bit (no float). */
EX_HD uint32_t dec_isqrt(uint64_t v) {
  uint64_t r = 0, bit = 1ULL << 62;
  while (bit > v)
    bit >>= 2;
  while (bit != 0) {
    if (v >= r + bit) {
      v -= r + bit;
      r = (r >> 1) + bit;
    } else {
      r >>= 1;
    }
    bit >>= 2;
  }
  return (uint32_t)r;
}

/* The RMS of one row of width DEC_D (what each element of an RMSNorm divides by). */
EX_HD int32_t dec_rms(const int32_t* x) {
  uint64_t ss = 0;
  for (int i = 0; i < DEC_D; i++)
    ss += (uint64_t)((int64_t)x[i] * x[i]);
  return (int32_t)dec_isqrt(ss / DEC_D);
}

/* One element of RMSNorm: x / rms, scaled to Q8, times a gain in Q4. */
EX_HD int32_t dec_norm(int32_t x, int32_t g, int32_t rms) {
  return dec_clamp((int64_t)x * g * (DEC_ONE / 16) / (rms + 1));
}

/* Element j of one row of a @ W, W row-major k x m. */
EX_HD int32_t dec_gemm(const int32_t* a, const int32_t* W, int k, int m, int j) {
  int64_t acc = 0;
  for (int p = 0; p < k; p++)
    acc += (int64_t)a[p] * W[p * m + j];
  return dec_clamp(acc / DEC_WDIV);
}

/* cos(k * 22.5 degrees) in Q8. */
EX_HD int32_t dec_cos16(int k) {
  int q = (k & 15) >> 2, r = k & 3;
  int32_t c = r == 0 ? 256 : r == 1 ? 237 : r == 2 ? 181 : 98;
  int32_t s = r == 0 ? 0 : r == 1 ? 98 : r == 2 ? 181 : 237;
  return q == 0 ? c : q == 1 ? -s : q == 2 ? -c : s;
}

/* Rotary position embedding of one pair (x[0], x[1]): pair i of a head, at
 * position t, turns by t * (i + 1) sixteenths of a circle. */
EX_HD void dec_rope(int32_t* x, int i, int t) {
  int a = (t * (i + 1)) & 15;
  int64_t c = dec_cos16(a), s = dec_cos16(a + 12);
  int64_t x0 = x[0], x1 = x[1];
  x[0] = dec_clamp((x0 * c - x1 * s) / DEC_ONE);
  x[1] = dec_clamp((x0 * s + x1 * c) / DEC_ONE);
}

/* Attention score of a query head against a cached key head (DEC_HD wide). */
EX_HD int32_t dec_score(const int32_t* q, const int32_t* k) {
  int64_t acc = 0;
  for (int i = 0; i < DEC_HD; i++)
    acc += (int64_t)q[i] * k[i];
  return dec_clamp(acc / DEC_SDIV);
}

/* Softmax in integers over positions 0..t of one head, in place: each score
 * becomes a weight 2^16 >> ((max - score) / DEC_SM_STEP) (0 when 16 or more). */
EX_HD void dec_softmax(int32_t* s, int t) {
  int32_t mx = s[0];
  for (int p = 1; p <= t; p++)
    mx = s[p] > mx ? s[p] : mx;
  for (int p = 0; p <= t; p++) {
    int32_t d = (mx - s[p]) / DEC_SM_STEP;
    s[p] = d >= 16 ? 0 : 65536 >> d;
  }
}

/* One output element of attention: the weighted mean over positions 0..t of
 * column v[p * DEC_D] of the cached values, weights w[0..t] (their sum > 0). */
EX_HD int32_t dec_pv(const int32_t* w, const int32_t* v, int t) {
  int64_t acc = 0, ws = 0;
  for (int p = 0; p <= t; p++) {
    acc += (int64_t)w[p] * v[p * DEC_D];
    ws += w[p];
  }
  return dec_clamp(acc / ws);
}

EX_HD int32_t dec_add(int32_t a, int32_t b) {
  return dec_clamp((int64_t)a + b);
}

/* Gated activation: relu(gate) * up, back in Q8. */
EX_HD int32_t dec_act(int32_t gate, int32_t up) {
  return dec_clamp((int64_t)(gate > 0 ? gate : 0) * up / DEC_ONE);
}

/* Sampling noise for token v of a sequence with this seed at position t: 0..511. */
EX_HD int32_t dec_noise(uint32_t seed, int t, int v) {
  uint32_t x = seed ^ ((uint32_t)t * 0x9e3779b9u) ^ ((uint32_t)v * 0x85ebca6bu);
  x ^= x >> 15;
  x *= 0x2c1b3c6du;
  x ^= x >> 12;
  x *= 0x297a2d39u;
  x ^= x >> 15;
  return (int32_t)(x >> 23);
}

/* Deterministic sampling: the token with the highest logit plus noise, ties
 * to the lower token. */
EX_HD int32_t dec_sample(const int32_t* logits, uint32_t seed, int t) {
  int best = 0;
  int32_t bv = logits[0] + dec_noise(seed, t, 0);
  for (int v = 1; v < DEC_V; v++) {
    int32_t x = logits[v] + dec_noise(seed, t, v);
    if (x > bv) {
      best = v;
      bv = x;
    }
  }
  return best;
}

#endif

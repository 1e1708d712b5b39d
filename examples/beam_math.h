/* beam_math.h: beam's scoring and state arithmetic, shared by the CUDA kernels
 * and the CPU bodies (unsigned 32-bit and int arithmetic only: bit-identical
 * on a GPU and on the sim), and each search's start, shared by the program
 * and the test's plain-C reference. */
#ifndef BEAM_MATH_H
#define BEAM_MATH_H
#include <stdint.h>

#include "common.h"

#ifdef __CUDACC__
#define EX_HD __host__ __device__ static inline
#else
#define EX_HD static inline
#endif

#define BEAM_K 4        /* beams */
#define BEAM_V 64       /* vocabulary */
#define BEAM_STEPS 32   /* longest decode */
#define BEAM_EOS 4      /* tokens below this end the sequence */
#define BEAM_PENALTY 2048

/* The start of search `it` (host code), drawn from its own seed: each beam's
 * state h[BEAM_K], and cum[BEAM_K] with only beam 0 alive. */
static inline void beam_start(int it, uint32_t* h, int32_t* cum) {
  uint64_t seed = 7 + (uint64_t)it;
  for (int k = 0; k < BEAM_K; k++) {
    h[k] = ex_rand(&seed);
    cum[k] = k == 0 ? 0 : -100000;   /* start from one beam */
  }
}

EX_HD int32_t beam_score(uint32_t h, int32_t cum, int v) {
  uint32_t x = h ^ ((uint32_t)v * 0x9e3779b9u);
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  return cum + (int32_t)(x >> 20);
}

EX_HD uint32_t beam_next(uint32_t h, int token) {
  return (h * 16777619u) ^ (uint32_t)(token + 1);
}

/* Top-K over K*V scores, highest first, ties to the lower index. One thread. */
EX_HD void beam_topk(const int32_t* scores, int32_t* cum, int32_t* parent, int32_t* token,
                     int32_t* info) {
  int chosen[BEAM_K];
  for (int k = 0; k < BEAM_K; k++) {
    int best = -1;
    for (int i = 0; i < BEAM_K * BEAM_V; i++) {
      int taken = 0;
      for (int q = 0; q < k; q++)
        taken |= chosen[q] == i;
      if (!taken && (best < 0 || scores[i] > scores[best]))
        best = i;
    }
    chosen[k] = best;
    parent[k] = best / BEAM_V;
    token[k] = best % BEAM_V;
    cum[k] = scores[best];
  }
  info[0] = token[0];
  info[1] = cum[0];
}

#endif

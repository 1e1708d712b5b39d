/* dynrnn_math.h: the cell arithmetic of dynrnn, shared by the CUDA kernels
 * and their CPU bodies so both compute bit-identical results (integers only:
 * no float rounding can differ between a GPU and the sim), and the inputs of
 * each batch, shared by the program and the test's plain-C reference. */
#ifndef DYNRNN_MATH_H
#define DYNRNN_MATH_H
#include <stdint.h>

#include "common.h"

#ifdef __CUDACC__
#define EX_HD __host__ __device__ static inline
#else
#define EX_HD static inline
#endif

#define RNN_B 64    /* sequences per batch */
#define RNN_H 32    /* hidden units */
#define RNN_T 48    /* longest sequence */
#define RNN_CLAMP 1024
#define RNN_RENORM_AT 512

/* The inputs of batch `it` (host code), drawn from its own seed: each
 * sequence's length len[RNN_B] (4 to RNN_T - 1 steps), the inputs
 * x[RNN_B * RNN_T] and the weights W[RNN_H * RNN_H]. */
static inline void rnn_inputs(int it, int32_t* len, int32_t* x, int32_t* W) {
  uint64_t seed = 1000 + (uint64_t)it;
  for (int b = 0; b < RNN_B; b++)
    len[b] = 4 + (int32_t)(ex_rand(&seed) % (RNN_T - 4));
  for (int i = 0; i < RNN_B * RNN_T; i++)
    x[i] = (int32_t)(ex_rand(&seed) % 17) - 8;
  for (int i = 0; i < RNN_H * RNN_H; i++)
    W[i] = (int32_t)(ex_rand(&seed) % 7) - 3;
}

/* One hidden unit j of one sequence: clamp((x*(j+1) + W[j,:] . h) / 8). */
EX_HD int32_t rnn_cell(const int32_t* W, const int32_t* h, int32_t x, int j) {
  int64_t acc = (int64_t)x * (j + 1);
  for (int k = 0; k < RNN_H; k++)
    acc += (int64_t)W[j * RNN_H + k] * h[k];
  acc /= 8;
  if (acc > RNN_CLAMP)
    acc = RNN_CLAMP;
  if (acc < -RNN_CLAMP)
    acc = -RNN_CLAMP;
  return (int32_t)acc;
}

/* The host's view after step t: flags[0] sequences still running, flags[1]
 * the largest |h| (renorm is due above RNN_RENORM_AT). One thread. */
EX_HD void rnn_stats(const int32_t* len, const int32_t* h, int t, int32_t* flags) {
  int n = 0, mx = 0;
  for (int b = 0; b < RNN_B; b++)
    n += t < len[b];
  for (int i = 0; i < RNN_B * RNN_H; i++) {
    int a = h[i] < 0 ? -h[i] : h[i];
    mx = a > mx ? a : mx;
  }
  flags[0] = n;
  flags[1] = mx;
}

#endif

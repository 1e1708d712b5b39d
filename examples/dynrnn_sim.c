/* dynrnn_sim.c: CPU bodies of dynrnn's kernels for the simulated device
 * (see sim/simcu.h). Each body runs one block; loops replace threadIdx. */
#include "dynrnn_math.h"
#include "simcu.h"

/* step_dense(const int*, int*, const int*, const int*, const int*, int) */
SIMCU_PARAMS(_Z10step_densePKiPiS0_S0_S0_i, 8, 8, 8, 8, 8, 4);
SIMCU_KERNEL(_Z10step_densePKiPiS0_S0_S0_i) {
  const int32_t* hin = SIMCU_ARG(0, const int32_t*);
  int32_t* hout = SIMCU_ARG(1, int32_t*);
  const int32_t* x = SIMCU_ARG(2, const int32_t*);
  const int32_t* W = SIMCU_ARG(3, const int32_t*);
  const int32_t* len = SIMCU_ARG(4, const int32_t*);
  int t = SIMCU_ARG(5, int);
  unsigned b = simcu_blk->idx.x;
  SIMCU_FOR_THREADS(j) {
    if (t < len[b])
      hout[b * RNN_H + j] = rnn_cell(W, hin + b * RNN_H, x[b * RNN_T + t], (int)j);
    else
      hout[b * RNN_H + j] = hin[b * RNN_H + j];
  }
}

SIMCU_PARAMS(_Z7compactPKiiPi, 8, 4, 8);
SIMCU_KERNEL(_Z7compactPKiiPi) {
  const int32_t* len = SIMCU_ARG(0, const int32_t*);
  int t = SIMCU_ARG(1, int);
  int32_t* idx = SIMCU_ARG(2, int32_t*);
  int n = 0;
  for (int b = 0; b < RNN_B; b++)
    if (t < len[b])
      idx[n++] = b;
}

SIMCU_PARAMS(_Z11step_sparsePKiPiS0_S0_S0_i, 8, 8, 8, 8, 8, 4);
SIMCU_KERNEL(_Z11step_sparsePKiPiS0_S0_S0_i) {
  const int32_t* hin = SIMCU_ARG(0, const int32_t*);
  int32_t* hout = SIMCU_ARG(1, int32_t*);
  const int32_t* x = SIMCU_ARG(2, const int32_t*);
  const int32_t* W = SIMCU_ARG(3, const int32_t*);
  const int32_t* idx = SIMCU_ARG(4, const int32_t*);
  int t = SIMCU_ARG(5, int);
  int b = idx[simcu_blk->idx.x];
  SIMCU_FOR_THREADS(j) {
    hout[b * RNN_H + j] = rnn_cell(W, hin + b * RNN_H, x[b * RNN_T + t], (int)j);
  }
}

SIMCU_PARAMS(_Z5statsPKiS0_iPi, 8, 8, 4, 8);
SIMCU_KERNEL(_Z5statsPKiS0_iPi) {
  const int32_t* len = SIMCU_ARG(0, const int32_t*);
  const int32_t* h = SIMCU_ARG(1, const int32_t*);
  int t = SIMCU_ARG(2, int);
  int32_t* flags = SIMCU_ARG(3, int32_t*);
  rnn_stats(len, h, t, flags);
}

SIMCU_PARAMS(_Z6renormPii, 8, 4);
SIMCU_KERNEL(_Z6renormPii) {
  int32_t* h = SIMCU_ARG(0, int32_t*);
  int n = SIMCU_ARG(1, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      h[i] /= 2;
  }
}

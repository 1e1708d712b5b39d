/* mlp_train_sim.c: CPU bodies of mlp_train's own kernels (the GEMMs' bodies
 * live in libsimblas). Same arithmetic and order as the CUDA kernels. */
#include <math.h>

#include "mlp_math.h"
#include "simcu.h"

SIMCU_PARAMS(_Z8relu_fwdPKfPfi, 8, 8, 4);
SIMCU_KERNEL(_Z8relu_fwdPKfPfi) {
  const float* z = SIMCU_ARG(0, const float*);
  float* a = SIMCU_ARG(1, float*);
  int n = SIMCU_ARG(2, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      a[i] = z[i] > 0.0f ? z[i] : 0.0f;
  }
}

SIMCU_PARAMS(_Z9loss_gradPKfS0_PfS1_iff, 8, 8, 8, 8, 4, 4, 4);
SIMCU_KERNEL(_Z9loss_gradPKfS0_PfS1_iff) {
  const float* y = SIMCU_ARG(0, const float*);
  const float* t = SIMCU_ARG(1, const float*);
  float* g = SIMCU_ARG(2, float*);
  float* loss = SIMCU_ARG(3, float*);
  int n = SIMCU_ARG(4, int);
  float gscale = SIMCU_ARG(5, float), lscale = SIMCU_ARG(6, float);
  if (simcu_blk->idx.x == 0)
    mlp_loss_grad(y, t, g, loss, n, gscale, lscale);
}

SIMCU_PARAMS(_Z8relu_bwdPKfPfi, 8, 8, 4);
SIMCU_KERNEL(_Z8relu_bwdPKfPfi) {
  const float* z = SIMCU_ARG(0, const float*);
  float* da = SIMCU_ARG(1, float*);
  int n = SIMCU_ARG(2, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n && !(z[i] > 0.0f))
      da[i] = 0.0f;
  }
}

SIMCU_PARAMS(_Z4clipPfif, 8, 4, 4);
SIMCU_KERNEL(_Z4clipPfif) {
  float* g = SIMCU_ARG(0, float*);
  int n = SIMCU_ARG(1, int);
  float lim = SIMCU_ARG(2, float);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      g[i] = fminf(fmaxf(g[i], -lim), lim);
  }
}

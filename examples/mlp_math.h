/* mlp_math.h: the loss of mlp_train, shared by its CUDA kernel and its CPU
 * body: one thread sums in a fixed order with fmaf, so the loss is the same
 * bits on a GPU and on the sim. */
#ifndef MLP_MATH_H
#define MLP_MATH_H
#include <math.h>

#ifdef __CUDACC__
#define EX_HD __host__ __device__ static inline
#else
#define EX_HD static inline
#endif

/* Mean squared error of y against t: g = (y - t) * gscale, loss[0] = the sum
 * of (y - t)^2 times lscale. */
EX_HD void mlp_loss_grad(const float* y, const float* t, float* g, float* loss, int n,
                         float gscale, float lscale) {
  float acc = 0.0f;
  for (int i = 0; i < n; i++) {
    float d = y[i] - t[i];
    g[i] = d * gscale;
    acc = fmaf(d, d, acc);
  }
  loss[0] = acc * lscale;
}

#endif

// mlp_train: a small MLP (16 -> 32 -> 4, ReLU, mean squared error) trained by
// SGD. Its GEMMs and updates go through libsimblas, which reaches the driver
// through raw dlsym like cuBLASLt; its own kernels go through the runtime.
//
// Each step reads the loss back (a cudaMemcpy on the legacy stream, which also
// waits for the blocking work stream) and decides on the host:
//   loss rose        -> halve the learning rate (a parameter change only)
//   loss > CLIP_AT   -> clip both gradients before the update (two more kernels)
// so the kernel sequence between readbacks takes one of two paths.
//
// Prints one line "checksum <hex>" (FNV-1a of every loss and the final weights).
// Usage: mlp_train [--iters N]   (default 30 steps)
#include <cuda_runtime.h>
#include "common.h"
#include "mlp_math.h"
#include "simblas.h"

#define N 64     // samples
#define D 16     // inputs
#define HD 32    // hidden units
#define O 4      // outputs
#define CLIP_AT 0.25f

__global__ void relu_fwd(const float* z, float* a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    a[i] = z[i] > 0.0f ? z[i] : 0.0f;
}

// One thread, fixed summation order: the loss is the same bits everywhere.
__global__ void loss_grad(const float* y, const float* t, float* g, float* loss, int n,
                          float gscale, float lscale) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    mlp_loss_grad(y, t, g, loss, n, gscale, lscale);
}

__global__ void relu_bwd(const float* z, float* da, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && !(z[i] > 0.0f))
    da[i] = 0.0f;
}

__global__ void clip(float* g, int n, float lim) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    g[i] = fminf(fmaxf(g[i], -lim), lim);
}

static float* dev(size_t n) {
  float* p;
  CHECK(cudaMalloc((void**)&p, n * sizeof(float)));
  return p;
}

#define BLAS(call)                                                                 \
  do {                                                                             \
    int r_ = (call);                                                               \
    if (r_ != 0) {                                                                 \
      fprintf(stderr, "%s failed: %d\n", #call, r_);                               \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 30);
  static float X[N * D], T[N * O], W1[D * HD], W2[HD * O];
  uint64_t seed = 42;
  for (int i = 0; i < N * D; i++)
    X[i] = (float)((int)(ex_rand(&seed) % 257) - 128) / 128.0f;
  for (int i = 0; i < N * O; i++)
    T[i] = (float)((int)(ex_rand(&seed) % 257) - 128) / 128.0f;
  for (int i = 0; i < D * HD; i++)
    W1[i] = (float)((int)(ex_rand(&seed) % 65) - 32) / 64.0f;
  for (int i = 0; i < HD * O; i++)
    W2[i] = (float)((int)(ex_rand(&seed) % 65) - 32) / 64.0f;

  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  float *dX = dev(N * D), *dT = dev(N * O), *dW1 = dev(D * HD), *dW2 = dev(HD * O);
  float *Z1 = dev(N * HD), *A1 = dev(N * HD), *Y = dev(N * O), *G = dev(N * O);
  float *dA1 = dev(N * HD), *gW1 = dev(D * HD), *gW2 = dev(HD * O), *dloss = dev(1);
  CHECK(cudaMemcpy(dX, X, sizeof(X), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dT, T, sizeof(T), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dW1, W1, sizeof(W1), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dW2, W2, sizeof(W2), cudaMemcpyHostToDevice));
  BLAS(simblas_init());

  uint64_t sum = EX_FNV_INIT;
  float lr = 1.5f, prev = 1e30f, loss = 0.0f;
  int clipped = 0, halved = 0;
  for (int it = 0; it < iters; it++) {
    // Forward: the hidden layer as 4 batches of 16 rows (strided-batched GEMM).
    BLAS(simblas_sgemm_strided_batched(s, 0, 0, N / 4, HD, D, 1.0f, dX, D, (N / 4) * D, dW1, HD,
                                       0, 0.0f, Z1, HD, (N / 4) * HD, 4));
    relu_fwd<<<(N * HD + 255) / 256, 256, 0, s>>>(Z1, A1, N * HD);
    BLAS(simblas_sgemm(s, 0, 0, N, O, HD, 1.0f, A1, HD, dW2, O, 0.0f, Y, O));
    loss_grad<<<1, 1, 0, s>>>(Y, dT, G, dloss, N * O, 2.0f / (N * O), 1.0f / (N * O));
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(&loss, dloss, sizeof(float), cudaMemcpyDeviceToHost));
    sum = ex_fnv(sum, &loss, sizeof(loss));
    if (loss > prev) {
      lr *= 0.5f;
      halved++;
    }
    prev = loss;
    // Backward and update.
    BLAS(simblas_sgemm(s, 1, 0, HD, O, N, 1.0f, A1, HD, G, O, 0.0f, gW2, O));
    BLAS(simblas_sgemm(s, 0, 1, N, HD, O, 1.0f, G, O, dW2, O, 0.0f, dA1, HD));
    relu_bwd<<<(N * HD + 255) / 256, 256, 0, s>>>(Z1, dA1, N * HD);
    BLAS(simblas_sgemm(s, 1, 0, D, HD, N, 1.0f, dX, D, dA1, HD, 0.0f, gW1, HD));
    if (loss > CLIP_AT) {
      clip<<<(D * HD + 255) / 256, 256, 0, s>>>(gW1, D * HD, 0.05f);
      clip<<<(HD * O + 255) / 256, 256, 0, s>>>(gW2, HD * O, 0.05f);
      clipped++;
    }
    BLAS(simblas_saxpy(s, D * HD, -lr, gW1, dW1));
    BLAS(simblas_saxpy(s, HD * O, -lr, gW2, dW2));
  }
  CHECK(cudaMemcpy(W1, dW1, sizeof(W1), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(W2, dW2, sizeof(W2), cudaMemcpyDeviceToHost));
  sum = ex_fnv(sum, W1, sizeof(W1));
  sum = ex_fnv(sum, W2, sizeof(W2));
  fprintf(stderr, "mlp_train: %d steps, final loss %.6f, %d clipped, lr halved %d times\n", iters,
          loss, clipped, halved);
  float* bufs[] = {dX, dT, dW1, dW2, Z1, A1, Y, G, dA1, gW1, gW2, dloss};
  for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
    CHECK(cudaFree(bufs[i]));
  CHECK(cudaStreamDestroy(s));
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

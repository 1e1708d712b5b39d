/* chunk_phase: the shape of a training loop that never synchronises, without
 * a framework (docs/frameworks.md, "A step that never synchronises").
 *
 *   chunk_phase K STEPS SYNC
 *
 * launches, STEPS times, one "step" of K distinct kernels (k0 .. k{K-1}, empty
 * PTX kernels: run them with SIMCU_KERNELS=timed) on one stream, with a
 * cuStreamSynchronize after every step when SYNC is 1 and only at the end
 * when it is 0. Without syncs only GRAPE_CHUNK (1024 ops) cuts the region, so
 * chunk c starts at op (c * 1024) mod K of a step: when K does not divide
 * 1024 the chunks follow K / gcd(K, 1024) different paths, each seen once
 * every that many chunks, and none recurs in a short run (PyTorch's Adam step
 * of train_mlp.py is 31 ops: 31 paths, one per 31 chunks). */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define MAXK 256

#define CK(c)                                                       \
  do {                                                              \
    CUresult r_ = (c);                                              \
    if (r_ != CUDA_SUCCESS) {                                       \
      fprintf(stderr, "chunk_phase: %s failed: %d\n", #c, (int)r_); \
      return 2;                                                     \
    }                                                               \
  } while (0)

int main(int argc, char** argv) {
  int k = argc > 1 ? atoi(argv[1]) : 31, steps = argc > 2 ? atoi(argv[2]) : 200;
  int sync = argc > 3 ? atoi(argv[3]) : 0;
  if (k < 1 || k > MAXK || steps < 1) {
    fprintf(stderr, "usage: chunk_phase K(1-%d) STEPS SYNC(0|1)\n", MAXK);
    return 2;
  }
  static char ptx[MAXK * 64 + 128];
  int n = snprintf(ptx, sizeof(ptx), ".version 8.0\n.target sm_90\n.address_size 64\n");
  for (int i = 0; i < k; i++)
    n += snprintf(ptx + n, sizeof(ptx) - (size_t)n, ".visible .entry k%d()\n{\n ret;\n}\n", i);
  CUcontext ctx;
  CUmodule m;
  CUstream s;
  CUfunction f[MAXK];
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  for (int i = 0; i < k; i++) {
    char name[16];
    snprintf(name, sizeof(name), "k%d", i);
    CK(cuModuleGetFunction(&f[i], m, name));
  }
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  for (int t = 0; t < steps; t++) {
    for (int i = 0; i < k; i++)
      CK(cuLaunchKernel(f[i], 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL));
    if (sync)
      CK(cuStreamSynchronize(s));
  }
  CK(cuStreamSynchronize(s));
  printf("chunk_phase: %d steps of %d kernels, %s\n", steps, k, sync ? "a sync per step" : "no sync");
  return 0;
}

// Shim overhead per launch on the simulated device: N launches of a kernel with
// P parameters through one route, timed, with the launch loop alone counted by
// callgrind (CALLGRIND_START/STOP_INSTRUMENTATION; run with --instr-atstart=no).
// `alternate` is the runtime route with two kernels launched in turn, as a
// model's steps launch a different kernel each time.
// usage: bench_launch runtime|driver|alternate N
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>

#include "simcu.h"

// 8 parameters: the size class the performance target names.
__global__ void k8(float* a, int n, float b, float* c, int d, long long e, double f, float* g) {
  if (threadIdx.x == 0 && n < 0)
    a[0] = b + c[0] + d + e + f + g[0];
}
__global__ void k8b(float* a, int n, float b, float* c, int d, long long e, double f, float* g) {
  if (threadIdx.x == 1 && n < 0)
    a[0] = b + c[0] + d + e + f + g[0];
}

extern "C" {
SIMCU_KERNEL(_Z2k8PfifS_ixdS_) {
  (void)simcu_blk;
  (void)simcu_args;
}
SIMCU_KERNEL(_Z3k8bPfifS_ixdS_) {
  (void)simcu_blk;
  (void)simcu_args;
}
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);

static double now_ns() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char** argv) {
  if (argc < 3)
    return 2;
  int driver = strcmp(argv[1], "driver") == 0, alternate = strcmp(argv[1], "alternate") == 0;
  long n = atol(argv[2]);
  float* a;
  if (cudaMalloc((void**)&a, 4096) != cudaSuccess)
    return 1;
  int ni = 1, d = 2;
  float b = 3;
  long long e = 4;
  double f = 5;
  void* args[8] = {&a, &ni, &b, &a, &d, &e, &f, &a};
  cudaKernel_t k;
  launch_fn launch = NULL;
  if (__cudaGetKernel(&k, (const void*)k8) != cudaSuccess)
    return 1;
  if (driver && cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void**)&launch, 12000,
                                                 cudaEnableDefault, NULL) != cudaSuccess)
    return 1;
  // Warm up past two GRAPE_CHUNK-sized regions (1024 ops by default): the first
  // launches resolve function info and grow the region buffers.
  for (int i = 0; i < 2100; i++) {
    if (alternate && (i & 1))
      k8b<<<1, 32>>>(a, ni, b, a, d, e, f, a);
    else
      k8<<<1, 32>>>(a, ni, b, a, d, e, f, a);
  }
  if (cudaDeviceSynchronize() != cudaSuccess)
    return 1;
  double t0 = now_ns();
  CALLGRIND_START_INSTRUMENTATION;
  if (driver) {
    for (long i = 0; i < n; i++)
      launch((CUfunction)k, 1, 1, 1, 32, 1, 1, 0, 0, args, NULL);
  } else if (alternate) {
    for (long i = 0; i < n; i++)
      cudaLaunchKernel((i & 1) ? (const void*)k8b : (const void*)k8, dim3(1), dim3(32), args, 0, 0);
  } else {
    for (long i = 0; i < n; i++)
      cudaLaunchKernel((const void*)k8, dim3(1), dim3(32), args, 0, 0);
  }
  CALLGRIND_STOP_INSTRUMENTATION;
  double t1 = now_ns();
  if (cudaDeviceSynchronize() != cudaSuccess)
    return 1;
  printf("ns_per_launch %.1f\n", (t1 - t0) / n);
  cudaFree(a);
  return 0;
}

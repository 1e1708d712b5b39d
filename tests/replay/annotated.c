/* A program for the NVTX and capture-range tests (test_annotated.py):
 * driver-API kernels with CPU bodies on the simulated device (no nvcc
 * needed), annotated with NVTX v3 (header-only: it links no NVTX library;
 * NVTX reaches grape through NVTX_INJECTION64_PATH) or bracketed by the
 * profiler API.
 *
 *   annotated nvtx       3 steps of  push "step" { push "attn" { 2 x an_add }
 *                        push "mlp" { an_twice } an_twice }, a mark "tick" in
 *                        each, a start/end range "io" around a memset, and one
 *                        an_add outside every range
 *   annotated profiler   2 x an_add, cudaProfilerStart, 3 x an_twice,
 *                        cudaProfilerStop, 4 x an_add, cuProfilerStart,
 *                        1 x an_add, cuProfilerStop, 2 x an_twice
 * Prints "ok" when the result is right. */
#include <cuda.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <cudaProfiler.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>

#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry an_add(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry an_twice(.param .u64 a)\n{\n ret;\n}\n";

SIMCU_PARAMS(an_add, 8, 4);
SIMCU_KERNEL(an_add) {
  if (simcu_blk->idx.x == 0)
    *SIMCU_ARG(0, int*) += SIMCU_ARG(1, int);
}
SIMCU_PARAMS(an_twice, 8);
SIMCU_KERNEL(an_twice) {
  if (simcu_blk->idx.x == 0)
    *SIMCU_ARG(0, int*) *= 2;
}

#define CK(c)                                                     \
  do {                                                            \
    CUresult r_ = (c);                                            \
    if (r_ != CUDA_SUCCESS) {                                     \
      fprintf(stderr, "annotated: %s failed: %d\n", #c, (int)r_); \
      return 2;                                                   \
    }                                                             \
  } while (0)

static CUfunction add, twice;
static CUdeviceptr x;
static CUstream s;
static long expect;

static CUresult launch_add(int v) {
  void* args[] = {&x, &v};
  expect += v;
  return cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static CUresult launch_twice(void) {
  void* args[] = {&x};
  expect *= 2;
  return cuLaunchKernel(twice, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static int run_nvtx(void) {
  for (int step = 0; step < 3; step++) {
    nvtxRangePushA("step");
    nvtxMarkA("tick");
    nvtxRangePushA("attn");
    CK(launch_add(1));
    CK(launch_add(2));
    nvtxRangePop();
    nvtxRangePushA("mlp");
    CK(launch_twice());
    nvtxRangePop();
    CK(launch_twice());
    nvtxRangePop();
    CK(cuStreamSynchronize(s));
  }
  nvtxRangeId_t io = nvtxRangeStartA("io");
  CK(cuMemsetD8Async(x + 4, 0, 4, s));
  CK(cuStreamSynchronize(s));
  nvtxRangeEnd(io);
  CK(launch_add(5));
  return 0;
}

static int run_profiler(void) {
  for (int i = 0; i < 2; i++)
    CK(launch_add(1));
  CK(cuStreamSynchronize(s));
  if (cudaProfilerStart() != cudaSuccess)
    return 2;
  for (int i = 0; i < 3; i++)
    CK(launch_twice());
  CK(cuStreamSynchronize(s));
  if (cudaProfilerStop() != cudaSuccess)
    return 2;
  for (int i = 0; i < 4; i++)
    CK(launch_add(1));
  CK(cuStreamSynchronize(s));
  CK(cuProfilerStart());
  CK(launch_add(3));
  CK(cuStreamSynchronize(s));
  CK(cuProfilerStop());
  for (int i = 0; i < 2; i++)
    CK(launch_twice());
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "nvtx";
  CUcontext ctx;
  CUmodule m;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&add, m, "an_add"));
  CK(cuModuleGetFunction(&twice, m, "an_twice"));
  CK(cuMemAlloc(&x, 8));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuMemsetD8(x, 0, 8));
  int rc = strcmp(mode, "profiler") == 0 ? run_profiler() : run_nvtx();
  if (rc != 0)
    return rc;
  int got = 0;
  CK(cuStreamSynchronize(s));
  CK(cuMemcpyDtoH(&got, x, 4));
  if (got != (int)expect) {
    fprintf(stderr, "annotated: got %d, want %ld\n", got, expect);
    return 1;
  }
  printf("ok\n");
  return 0;
}

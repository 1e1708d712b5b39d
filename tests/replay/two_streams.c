/* A program for the timeline's tests (test_timeline.py): driver-API kernels
 * with CPU bodies on the simulated device (no nvcc needed), launched on two
 * streams with a memset and a device-to-device copy in each round, then two
 * memsets alone (a path without a kernel), the same rounds over and over so
 * that graph mode holds and replays them.
 *
 * At the end, two synchronous copies to the host, one to the device and a 2-D
 * copy back, on the legacy default stream; then a synchronous memset there,
 * a 2-D one on the second stream (a form graph mode does not hold), and a
 * copy back that checks them; a batch of two copies to the device on the
 * second stream (cuMemcpyBatchAsync); last, a graph of the program's own
 * (two kernels) launched on the first stream, and a copy back of its result.
 *
 *   two_streams N          N rounds; prints "ok" when the result is right
 *   two_streams N steady   the same without the per-round waits for the
 *                          streams (the host never idles: a clock window
 *                          then opens in the middle of a region) */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry ts_add(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry ts_twice(.param .u64 a)\n{\n ret;\n}\n";

SIMCU_PARAMS(ts_add, 8, 4);
SIMCU_KERNEL(ts_add) {
  if (simcu_blk->idx.x == 0)
    *SIMCU_ARG(0, int*) += SIMCU_ARG(1, int);
}
SIMCU_PARAMS(ts_twice, 8);
SIMCU_KERNEL(ts_twice) {
  if (simcu_blk->idx.x == 0)
    *SIMCU_ARG(0, int*) *= 2;
}

#define CK(c)                                                       \
  do {                                                              \
    CUresult r_ = (c);                                              \
    if (r_ != CUDA_SUCCESS) {                                       \
      fprintf(stderr, "two_streams: %s failed: %d\n", #c, (int)r_); \
      return 2;                                                     \
    }                                                               \
  } while (0)

int main(int argc, char** argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 8;
  int steady = argc > 2 && strcmp(argv[2], "steady") == 0;
  CUcontext ctx;
  CUmodule m;
  CUfunction add, twice;
  CUstream s[2];
  CUdeviceptr x[2], y;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&add, m, "ts_add"));
  CK(cuModuleGetFunction(&twice, m, "ts_twice"));
  CK(cuMemAlloc(&y, 4));
  for (int k = 0; k < 2; k++) {
    CK(cuStreamCreate(&s[k], CU_STREAM_NON_BLOCKING));
    CK(cuMemAlloc(&x[k], 4));
  }
  int got[2];
  for (int i = 0; i < rounds; i++) {
    for (int k = 0; k < 2; k++) {
      int v = k + 1;
      void* a_add[] = {&x[k], &v};
      void* a_twice[] = {&x[k]};
      CK(cuMemsetD32Async(x[k], 0, 1, s[k]));
      CK(cuLaunchKernel(add, 2, 1, 1, 32, 1, 1, 0, s[k], a_add, NULL));
      CK(cuLaunchKernel(twice, 2, 1, 1, 32, 1, 1, 0, s[k], a_twice, NULL));
      CK(cuMemcpyDtoDAsync(y, x[k], 4, s[k]));
    }
    for (int k = 0; k < 2 && !steady; k++)
      CK(cuStreamSynchronize(s[k]));
    /* A region of memsets only: a path without a kernel. */
    CK(cuMemsetD32Async(y, 0, 1, s[0]));
    CK(cuMemsetD32Async(y, 7, 1, s[0]));
    if (!steady)
      CK(cuStreamSynchronize(s[0]));
  }
  for (int k = 0; k < 2; k++)
    CK(cuStreamSynchronize(s[k]));
  for (int k = 0; k < 2; k++)
    CK(cuMemcpyDtoH(&got[k], x[k], 4));
  if (got[0] != 2 || got[1] != 4) {
    fprintf(stderr, "two_streams: got %d %d, want 2 4\n", got[0], got[1]);
    return 1;
  }
  /* A synchronous copy to the device and a 2-D one back (2 rows of 8
   * bytes), on the legacy default stream. */
  int in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  CUdeviceptr z;
  CK(cuMemAlloc(&z, sizeof(in)));
  CK(cuMemcpyHtoD(z, in, sizeof(in)));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = z;
  c.srcPitch = 8;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = out;
  c.dstPitch = 8;
  c.WidthInBytes = 8;
  c.Height = 2;
  CK(cuMemcpy2D(&c));
  if (memcmp(in, out, sizeof(in)) != 0) {
    fprintf(stderr, "two_streams: the 2-D copy back differs\n");
    return 1;
  }
  /* 4 words of 5, then bytes 0-3 and 8-11 (2 rows of 4 at a pitch of 8) of 1. */
  CK(cuMemsetD32(z, 5, 4));
  CK(cuMemsetD2D8Async(z, 8, 1, 4, 2, s[1]));
  CK(cuStreamSynchronize(s[1]));
  CK(cuMemcpyDtoH(out, z, sizeof(out)));
  if (out[0] != 0x01010101 || out[1] != 5 || out[2] != 0x01010101 || out[3] != 5) {
    fprintf(stderr, "two_streams: the memsets wrote %#x %#x %#x %#x\n", out[0], out[1], out[2],
            out[3]);
    return 1;
  }
  /* z back to {1, 2, 3, 4}: two copies of 8 bytes in one batch. */
  CUdeviceptr dsts[2] = {z, z + 8};
  CUdeviceptr srcs[2] = {(CUdeviceptr)(uintptr_t)&in[0], (CUdeviceptr)(uintptr_t)&in[2]};
  size_t sizes[2] = {8, 8}, attr_at = 0;
  CUmemcpyAttributes attr;
  memset(&attr, 0, sizeof(attr));
  attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  CK(cuMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &attr_at, 1, s[1]));
  CK(cuStreamSynchronize(s[1]));
  CUgraph g;
  CUgraphExec gx;
  CUgraphNode nodes[2];
  int four = 4;
  void* g_add[] = {&z, &four};
  void* g_twice[] = {&z};
  CUDA_KERNEL_NODE_PARAMS kp;
  memset(&kp, 0, sizeof(kp));
  kp.gridDimX = kp.gridDimY = kp.gridDimZ = 1;
  kp.blockDimX = 32;
  kp.blockDimY = kp.blockDimZ = 1;
  CK(cuGraphCreate(&g, 0));
  kp.func = add;
  kp.kernelParams = g_add;
  CK(cuGraphAddKernelNode(&nodes[0], g, NULL, 0, &kp));
  kp.func = twice;
  kp.kernelParams = g_twice;
  CK(cuGraphAddKernelNode(&nodes[1], g, &nodes[0], 1, &kp));
  CK(cuGraphInstantiate(&gx, g, 0));
  CK(cuGraphLaunch(gx, s[0]));
  CK(cuStreamSynchronize(s[0]));
  CK(cuMemcpyDtoH(out, z, 4));
  if (out[0] != (1 + 4) * 2) {
    fprintf(stderr, "two_streams: the program's graph left %#x\n", out[0]);
    return 1;
  }
  CK(cuGraphExecDestroy(gx));
  CK(cuGraphDestroy(g));
  printf("ok\n");
  return 0;
}

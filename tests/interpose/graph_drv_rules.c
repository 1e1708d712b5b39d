/* Graph mode: stream work that is not a launch, on a stream whose launches are
 * held, must run after them (driver API; built without nvcc, kernels have CPU
 * bodies on the sim). One mode per kind of call; each iteration launches
 * k_set(x, i), then the call under test, and checks that the call saw i. A
 * shim that let the call reach the driver before the held launch reports the
 * previous iteration's value. A third launch follows the call, so the path
 * does not end at it: when the call comes, the launches before it are held. On the sim device memory is host memory: the
 * modes where the host must not synchronise read it directly.
 *
 *   graph_drv_rules copy2d | copy3d | copyasync | memset2d | writevalue |
 *                   batchmemop | waitvalue
 * prints "ok MODE" or the iterations that saw stale data (exit 1). */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_set(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry k_copy(.param .u64 d, .param .u64 s)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_set, 8, 4);
SIMCU_KERNEL(k_set) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) = SIMCU_ARG(1, int);
}
SIMCU_PARAMS(k_copy, 8, 8);
SIMCU_KERNEL(k_copy) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) = *SIMCU_ARG(1, int*);
}

#define CK(c)                                         \
  do {                                                \
    CUresult r_ = (c);                                \
    if (r_ != CUDA_SUCCESS) {                         \
      printf("%s failed: %d\n", #c, (int)r_);         \
      return 2;                                       \
    }                                                 \
  } while (0)

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  CUcontext ctx;
  CUmodule m;
  CUfunction set, copy;
  CUstream s;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&set, m, "k_set"));
  CK(cuModuleGetFunction(&copy, m, "k_copy"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr x, y, z, w;
  CK(cuMemAlloc(&x, 64));
  CK(cuMemAlloc(&y, 64));
  CK(cuMemAlloc(&z, 64));
  CK(cuMemAlloc(&w, 64));
  volatile uint32_t* flag;
  CK(cuMemAllocHost((void**)&flag, 8));
  flag[0] = flag[1] = 0;
  CUdeviceptr dflag;
  CK(cuMemHostGetDevicePointer(&dflag, (void*)flag, 0));
  int bad = 0;
  for (int i = 1; i <= 20; i++) {
    /* Two launches per iteration: a path worth a graph, held once known. */
    void* a_set[] = {&x, &i};
    void* a_copy[] = {&z, &x};
    void* a_after[] = {&w, &i};
#define LAUNCH_AFTER() CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_after, NULL))
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    CK(cuLaunchKernel(copy, 1, 1, 1, 1, 1, 1, 0, s, a_copy, NULL));
    int seen = -1;
    if (!strcmp(mode, "copy2d") || !strcmp(mode, "copy3d")) {
      if (!strcmp(mode, "copy2d")) {
        CUDA_MEMCPY2D p = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = x, .srcPitch = 4,
                           .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = y, .dstPitch = 4,
                           .WidthInBytes = 4, .Height = 1};
        CK(cuMemcpy2DAsync(&p, s));
      } else {
        CUDA_MEMCPY3D p = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = x, .srcPitch = 4,
                           .srcHeight = 1, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = y,
                           .dstPitch = 4, .dstHeight = 1, .WidthInBytes = 4, .Height = 1,
                           .Depth = 1};
        CK(cuMemcpy3DAsync(&p, s));
      }
      LAUNCH_AFTER();
      CK(cuStreamSynchronize(s));
      CK(cuMemcpyDtoH(&seen, y, 4));
    } else if (!strcmp(mode, "copyasync")) {
      /* The unified-addressing copy, host pinned memory as the destination. */
      CK(cuMemcpyAsync((CUdeviceptr)(uintptr_t)flag, x, 4, s));
      LAUNCH_AFTER();
      CK(cuStreamSynchronize(s));
      seen = (int)flag[0];
    } else if (!strcmp(mode, "memset2d")) {
      /* A 2-D memset of z (one row) after k_copy wrote z: the memset must win. */
      CK(cuMemsetD2D32Async(z, 4, (unsigned)(1000 + i), 1, 1, s));
      LAUNCH_AFTER();
      CK(cuStreamSynchronize(s));
      CK(cuMemcpyDtoH(&seen, z, 4));
      seen -= 1000;
    } else if (!strcmp(mode, "writevalue") || !strcmp(mode, "batchmemop")) {
      /* The host waits for the flag, then reads what the kernel before it wrote. */
      if (!strcmp(mode, "writevalue")) {
        CK(cuStreamWriteValue32(s, dflag, (uint32_t)i, 0));
      } else {
        CUstreamBatchMemOpParams op;
        memset(&op, 0, sizeof op);
        op.writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        op.writeValue.address = dflag;
        op.writeValue.value = (uint32_t)i;
        CK(cuStreamBatchMemOp(s, 1, &op, 0));
      }
      while (flag[0] != (uint32_t)i) {
      }
      seen = *(volatile int*)(uintptr_t)z;
      LAUNCH_AFTER();
      CK(cuStreamSynchronize(s));
    } else if (!strcmp(mode, "waitvalue")) {
      /* A stream wait on a flag the host sets after reading z: the launches
       * before the wait must already have run when the host reads. */
      CK(cuStreamWaitValue32(s, dflag + 4, (uint32_t)i, CU_STREAM_WAIT_VALUE_EQ));
      for (int spins = 0; spins < 10000 && seen != i; spins++) {   /* 10 s: a loaded machine */
        seen = *(volatile int*)(uintptr_t)z;
        if (seen != i)
          usleep(1000);
      }
      flag[1] = (uint32_t)i;
      LAUNCH_AFTER();
      CK(cuStreamSynchronize(s));
    } else {
      fprintf(stderr, "unknown mode '%s'\n", mode);
      return 2;
    }
    if (seen != i) {
      bad++;
      printf("iteration %d: %s saw %d\n", i, mode, seen);
      if (!strcmp(mode, "waitvalue"))
        break;   /* each such iteration waits out the whole bound */
    }
  }
  if (bad)
    return 1;
  printf("ok %s\n", mode);
  return 0;
}

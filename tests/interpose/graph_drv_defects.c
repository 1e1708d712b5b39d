/* Graph mode on the driver API: programs a correct CUDA program may be, each
 * run hot (its path held and replayed), each once broke graph mode:
 *
 *   unload     a module unloaded and loaded again (the driver may hand out the
 *              same function handle): the replayed path must run the new one
 *   memset     a misaligned cuMemsetD32Async / cuMemsetD16Async on a hot path
 *              returns the driver's error from the call itself (prints results)
 *   attrpad    cuLaunchKernelEx with a launch attribute whose padding and unused
 *              value bytes are garbage that changes every launch: one path
 *   funcattr   cuFuncSetAttribute lowers a function's dynamic shared memory
 *              limit after a launch that needed the higher one was issued
 *   funclower  cuFuncSetAttribute lowers the limit below a launch that its
 *              stream's region held in the same slot before: that launch
 *              fails as it would eagerly (a held slot's limits check once
 *              outlived an attribute change)
 *   memops     regions of memsets and copies only, no kernel (the trace once
 *              wrote their pointer words past its buffer)
 *
 *   graph_drv_defects MODE   prints "ok MODE" (and what calls returned), or
 *                            what went wrong (exit 1). Kernels are CPU bodies
 *                            on the sim. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_set(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry k_add(.param .u64 d, .param .u64 s)\n{\n ret;\n}\n"
    ".visible .entry k_smem(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_set, 8, 4);
SIMCU_KERNEL(k_set) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) = SIMCU_ARG(1, int);
}
SIMCU_PARAMS(k_add, 8, 8);
SIMCU_KERNEL(k_add) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) += *SIMCU_ARG(1, int*);
}
SIMCU_PARAMS(k_smem, 8, 4);
SIMCU_KERNEL(k_smem) {
  int* sh = simcu_blk->shared;
  sh[0] = SIMCU_ARG(1, int);
  *SIMCU_ARG(0, int*) = sh[0];
}

#define CK(c)                                                  \
  do {                                                         \
    CUresult r_ = (c);                                         \
    if (r_ != CUDA_SUCCESS) {                                  \
      printf("%s failed at line %d: %d\n", #c, __LINE__, (int)r_); \
      exit(1);                                                 \
    }                                                          \
  } while (0)

static CUstream s;
static CUdeviceptr x, y;

static int read_int(CUdeviceptr p) {
  int v;
  CK(cuMemcpyDtoH(&v, p, sizeof(v)));
  return v;
}

/* Loads the module: k_set into *set and, unless other is NULL, the kernel
 * named other_name into *other. @return the module. */
static CUmodule load(CUfunction* set, const char* other_name, CUfunction* other) {
  CUmodule m;
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(set, m, "k_set"));
  if (other != NULL)
    CK(cuModuleGetFunction(other, m, other_name));
  return m;
}

static void launch2(CUfunction set, CUfunction add, int v) {
  void* a_set[] = {&x, &v};
  void* a_add[] = {&y, &x};
  CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
  CK(cuLaunchKernel(add, 1, 1, 1, 1, 1, 1, 0, s, a_add, NULL));
}

static int mode_unload(void) {
  int want = 0;
  CK(cuMemsetD32(y, 0, 1));
  for (int round = 0; round < 3; round++) {
    CUfunction set, add;
    CUmodule m = load(&set, "k_add", &add);
    for (int i = 0; i < 10; i++) {
      launch2(set, add, i + 1);
      want += i + 1;
      CK(cuStreamSynchronize(s));
      int got = read_int(y);
      if (got != want) {
        printf("unload: round %d step %d: y = %d, want %d\n", round, i, got, want);
        return 1;
      }
    }
    CK(cuModuleUnload(m));
  }
  return 0;
}

static int mode_memset(void) {
  CUfunction set;
  load(&set, NULL, NULL);
  for (int i = 0; i < 24; i++) {
    int v = i;
    void* a_set[] = {&x, &v};
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    /* Every eighth step the memsets are misaligned (by 2 and by 1 bytes). */
    CUdeviceptr d32 = i % 8 == 7 ? y + 2 : y;
    CUdeviceptr d16 = i % 8 == 7 ? y + 9 : y + 8;
    CUresult r32 = cuMemsetD32Async(d32, 0x01010101u * (unsigned)i, 1, s);
    CUresult r16 = cuMemsetD16Async(d16, (unsigned short)i, 1, s);
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    CUresult sync = cuStreamSynchronize(s);
    printf("step %d: memsetD32 %d memsetD16 %d sync %d\n", i, (int)r32, (int)r16, (int)sync);
    if (i % 8 != 7) {
      unsigned got = (unsigned)read_int(y);
      if (got != 0x01010101u * (unsigned)i) {
        printf("memset: step %d: y = %#x\n", i, got);
        return 1;
      }
    }
  }
  return 0;
}

static int mode_attrpad(void) {
  CUfunction set, add;
  load(&set, "k_add", &add);
  CK(cuMemsetD32(y, 0, 1));
  int want = 0;
  srand(7);
  for (int i = 0; i < 24; i++) {
    CUlaunchAttribute at[2];
    /* Garbage everywhere but in the fields each attribute uses. */
    for (size_t k = 0; k < sizeof(at); k++)
      ((unsigned char*)at)[k] = (unsigned char)rand();
    at[0].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    at[0].value.priority = 0;
    at[1].id = CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN;
    at[1].value.memSyncDomain = CU_LAUNCH_MEM_SYNC_DOMAIN_DEFAULT;
    CUlaunchConfig c = {1, 1, 1, 1, 1, 1, 0, s, at, 2};
    int v = i;
    void* a_set[] = {&x, &v};
    void* a_add[] = {&y, &x};
    CK(cuLaunchKernelEx(&c, set, a_set, NULL));
    CK(cuLaunchKernelEx(&c, add, a_add, NULL));
    want += i;
    CK(cuStreamSynchronize(s));
    if (read_int(y) != want) {
      printf("attrpad: step %d: y = %d, want %d\n", i, read_int(y), want);
      return 1;
    }
  }
  return 0;
}

static int mode_funcattr(void) {
  CUfunction set, smem;
  load(&set, "k_smem", &smem);
  for (int i = 0; i < 24; i++) {
    CK(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 60 * 1024));
    int v = i;
    void* a_set[] = {&x, &v};
    void* a_smem[] = {&y, &v};
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    CK(cuLaunchKernel(smem, 1, 1, 1, 1, 1, 1, 60 * 1024, s, a_smem, NULL));
    if (i % 3 == 2)
      CK(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 50 * 1024));
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    CK(cuStreamSynchronize(s));
    if (read_int(y) != i) {
      printf("funcattr: step %d: the held launch wrote %d\n", i, read_int(y));
      return 1;
    }
  }
  return 0;
}

static int mode_funclower(void) {
  CUfunction set, smem;
  load(&set, "k_smem", &smem);
  CK(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 60 * 1024));
  int v = 0;
  void* a_set[] = {&x, &v};
  void* a_smem[] = {&y, &v};
  for (int i = 0; i < 24; i++) {
    v = i;
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    CK(cuLaunchKernel(smem, 1, 1, 1, 1, 1, 1, 60 * 1024, s, a_smem, NULL));
    CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
    CK(cuStreamSynchronize(s));
  }
  CK(cuFuncSetAttribute(smem, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 50 * 1024));
  v = 99;
  CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
  CUresult r = cuLaunchKernel(smem, 1, 1, 1, 1, 1, 1, 60 * 1024, s, a_smem, NULL);
  CK(cuStreamSynchronize(s));
  if (r == CUDA_SUCCESS || read_int(y) == 99) {
    printf("funclower: a launch past the lowered limit returned %d and wrote %d\n", (int)r,
           read_int(y));
    return 1;
  }
  printf("funclower: the launch past the lowered limit returned %d\n", (int)r);
  return 0;
}

static int mode_memops(void) {
  /* One kernel first (the report counts launches), then no more. */
  CUfunction set;
  load(&set, NULL, NULL);
  int v = 0;
  void* a_set[] = {&x, &v};
  CK(cuLaunchKernel(set, 1, 1, 1, 1, 1, 1, 0, s, a_set, NULL));
  CK(cuStreamSynchronize(s));
  for (int i = 0; i < 24; i++) {
    CK(cuMemsetD32Async(x, 0x01010101u * (unsigned)i, 4, s));
    CK(cuMemcpyDtoDAsync(y, x, 16, s));
    CK(cuMemsetD8Async(y + 16, (unsigned char)i, 16, s));
    CK(cuStreamSynchronize(s));
    unsigned got = (unsigned)read_int(y + 12);
    if (got != 0x01010101u * (unsigned)i) {
      printf("memops: step %d: y = %#x\n", i, got);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  CUcontext ctx;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&x, 64));
  CK(cuMemAlloc(&y, 64));
  int rc;
  if (!strcmp(mode, "unload"))
    rc = mode_unload();
  else if (!strcmp(mode, "memset"))
    rc = mode_memset();
  else if (!strcmp(mode, "attrpad"))
    rc = mode_attrpad();
  else if (!strcmp(mode, "funcattr"))
    rc = mode_funcattr();
  else if (!strcmp(mode, "funclower"))
    rc = mode_funclower();
  else if (!strcmp(mode, "memops"))
    rc = mode_memops();
  else {
    fprintf(stderr, "usage: graph_drv_defects unload|memset|attrpad|funcattr|funclower|memops\n");
    return 2;
  }
  if (rc == 0)
    printf("ok %s\n", mode);
  return rc;
}

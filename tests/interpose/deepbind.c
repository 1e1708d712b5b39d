/* A program that opens cuBLAS the way some frameworks' plugins do, with
 * RTLD_DEEPBIND, so that the library's own dlopen/dlsym and driver calls bind
 * inside it, past a preloaded shim. Each iteration fills A with i and B with
 * 1 on one stream (the program's own launches, held by graph mode once their
 * path is known), multiplies them with the deep-bound cuBLAS on that stream,
 * and reads C back: C must be i * N everywhere. A GEMM that reached the driver
 * before the fills reads the previous iteration's A.
 *
 *   deepbind deep   the cuBLAS opened RTLD_DEEPBIND
 *   deepbind ns     as deep, and then libcuda.so.1 opened in a namespace of
 *                   its own (dlmopen), which the shim cannot follow: holding
 *                   must stop, the results stay right
 * prints "ok MODE launches N" (N: kernel launches the program made, fills
 * and GEMMs) or the iterations that saw stale data (exit 1). Built without
 * nvcc: the kernels have CPU bodies on the sim. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "simcu.h"

enum { N = 8, ITERS = 24 };

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_fill(.param .u64 a, .param .f32 v)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_fill, 8, 4);
SIMCU_KERNEL(k_fill) {
  (void)simcu_blk;
  float* a = SIMCU_ARG(0, float*);
  for (int j = 0; j < N * N; j++)
    a[j] = SIMCU_ARG(1, float);
}

typedef int (*create_fn)(void**);
typedef int (*set_stream_fn)(void*, CUstream);
typedef int (*sgemm_fn)(void*, int, int, int, int, int, const float*, const float*, int,
                        const float*, int, const float*, float*, int);

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
  if (strcmp(mode, "deep") != 0 && strcmp(mode, "ns") != 0) {
    fprintf(stderr, "usage: deepbind deep|ns\n");
    return 2;
  }
  CUcontext ctx;
  CUmodule m;
  CUfunction fill;
  CUstream s;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&fill, m, "k_fill"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  void* blas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
  if (blas == NULL) {
    printf("cannot open libcublas.so.13: %s\n", dlerror());
    return 2;
  }
  create_fn create = (create_fn)dlsym(blas, "cublasCreate_v2");
  set_stream_fn set_stream = (set_stream_fn)dlsym(blas, "cublasSetStream_v2");
  sgemm_fn sgemm = (sgemm_fn)dlsym(blas, "cublasSgemm_v2");
  void* handle = NULL;
  if (create == NULL || set_stream == NULL || sgemm == NULL || create(&handle) != 0 ||
      set_stream(handle, s) != 0) {
    printf("cuBLAS did not start\n");
    return 2;
  }
  CUdeviceptr a, b, c, d;
  CK(cuMemAlloc(&a, sizeof(float) * N * N));
  CK(cuMemAlloc(&d, sizeof(float) * N * N));
  CK(cuMemAlloc(&b, sizeof(float) * N * N));
  CK(cuMemAlloc(&c, sizeof(float) * N * N));
  const float one = 1.0f, zero = 0.0f;
  int bad = 0, launches = 0;
  for (int i = 1; i <= ITERS; i++) {
    if (i == ITERS / 2 && strcmp(mode, "ns") == 0 &&
        dlmopen(LM_ID_NEWLM, "libcuda.so.1", RTLD_NOW | RTLD_LOCAL) == NULL)
      printf("dlmopen of libcuda.so.1: %s (not counted)\n", dlerror());
    float v = (float)i, w = 1.0f;
    void* fa[] = {&a, &v};
    void* fb[] = {&b, &w};
    CK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, fa, NULL));
    CK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, fb, NULL));
    launches += 2;
    if (sgemm(handle, 0, 0, N, N, N, &one, (const float*)b, N, (const float*)a, N, &zero,
              (float*)c, N) != 0) {
      printf("cublasSgemm failed\n");
      return 2;
    }
    /* A launch of the program's own after the GEMM: the path goes on past
     * it, so the fills before it are held when the GEMM comes. */
    void* fd[] = {&d, &v};
    CK(cuLaunchKernel(fill, 1, 1, 1, 1, 1, 1, 0, s, fd, NULL));
    launches += 2;
    float out[N * N];
    CK(cuStreamSynchronize(s));   /* s does not block: a plain copy would not wait for it */
    CK(cuMemcpyDtoH(out, c, sizeof(out)));
    for (int j = 0; j < N * N; j++)
      if (out[j] != (float)(i * N)) {
        printf("iteration %d: C[%d] = %g, want %d\n", i, j, out[j], i * N);
        bad++;
        break;
      }
  }
  if (bad)
    return 1;
  printf("ok %s launches %d\n", mode, launches);
  return 0;
}

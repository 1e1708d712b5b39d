/* simblas.c: libsimblas's host side: driver binding, image load, launches.
 *
 * DESIGN: like cuBLASLt, the library keeps its own table of driver entry
 * points filled by raw dlsym with unsuffixed names from a dlopen'ed
 * libcuda.so.1, never through the runtime or cuGetProcAddress, so an
 * interposer must catch dlsym to see these launches. The image is the fatbin
 * nvcc built from simblas_kernels.cu, embedded as bytes (simblas_image.c).
 * Initialisation happens once, on first use or in simblas_init(); the table
 * and functions are then read-only, so calls are thread-safe.
 *
 * On the sim, each public call charges the simulated host clock with the
 * host work a vendor library does per call (SIMCU_HOST_NS) through the sim
 * driver's private export table (sim/cost.h); a real driver does not know
 * that table's id, and nothing is charged.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include "simblas.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

#include "cost.h"
#include "vendor.h"

extern const unsigned char grape__simblas_image[];

static struct {
  simcu_vendor_drv_t ctx;
  CUresult (*ModuleLoadData)(CUmodule*, const void*);
  CUresult (*ModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                           unsigned, CUstream, void**, void**);
  CUresult (*LaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
} cu;
static const simcu_private_t* sim_priv;   /* the sim driver's private table, or NULL */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int init_err = CUDA_ERROR_NOT_INITIALIZED;
static CUmodule mod;
static CUfunction f_gemm, f_axpy;
static CUcontext lib_ctx;   /* the context current at initialisation */

static void init(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    init_err = CUDA_ERROR_NO_DEVICE;
    return;
  }
  *(void**)&cu.ctx.Init = dlsym(h, "cuInit");
  *(void**)&cu.ctx.CtxGetCurrent = dlsym(h, "cuCtxGetCurrent");
  *(void**)&cu.ctx.CtxSetCurrent = dlsym(h, "cuCtxSetCurrent");
  *(void**)&cu.ctx.DevicePrimaryCtxRetain = dlsym(h, "cuDevicePrimaryCtxRetain");
  *(void**)&cu.ModuleLoadData = dlsym(h, "cuModuleLoadData");
  *(void**)&cu.ModuleGetFunction = dlsym(h, "cuModuleGetFunction");
  *(void**)&cu.LaunchKernel = dlsym(h, "cuLaunchKernel");
  *(void**)&cu.LaunchKernelEx = dlsym(h, "cuLaunchKernelEx");
  if (cu.ctx.Init == NULL || cu.ctx.CtxGetCurrent == NULL || cu.ctx.CtxSetCurrent == NULL ||
      cu.ctx.DevicePrimaryCtxRetain == NULL || cu.ModuleLoadData == NULL ||
      cu.ModuleGetFunction == NULL || cu.LaunchKernel == NULL || cu.LaunchKernelEx == NULL) {
    init_err = CUDA_ERROR_NOT_FOUND;
    return;
  }
  sim_priv = simcu_vendor_private(h);
  CUresult r = simcu_vendor_start(&cu.ctx, &lib_ctx);
  if (r == CUDA_SUCCESS)
    r = cu.ModuleLoadData(&mod, grape__simblas_image);
  if (r == CUDA_SUCCESS)
    r = cu.ModuleGetFunction(&f_gemm, mod, "simblas_sgemm_kernel");
  if (r == CUDA_SUCCESS)
    r = cu.ModuleGetFunction(&f_axpy, mod, "simblas_saxpy_kernel");
  init_err = (int)r;
}

__attribute__((visibility("default"))) int simblas_init(void) {
  pthread_once(&once, init);
  return init_err;
}

static _Thread_local int thread_ready;   /* this thread has a current context */

/* Like a vendor library: work on the caller's context, or the library's own
 * when the calling thread has none. */
static int enter(void) {
  int r = simblas_init();
  if (r == 0 && sim_priv != NULL)
    sim_priv->host_work(SIMCU_WORK_OP);
  if (r != 0 || thread_ready)
    return r;
  r = (int)simcu_vendor_thread(&cu.ctx, lib_ctx);
  thread_ready = r == 0;
  return r;
}

static int gemm(void* stream, int ta, int tb, int m, int n, int k, float alpha, const float* A,
                int lda, long long sa, const float* B, int ldb, long long sb, float beta, float* C,
                int ldc, long long sc, int batch, int ex) {
  int r = enter();
  if (r != 0)
    return r;
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  void* args[] = {&ta, &tb, &m, &n, &k, &alpha, &A, &lda, &sa, &B, &ldb, &sb, &beta, &C, &ldc, &sc};
  unsigned gx = (unsigned)(n + 15) / 16, gy = (unsigned)(m + 15) / 16;
  if (!ex)
    return (int)cu.LaunchKernel(f_gemm, gx, gy, (unsigned)batch, 16, 16, 1, 0, (CUstream)stream,
                                args, NULL);
  CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PRIORITY};
  attr.value.priority = 0;
  CUlaunchConfig cfg = {.gridDimX = gx, .gridDimY = gy, .gridDimZ = (unsigned)batch,
                        .blockDimX = 16, .blockDimY = 16, .blockDimZ = 1,
                        .hStream = (CUstream)stream, .attrs = &attr, .numAttrs = 1};
  return (int)cu.LaunchKernelEx(&cfg, f_gemm, args, NULL);
}

__attribute__((visibility("default"))) int simblas_sgemm(void* stream, int ta, int tb, int m, int n,
                                                          int k, float alpha, const float* A,
                                                          int lda, const float* B, int ldb,
                                                          float beta, float* C, int ldc) {
  return gemm(stream, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1, 0);
}

__attribute__((visibility("default"))) int simblas_sgemm_strided_batched(
    void* stream, int ta, int tb, int m, int n, int k, float alpha, const float* A, int lda,
    long long sa, const float* B, int ldb, long long sb, float beta, float* C, int ldc,
    long long sc, int batch) {
  return gemm(stream, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch, 1);
}

__attribute__((visibility("default"))) int simblas_saxpy(void* stream, int n, float alpha,
                                                          const float* x, float* y) {
  int r = enter();
  if (r != 0)
    return r;
  if (n <= 0)
    return n == 0 ? 0 : CUDA_ERROR_INVALID_VALUE;
  void* args[] = {&n, &alpha, &x, &y};
  return (int)cu.LaunchKernel(f_axpy, (unsigned)(n + 255) / 256, 1, 1, 256, 1, 1, 0,
                              (CUstream)stream, args, NULL);
}

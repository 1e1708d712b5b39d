/* Fake libcudart.so.13: reaches the fake driver the way the real runtime does,
 * through dlopen("libcuda.so.1") + dlsym("cuGetProcAddress_v2") + lookups, and
 * launches through the pointers it got. Host stubs and cudaKernel_t handles
 * are the fake_fn_t pointers themselves. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "fake.h"

#define EXPORT __attribute__((visibility("default")))

typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
typedef CUresult (*info_fn)(CUfunction, size_t, size_t*, size_t*);
typedef CUresult (*void_fn)(void);
typedef CUresult (*alloc_fn)(CUdeviceptr*, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);

static pthread_once_t once = PTHREAD_ONCE_INIT;
static gpa_fn gpa;
static launch_fn launch, launch_ptsz;
static info_fn param_info;
static void_fn ctx_sync;
static alloc_fn mem_alloc;
static free_fn mem_free;

static void init(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    return;
  gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  if (gpa == NULL)
    return;
  gpa("cuLaunchKernel", (void**)&launch, 13000, CU_GET_PROC_ADDRESS_DEFAULT, NULL);
  gpa("cuLaunchKernel", (void**)&launch_ptsz, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL);
  gpa("cuFuncGetParamInfo", (void**)&param_info, 13000, 0, NULL);
  gpa("cuCtxSynchronize", (void**)&ctx_sync, 13000, 0, NULL);
  gpa("cuMemAlloc", (void**)&mem_alloc, 13000, 0, NULL);
  gpa("cuMemFree", (void**)&mem_free, 13000, 0, NULL);
}

/* The thread's last error, as NVIDIA's runtime keeps it: every failing call
 * sets it; cudaGetLastError returns and clears it. */
static __thread cudaError_t last_error;

static cudaError_t set_error(cudaError_t e) {
  if (e != cudaSuccess)
    last_error = e;
  return e;
}

EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error; }

static cudaError_t err(CUresult r) {
  return set_error(r == CUDA_SUCCESS ? cudaSuccess : cudaErrorLaunchFailure);
}

static cudaError_t do_launch(const void* f, dim3 g, dim3 b, void** args, size_t shm,
                             cudaStream_t s, int ptsz) {
  pthread_once(&once, init);
  launch_fn l = ptsz ? launch_ptsz : launch;
  if (l == NULL)
    return cudaErrorInitializationError;
  return err(l((CUfunction)(uintptr_t)f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shm,
               (CUstream)s, args, NULL));
}

EXPORT cudaError_t cudaLaunchKernel(const void* f, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s) {
  return do_launch(f, g, b, a, shm, s, 0);
}
EXPORT cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s) {
  return do_launch(f, g, b, a, shm, s, 1);
}
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s) {
  return do_launch(k, g, b, a, shm, s, 0);
}
EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s) {
  return do_launch(k, g, b, a, shm, s, 1);
}
EXPORT cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* hostFun) {
  *k = (cudaKernel_t)(uintptr_t)hostFun;
  return cudaSuccess;
}

EXPORT cudaError_t cudaFuncGetParamInfo(const void* f, size_t i, size_t* off, size_t* size) {
  pthread_once(&once, init);
  CUresult r = param_info ? param_info((CUfunction)(uintptr_t)f, i, off, size) : CUDA_ERROR_NOT_FOUND;
  return set_error(r == CUDA_SUCCESS               ? cudaSuccess
                   : r == CUDA_ERROR_INVALID_VALUE ? cudaErrorInvalidValue
                                                   : cudaErrorInvalidDeviceFunction);
}

EXPORT cudaError_t cudaFuncGetName(const char** name, const void* f) {
  const fake_fn_t* fn = f;
  if (fn == NULL || fn->magic != FAKE_FN_MAGIC)
    return set_error(cudaErrorInvalidDeviceFunction);
  *name = fn->name;
  return cudaSuccess;
}

/* A host stub is the fake_fn_t itself, which is also its CUfunction. */
EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t* out, const void* f) {
  const fake_fn_t* fn = f;
  if (fn == NULL || fn->magic != FAKE_FN_MAGIC)
    return set_error(cudaErrorInvalidDeviceFunction);
  *out = (cudaFunction_t)(uintptr_t)f;
  return cudaSuccess;
}

EXPORT cudaError_t cudaDeviceSynchronize(void) {
  pthread_once(&once, init);
  return ctx_sync ? err(ctx_sync()) : cudaErrorInitializationError;
}

EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  (void)s;
  return cudaDeviceSynchronize();
}

EXPORT cudaError_t cudaMalloc(void** p, size_t n) {
  pthread_once(&once, init);
  CUdeviceptr d = 0;
  CUresult r = mem_alloc ? mem_alloc(&d, n) : CUDA_ERROR_NOT_FOUND;
  *p = (void*)(uintptr_t)d;
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorMemoryAllocation;
}

EXPORT cudaError_t cudaFree(void* p) {
  pthread_once(&once, init);
  return mem_free && p ? err(mem_free((CUdeviceptr)(uintptr_t)p)) : cudaSuccess;
}

EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char* sym, void** fp, unsigned ver,
                                                    unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult* st) {
  pthread_once(&once, init);
  if (gpa == NULL)
    return cudaErrorInitializationError;
  cuuint64_t f = (flags & cudaEnablePerThreadDefaultStream) ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                            : CU_GET_PROC_ADDRESS_LEGACY_STREAM;
  CUdriverProcAddressQueryResult q;
  CUresult r = gpa(sym, fp, (int)ver, f, &q);
  if (st)
    *st = q == CU_GET_PROC_ADDRESS_SUCCESS ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorSymbolNotFound;
}

EXPORT cudaError_t cudaGetDriverEntryPoint(const char* sym, void** fp, unsigned long long flags,
                                           enum cudaDriverEntryPointQueryResult* st) {
  return cudaGetDriverEntryPointByVersion(sym, fp, 13000, flags, st);
}

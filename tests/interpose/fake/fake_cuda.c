/* Fake libcuda.so.1: runs fake kernels synchronously and counts them. Exports
 * only what the shim's tests use; cuGetProcAddress[_v2] serves them by name
 * (with _ptsz for per-thread requests), as the real driver does. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake.h"

#define EXPORT __attribute__((visibility("default")))

static long executed;
static long ptsz_launches;

EXPORT long fake_kernels_executed(void) { return __atomic_load_n(&executed, __ATOMIC_RELAXED); }
EXPORT long fake_ptsz_launches(void) { return __atomic_load_n(&ptsz_launches, __ATOMIC_RELAXED); }

EXPORT CUresult cuInit(unsigned flags) { (void)flags; return CUDA_SUCCESS; }

static CUresult run(CUfunction f, void** params, void** extra) {
  const fake_fn_t* fn = (const fake_fn_t*)f;
  if (fn == NULL || fn->magic != FAKE_FN_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  uint8_t block[256] = {0};
  if (params != NULL) {
    for (int i = 0; i < fn->nparams; i++)
      memcpy(block + fn->offset[i], params[i], fn->size[i]);
  } else if (extra != NULL) {
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2)
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        memcpy(block, extra[i + 1], fn->param_bytes);
  }
  if (fn->body)
    fn->body(block);
  __atomic_fetch_add(&executed, 1, __ATOMIC_RELAXED);
  return CUDA_SUCCESS;
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shm, CUstream s, void** p,
                               void** extra) {
  (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)shm, (void)s;
  return run(f, p, extra);
}

EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                    unsigned bx, unsigned by, unsigned bz, unsigned shm,
                                    CUstream s, void** p, void** extra) {
  __atomic_fetch_add(&ptsz_launches, 1, __ATOMIC_RELAXED);
  return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shm, s, p, extra);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig* c, CUfunction f, void** p, void** extra) {
  (void)c;
  return run(f, p, extra);
}

EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t i, size_t* off, size_t* size) {
  const fake_fn_t* fn = (const fake_fn_t*)f;
  if (fn == NULL || fn->magic != FAKE_FN_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  if (i >= (size_t)fn->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  *off = fn->offset[i];
  *size = fn->size[i];
  return CUDA_SUCCESS;
}

EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  const fake_fn_t* fn = (const fake_fn_t*)f;
  if (fn == NULL || fn->magic != FAKE_FN_MAGIC)
    return CUDA_ERROR_INVALID_HANDLE;
  *name = fn->name;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
EXPORT CUresult cuStreamSynchronize(CUstream s) { (void)s; return CUDA_SUCCESS; }
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { (void)s; return CUDA_SUCCESS; }

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* p, size_t n) {
  void* m = malloc(n);
  if (m == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)m;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  free((void*)(uintptr_t)p);
  return CUDA_SUCCESS;
}

/* ---- Modules: one function per module, from a slot that an unload frees
 * and the next load takes again, so a CUfunction value comes back for a
 * different kernel (as real drivers reuse handles). ---- */

static fake_fn_t fn_slot;
static int module_loaded;

/* A "module image" is the fake_fn_t it defines, copied into the slot. */
EXPORT CUresult cuModuleLoadData(CUmodule* m, const void* image) {
  if (module_loaded)
    return CUDA_ERROR_OUT_OF_MEMORY;
  fn_slot = *(const fake_fn_t*)image;
  module_loaded = 1;
  *m = (CUmodule)&module_loaded;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule m, const char* name) {
  if (m != (CUmodule)&module_loaded || !module_loaded || strcmp(name, fn_slot.name) != 0)
    return CUDA_ERROR_NOT_FOUND;
  *f = (CUfunction)&fn_slot;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuModuleUnload(CUmodule m) {
  if (m != (CUmodule)&module_loaded || !module_loaded)
    return CUDA_ERROR_INVALID_HANDLE;
  module_loaded = 0;
  fn_slot.magic = 0;
  return CUDA_SUCCESS;
}

/* ---- Stream capture: a flag per stream handle (a few fixed handles) ---- */

#define FAKE_STREAMS 8
static CUstream capturing[FAKE_STREAMS];

static int capture_slot(CUstream s) {
  for (int i = 0; i < FAKE_STREAMS; i++)
    if (capturing[i] == s)
      return i;
  return -1;
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  (void)mode;
  if (s == NULL || capture_slot(s) >= 0)
    return CUDA_ERROR_ILLEGAL_STATE;
  int i = capture_slot(NULL);
  if (i < 0)
    return CUDA_ERROR_OUT_OF_MEMORY;
  capturing[i] = s;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph* g) {
  int i = s ? capture_slot(s) : -1;
  if (i < 0)
    return CUDA_ERROR_ILLEGAL_STATE;
  capturing[i] = NULL;
  *g = (CUgraph)(uintptr_t)0x6a;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus* st) {
  *st = s && capture_slot(s) >= 0 ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetExportTable(const void** t, const CUuuid* id) {
  (void)id;
  *t = NULL;
  return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress_v2(const char* sym, void** pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult* st) {
  (void)ver;
  char name[128];
  /* The driver's own table: look in this library only, never the global scope
   * (NVIDIA's driver). FAKE_GPA_GLOBAL=1: the global scope, where a preloaded
   * shim's exports win (a driver whose table binds &symbol without
   * -Bsymbolic): the shim must still count the caller's route. */
  static void* self;
  if (self == NULL && getenv("FAKE_GPA_GLOBAL") != NULL) {
    self = RTLD_DEFAULT;
  } else if (self == NULL) {
    Dl_info info;
    dladdr((void*)cuInit, &info);
    self = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  }
  void* p = NULL;
  if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
    snprintf(name, sizeof(name), "%s_ptsz", sym);
    p = dlsym(self, name);
  }
  if (p == NULL && strcmp(sym, "cuMemAlloc") == 0)
    p = dlsym(self, "cuMemAlloc_v2");
  if (p == NULL && strcmp(sym, "cuMemFree") == 0)
    p = dlsym(self, "cuMemFree_v2");
  if (p == NULL)
    p = dlsym(self, sym);
  if (st)
    *st = p ? CU_GET_PROC_ADDRESS_SUCCESS : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  *pfn = p;
  return p ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char* sym, void** pfn, int ver, cuuint64_t flags) {
  return cuGetProcAddress_v2(sym, pfn, ver, flags, NULL);
}

/* rt.c: the libcudart.so.13 stand-in — the runtime API the examples and
 * PyTorch-style host code use, and nvcc's launch plumbing.
 *
 * DESIGN: the runtime reaches the driver exactly as NVIDIA's does:
 * dlopen("libcuda.so.1"), dlsym(h, "cuGetProcAddress_v2"), then every entry
 * point through cuGetProcAddress_v2 with the runtime's version (13000) and the
 * per-thread-default-stream flag for the _ptsz/_ptds paths. It never links the
 * driver, so an interposer on dlsym/cuGetProcAddress sees the real traffic.
 *
 * Registered fatbins are loaded as CUlibrary objects on the first lookup of
 * one of their kernels; a host stub maps to its CUkernel, which is what
 * __cudaGetKernel hands to nvcc's launch code and what cuLaunchKernel gets.
 * The last error is per thread (cudaGetLastError clears it); a device fault's
 * sticky error comes back from the driver on every later call.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"

#define RT_API __attribute__((visibility("default")))
#define RT_VERSION 13000

/* ---- The driver table, resolved through cuGetProcAddress_v2 ---- */

/* D(field, "base name", PFN type, per-thread flag) */
#define RT_DRIVER_TABLE(D)                                                          \
  D(Init, "cuInit", PFN_cuInit_v2000, 0)                                            \
  D(DriverGetVersion, "cuDriverGetVersion", PFN_cuDriverGetVersion_v2020, 0)        \
  D(DeviceGet, "cuDeviceGet", PFN_cuDeviceGet_v2000, 0)                             \
  D(DeviceGetCount, "cuDeviceGetCount", PFN_cuDeviceGetCount_v2000, 0)              \
  D(DeviceGetName, "cuDeviceGetName", PFN_cuDeviceGetName_v2000, 0)                 \
  D(DeviceGetAttribute, "cuDeviceGetAttribute", PFN_cuDeviceGetAttribute_v2000, 0)  \
  D(DeviceTotalMem, "cuDeviceTotalMem", PFN_cuDeviceTotalMem_v3020, 0)              \
  D(PrimaryCtxRetain, "cuDevicePrimaryCtxRetain", PFN_cuDevicePrimaryCtxRetain_v7000, 0) \
  D(PrimaryCtxReset, "cuDevicePrimaryCtxReset", PFN_cuDevicePrimaryCtxReset_v11000, 0) \
  D(CtxSetCurrent, "cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000, 0)                 \
  D(CtxSynchronize, "cuCtxSynchronize", PFN_cuCtxSynchronize_v2000, 0)              \
  D(CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", PFN_cuCtxGetStreamPriorityRange_v5050, 0) \
  D(CtxSetLimit, "cuCtxSetLimit", PFN_cuCtxSetLimit_v3010, 0)                       \
  D(CtxGetLimit, "cuCtxGetLimit", PFN_cuCtxGetLimit_v3010, 0)                       \
  D(MemAlloc, "cuMemAlloc", PFN_cuMemAlloc_v3020, 0)                                \
  D(MemFree, "cuMemFree", PFN_cuMemFree_v3020, 0)                                   \
  D(MemAllocManaged, "cuMemAllocManaged", PFN_cuMemAllocManaged_v6000, 0)           \
  D(MemAllocHost, "cuMemAllocHost", PFN_cuMemAllocHost_v3020, 0)                    \
  D(MemHostAlloc, "cuMemHostAlloc", PFN_cuMemHostAlloc_v2020, 0)                    \
  D(MemFreeHost, "cuMemFreeHost", PFN_cuMemFreeHost_v2000, 0)                       \
  D(MemHostRegister, "cuMemHostRegister", PFN_cuMemHostRegister_v6050, 0)           \
  D(MemHostUnregister, "cuMemHostUnregister", PFN_cuMemHostUnregister_v4000, 0)     \
  D(MemGetInfo, "cuMemGetInfo", PFN_cuMemGetInfo_v3020, 0)                          \
  D(PointerGetAttributes, "cuPointerGetAttributes", PFN_cuPointerGetAttributes_v7000, 0) \
  D(MemAllocAsync, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020, 0)                \
  D(MemFreeAsync, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020, 0)                   \
  D(Memcpy, "cuMemcpy", PFN_cuMemcpy_v4000, 0)                                      \
  D(MemcpyHtoD, "cuMemcpyHtoD", PFN_cuMemcpyHtoD_v3020, 0)                          \
  D(MemcpyDtoH, "cuMemcpyDtoH", PFN_cuMemcpyDtoH_v3020, 0)                          \
  D(MemcpyDtoD, "cuMemcpyDtoD", PFN_cuMemcpyDtoD_v3020, 0)                          \
  D(MemcpyAsync, "cuMemcpyAsync", PFN_cuMemcpyAsync_v4000, 0)                       \
  D(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", PFN_cuMemcpyHtoDAsync_v3020, 0)           \
  D(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", PFN_cuMemcpyDtoHAsync_v3020, 0)           \
  D(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", PFN_cuMemcpyDtoDAsync_v3020, 0)           \
  D(MemsetD8, "cuMemsetD8", PFN_cuMemsetD8_v3020, 0)                                \
  D(MemsetD8Async, "cuMemsetD8Async", PFN_cuMemsetD8Async_v3020, 0)                 \
  D(StreamCreate, "cuStreamCreate", PFN_cuStreamCreate_v2000, 0)                    \
  D(StreamCreateWithPriority, "cuStreamCreateWithPriority", PFN_cuStreamCreateWithPriority_v5050, 0) \
  D(StreamDestroy, "cuStreamDestroy", PFN_cuStreamDestroy_v4000, 0)                 \
  D(StreamSynchronize, "cuStreamSynchronize", PFN_cuStreamSynchronize_v2000, 0)     \
  D(StreamQuery, "cuStreamQuery", PFN_cuStreamQuery_v2000, 0)                       \
  D(StreamWaitEvent, "cuStreamWaitEvent", PFN_cuStreamWaitEvent_v3020, 0)           \
  D(StreamGetFlags, "cuStreamGetFlags", PFN_cuStreamGetFlags_v5050, 0)              \
  D(StreamGetPriority, "cuStreamGetPriority", PFN_cuStreamGetPriority_v5050, 0)     \
  D(StreamBeginCapture, "cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010, 0) \
  D(StreamEndCapture, "cuStreamEndCapture", PFN_cuStreamEndCapture_v10000, 0)       \
  D(StreamIsCapturing, "cuStreamIsCapturing", PFN_cuStreamIsCapturing_v10000, 0)    \
  D(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", PFN_cuStreamGetCaptureInfo_v12030, 0) \
  D(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", PFN_cuThreadExchangeStreamCaptureMode_v10010, 0) \
  D(LaunchHostFunc, "cuLaunchHostFunc", PFN_cuLaunchHostFunc_v10000, 0)             \
  D(EventCreate, "cuEventCreate", PFN_cuEventCreate_v2000, 0)                       \
  D(EventDestroy, "cuEventDestroy", PFN_cuEventDestroy_v4000, 0)                    \
  D(EventRecord, "cuEventRecord", PFN_cuEventRecord_v2000, 0)                       \
  D(EventRecordWithFlags, "cuEventRecordWithFlags", PFN_cuEventRecordWithFlags_v11010, 0) \
  D(EventQuery, "cuEventQuery", PFN_cuEventQuery_v2000, 0)                          \
  D(EventSynchronize, "cuEventSynchronize", PFN_cuEventSynchronize_v2000, 0)        \
  D(EventElapsedTime, "cuEventElapsedTime", PFN_cuEventElapsedTime_v12080, 0)       \
  D(LibraryLoadData, "cuLibraryLoadData", PFN_cuLibraryLoadData_v12000, 0)          \
  D(LibraryUnload, "cuLibraryUnload", PFN_cuLibraryUnload_v12000, 0)                \
  D(LibraryGetKernel, "cuLibraryGetKernel", PFN_cuLibraryGetKernel_v12000, 0)       \
  D(KernelGetName, "cuKernelGetName", PFN_cuKernelGetName_v12030, 0)                \
  D(KernelGetAttribute, "cuKernelGetAttribute", PFN_cuKernelGetAttribute_v12000, 0) \
  D(FuncSetAttribute, "cuFuncSetAttribute", PFN_cuFuncSetAttribute_v9000, 0)        \
  D(LaunchKernel, "cuLaunchKernel", PFN_cuLaunchKernel_v4000, 0)                    \
  D(LaunchKernelEx, "cuLaunchKernelEx", PFN_cuLaunchKernelEx_v11060, 0)             \
  D(GraphCreate, "cuGraphCreate", PFN_cuGraphCreate_v10000, 0)                      \
  D(GraphDestroy, "cuGraphDestroy", PFN_cuGraphDestroy_v10000, 0)                   \
  D(GraphAddKernelNode, "cuGraphAddKernelNode", PFN_cuGraphAddKernelNode_v12000, 0) \
  D(GraphGetNodes, "cuGraphGetNodes", PFN_cuGraphGetNodes_v10000, 0)                \
  D(GraphInstantiate, "cuGraphInstantiateWithFlags", PFN_cuGraphInstantiateWithFlags_v11040, 0) \
  D(GraphLaunch, "cuGraphLaunch", PFN_cuGraphLaunch_v10000, 0)                      \
  D(GraphExecDestroy, "cuGraphExecDestroy", PFN_cuGraphExecDestroy_v10000, 0)       \
  D(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", PFN_cuGraphExecKernelNodeSetParams_v12000, 0) \
  D(GraphExecUpdate, "cuGraphExecUpdate", PFN_cuGraphExecUpdate_v12000, 0)          \
  D(GetErrorString, "cuGetErrorString", PFN_cuGetErrorString_v6000, 0)              \
  /* per-thread default stream variants */                                          \
  D(pt_LaunchKernel, "cuLaunchKernel", PFN_cuLaunchKernel_v4000, 1)                 \
  D(pt_LaunchKernelEx, "cuLaunchKernelEx", PFN_cuLaunchKernelEx_v11060, 1)          \
  D(pt_Memcpy, "cuMemcpy", PFN_cuMemcpy_v4000, 1)                                   \
  D(pt_MemcpyAsync, "cuMemcpyAsync", PFN_cuMemcpyAsync_v4000, 1)                    \
  D(pt_MemsetD8, "cuMemsetD8", PFN_cuMemsetD8_v3020, 1)                             \
  D(pt_MemsetD8Async, "cuMemsetD8Async", PFN_cuMemsetD8Async_v3020, 1)              \
  D(pt_StreamSynchronize, "cuStreamSynchronize", PFN_cuStreamSynchronize_v2000, 1)  \
  D(pt_StreamQuery, "cuStreamQuery", PFN_cuStreamQuery_v2000, 1)                    \
  D(pt_StreamWaitEvent, "cuStreamWaitEvent", PFN_cuStreamWaitEvent_v3020, 1)        \
  D(pt_EventRecord, "cuEventRecord", PFN_cuEventRecord_v2000, 1)                    \
  D(pt_GraphLaunch, "cuGraphLaunch", PFN_cuGraphLaunch_v10000, 1)                   \
  D(pt_StreamBeginCapture, "cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010, 1) \
  D(pt_StreamEndCapture, "cuStreamEndCapture", PFN_cuStreamEndCapture_v10000, 1)    \
  D(pt_StreamIsCapturing, "cuStreamIsCapturing", PFN_cuStreamIsCapturing_v10000, 1) \
  D(pt_LaunchHostFunc, "cuLaunchHostFunc", PFN_cuLaunchHostFunc_v10000, 1)             \
  D(pt_StreamGetCaptureInfo, "cuStreamGetCaptureInfo", PFN_cuStreamGetCaptureInfo_v12030, 1) \
  D(pt_StreamGetFlags, "cuStreamGetFlags", PFN_cuStreamGetFlags_v5050, 1)          \
  D(pt_StreamGetPriority, "cuStreamGetPriority", PFN_cuStreamGetPriority_v5050, 1) \
  D(pt_EventRecordWithFlags, "cuEventRecordWithFlags", PFN_cuEventRecordWithFlags_v11010, 1)

static struct {
#define D(field, name, type, pt) type field;
  RT_DRIVER_TABLE(D)
#undef D
} drv;

static PFN_cuGetProcAddress_v12000 get_proc;
static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
static cudaError_t rt_init_status = cudaErrorInitializationError;
static _Thread_local cudaError_t last_error;
static _Thread_local int thread_ctx_set;
static CUcontext primary_ctx;

static cudaError_t map_err(CUresult r) {
  /* The driver and runtime codes agree numerically for every code the sim
   * returns (cudaErrorInvalidValue = CUDA_ERROR_INVALID_VALUE = 1, 400, 9xx...). */
  return (cudaError_t)r;
}

static cudaError_t set_err(cudaError_t e) {
  if (e != cudaSuccess)
    last_error = e;
  return e;
}

/* ---- Simulated host work (sim/cost.h) ---- */

/* The sim driver's private table, found once at initialisation: the program's
 * own host work per <<<>>> launch (SIMCU_HOST_NS) and the runtime's overhead
 * row are charged through it. NULL under a driver that does not know the id. */
static const simcu_private_t* sim_priv;

static void find_sim_priv(PFN_cuGetProcAddress_v12000 gpa) {
  static const CUuuid id = {SIMCU_PRIVATE_UUID};
  PFN_cuGetExportTable_v3000 get_table = NULL;
  const void* t = NULL;
  if (gpa("cuGetExportTable", (void**)&get_table, RT_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
          NULL) == CUDA_SUCCESS && get_table != NULL && get_table(&t, &id) == CUDA_SUCCESS &&
      t != NULL && ((const simcu_private_t*)t)->size >= sizeof(simcu_private_t))
    sim_priv = t;
}

static void rt_host_work(int kind) {
  if (sim_priv != NULL)
    sim_priv->host_work(kind);
}

static void rt_init(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (h == NULL) {
    rt_init_status = cudaErrorInsufficientDriver;
    return;
  }
  get_proc = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
  if (get_proc == NULL) {
    rt_init_status = cudaErrorInsufficientDriver;
    return;
  }
  void* probe = NULL;
  (void)get_proc("", &probe, 0, 0, NULL);   /* as the real runtime does first */
  CUdriverProcAddressQueryResult st;
#define D(field, name, type, pt)                                                    \
  if (get_proc(name, (void**)&drv.field, RT_VERSION,                                \
               pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM                   \
                  : CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)             \
    drv.field = NULL;
  RT_DRIVER_TABLE(D)
#undef D
  find_sim_priv(get_proc);
  if (drv.Init == NULL || drv.Init(0) != CUDA_SUCCESS) {
    rt_init_status = cudaErrorNoDevice;
    return;
  }
  if (drv.PrimaryCtxRetain == NULL || drv.PrimaryCtxRetain(&primary_ctx, 0) != CUDA_SUCCESS) {
    rt_init_status = cudaErrorDevicesUnavailable;
    return;
  }
  rt_init_status = cudaSuccess;
}

/* Every runtime call starts here: the driver is loaded once, and each host
 * thread gets the primary context made current, as the runtime does. */
static cudaError_t rt(void) {
  pthread_once(&rt_once, rt_init);
  if (rt_init_status != cudaSuccess)
    return rt_init_status;
  if (!thread_ctx_set) {
    if (drv.CtxSetCurrent(primary_ctx) != CUDA_SUCCESS)
      return cudaErrorDevicesUnavailable;
    thread_ctx_set = 1;
  }
  return cudaSuccess;
}

#define RT_ENTER()                                                                 \
  do {                                                                             \
    cudaError_t e_ = rt();                                                         \
    if (e_ != cudaSuccess)                                                         \
      return set_err(e_);                                                          \
    rt_host_work(SIMCU_WORK_RUNTIME);                                              \
  } while (0)
#define RT_CALL(fn, ...) set_err(drv.fn != NULL ? map_err(drv.fn(__VA_ARGS__)) : cudaErrorNotSupported)

/* ---- Fatbins and kernels ---- */

typedef struct fatbin_s {
  const void* wrapper;       /* __fatBinC_Wrapper_t given by the program */
  CUlibrary lib;             /* loaded on first use */
  int failed;
} fatbin_t;

typedef struct kfunc_s {
  const void* host;          /* host stub address */
  char* name;                /* device (mangled) name */
  fatbin_t* fb;
  CUkernel k;
} kfunc_t;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static kfunc_t* kfuncs;
static size_t nkfuncs, capkfuncs;

RT_API void** __cudaRegisterFatBinary(void* wrapper) {
  fatbin_t* fb = calloc(1, sizeof(*fb));
  if (fb == NULL)
    return NULL;
  fb->wrapper = wrapper;
  return (void**)fb;
}

RT_API void __cudaRegisterFatBinaryEnd(void** handle) {
  (void)handle;
}

RT_API void __cudaUnregisterFatBinary(void** handle) {
  fatbin_t* fb = (fatbin_t*)handle;
  if (fb == NULL)
    return;
  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nkfuncs;) {
    if (kfuncs[i].fb == fb) {
      free(kfuncs[i].name);
      kfuncs[i] = kfuncs[--nkfuncs];
    } else {
      i++;
    }
  }
  if (nkfuncs == 0) {
    free(kfuncs);
    kfuncs = NULL;
    capkfuncs = 0;
  }
  pthread_mutex_unlock(&reg_lock);
  /* The library stays loaded: the driver may be shutting down at this point. */
  free(fb);
}

RT_API void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun,
                                   const char* deviceName, int thread_limit, uint3* tid,
                                   uint3* bid, dim3* bDim, dim3* gDim, int* wSize) {
  (void)deviceName;
  (void)thread_limit;
  (void)tid;
  (void)bid;
  (void)bDim;
  (void)gDim;
  (void)wSize;
  pthread_mutex_lock(&reg_lock);
  if (nkfuncs == capkfuncs) {
    size_t nc = capkfuncs ? capkfuncs * 2 : 32;
    kfunc_t* n = realloc(kfuncs, nc * sizeof(*n));
    if (n == NULL)
      goto out;
    kfuncs = n;
    capkfuncs = nc;
  }
  char* name = strdup(deviceFun);
  if (name == NULL)
    goto out;
  kfuncs[nkfuncs++] = (kfunc_t){hostFun, name, (fatbin_t*)handle, NULL};
out:
  pthread_mutex_unlock(&reg_lock);
}

RT_API void __cudaRegisterVar(void** handle, char* hostVar, char* deviceAddress,
                              const char* deviceName, int ext, size_t size, int constant,
                              int global) {
  /* __device__ variables are not simulated: device code never runs here. */
  (void)handle;
  (void)hostVar;
  (void)deviceAddress;
  (void)deviceName;
  (void)ext;
  (void)size;
  (void)constant;
  (void)global;
}

RT_API void __cudaRegisterManagedVar(void** handle, void** hostVarPtrAddress, char* deviceAddress,
                                     const char* deviceName, int ext, size_t size, int constant,
                                     int global) {
  (void)handle;
  (void)hostVarPtrAddress;
  (void)deviceAddress;
  (void)deviceName;
  (void)ext;
  (void)size;
  (void)constant;
  (void)global;
}

RT_API char __cudaInitModule(void** handle) {
  (void)handle;
  return 1;
}

/* Finds the kernel of a host stub, loading its fatbin on first use. */
static cudaError_t lookup_kernel(const void* host, CUkernel* out) {
  cudaError_t e = rt();
  if (e != cudaSuccess)
    return e;
  e = cudaErrorInvalidDeviceFunction;
  pthread_mutex_lock(&reg_lock);
  for (size_t i = 0; i < nkfuncs; i++) {
    kfunc_t* kf = &kfuncs[i];
    if (kf->host != host)
      continue;
    if (kf->k == NULL) {
      fatbin_t* fb = kf->fb;
      if (fb->lib == NULL && !fb->failed) {
        CUresult r = drv.LibraryLoadData(&fb->lib, fb->wrapper, NULL, NULL, 0, NULL, NULL, 0);
        if (r != CUDA_SUCCESS) {
          fb->failed = 1;
          e = r == CUDA_ERROR_NO_BINARY_FOR_GPU ? cudaErrorNoKernelImageForDevice
                                                : cudaErrorInvalidKernelImage;
          break;
        }
      }
      if (fb->lib == NULL ||
          drv.LibraryGetKernel(&kf->k, fb->lib, kf->name) != CUDA_SUCCESS) {
        kf->k = NULL;
        break;
      }
    }
    *out = kf->k;
    e = cudaSuccess;
    break;
  }
  pthread_mutex_unlock(&reg_lock);
  return e;
}

/* lookup_kernel for a call that answers through out, which must be there. */
static cudaError_t kernel_into(const void* out, const void* host, CUkernel* k) {
  return out == NULL ? cudaErrorInvalidValue : lookup_kernel(host, k);
}

/* A function argument may be a host stub or, in CUDA 12+, a cudaKernel_t. */
static cudaError_t resolve_func(const void* func, CUfunction* out) {
  CUkernel k;
  cudaError_t e = lookup_kernel(func, &k);
  if (e == cudaSuccess) {
    *out = (CUfunction)k;
    return cudaSuccess;
  }
  const char* name;
  if (e == cudaErrorInvalidDeviceFunction && drv.KernelGetName != NULL &&
      drv.KernelGetName(&name, (CUkernel)func) == CUDA_SUCCESS) {
    *out = (CUfunction)func;
    return cudaSuccess;
  }
  return e;
}

RT_API cudaError_t __cudaGetKernel(cudaKernel_t* out, const void* host) {
  CUkernel k;
  cudaError_t e = kernel_into(out, host, &k);
  if (e != cudaSuccess)
    return set_err(e);
  *out = (cudaKernel_t)k;
  return cudaSuccess;
}

typedef struct callcfg_s {
  dim3 grid, block;
  size_t shm;
  cudaStream_t stream;
} callcfg_t;

static _Thread_local callcfg_t cfg_stack[16];
static _Thread_local int cfg_depth;

/* Every <<<>>> launch starts here, whether or not an interposer later holds
 * the launch: the program's own host work per op (SIMCU_HOST_NS) is charged
 * here so that it is the same with and without graph replay. */
RT_API unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shm, struct CUstream_st* s) {
  pthread_once(&rt_once, rt_init);
  rt_host_work(SIMCU_WORK_OP);
  if (cfg_depth >= 16)
    return 1;
  cfg_stack[cfg_depth++] = (callcfg_t){grid, block, shm, s};
  return 0;
}

RT_API cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shm, void* stream) {
  if (cfg_depth == 0)
    return set_err(cudaErrorMissingConfiguration);
  callcfg_t c = cfg_stack[--cfg_depth];
  *grid = c.grid;
  *block = c.block;
  *shm = c.shm;
  *(cudaStream_t*)stream = c.stream;
  return cudaSuccess;
}

static cudaError_t launch_err(CUresult r) {
  /* A launch the driver rejects for its shape is a configuration error to the runtime. */
  if (r == CUDA_ERROR_INVALID_VALUE)
    return cudaErrorInvalidConfiguration;
  if (r == CUDA_ERROR_NOT_FOUND)
    return cudaErrorInvalidDeviceFunction;
  return map_err(r);
}

static cudaError_t do_launch(CUfunction f, dim3 g, dim3 b, void** args, size_t shm,
                             cudaStream_t s, int pt) {
  PFN_cuLaunchKernel_v4000 fn = pt ? drv.pt_LaunchKernel : drv.LaunchKernel;
  if ((uint64_t)b.x * b.y * b.z > 1024)
    return set_err(cudaErrorInvalidConfiguration);
  return set_err(launch_err(fn(f, g.x, g.y, g.z, b.x, b.y, b.z, (unsigned)shm, s, args, NULL)));
}

RT_API cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t shm,
                                      cudaStream_t s) {
  RT_ENTER();
  if (k == NULL)
    return set_err(cudaErrorInvalidDeviceFunction);
  return do_launch((CUfunction)k, g, b, args, shm, s, 0);
}

RT_API cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t shm,
                                           cudaStream_t s) {
  RT_ENTER();
  if (k == NULL)
    return set_err(cudaErrorInvalidDeviceFunction);
  return do_launch((CUfunction)k, g, b, args, shm, s, 1);
}

static cudaError_t launch_host(const void* func, dim3 g, dim3 b, void** args, size_t shm,
                               cudaStream_t s, int pt) {
  RT_ENTER();
  CUfunction f;
  cudaError_t e = resolve_func(func, &f);
  if (e != cudaSuccess)
    return set_err(e);
  return do_launch(f, g, b, args, shm, s, pt);
}

RT_API cudaError_t cudaLaunchKernel(const void* func, dim3 g, dim3 b, void** args, size_t shm,
                                    cudaStream_t s) {
  return launch_host(func, g, b, args, shm, s, 0);
}

RT_API cudaError_t cudaLaunchKernel_ptsz(const void* func, dim3 g, dim3 b, void** args, size_t shm,
                                         cudaStream_t s) {
  return launch_host(func, g, b, args, shm, s, 1);
}

static cudaError_t launch_ex(const cudaLaunchConfig_t* c, const void* func, void** args, int pt) {
  RT_ENTER();
  if (c == NULL)
    return set_err(cudaErrorInvalidValue);
  CUfunction f;
  cudaError_t e = resolve_func(func, &f);
  if (e != cudaSuccess)
    return set_err(e);
  if ((uint64_t)c->blockDim.x * c->blockDim.y * c->blockDim.z > 1024)
    return set_err(cudaErrorInvalidConfiguration);
  /* cudaLaunchAttribute and CUlaunchAttribute share their layout and ids. */
  CUlaunchConfig dc = {
    .gridDimX = c->gridDim.x, .gridDimY = c->gridDim.y, .gridDimZ = c->gridDim.z,
    .blockDimX = c->blockDim.x, .blockDimY = c->blockDim.y, .blockDimZ = c->blockDim.z,
    .sharedMemBytes = (unsigned)c->dynamicSmemBytes, .hStream = c->stream,
    .attrs = (CUlaunchAttribute*)c->attrs, .numAttrs = c->numAttrs,
  };
  PFN_cuLaunchKernelEx_v11060 fn = pt ? drv.pt_LaunchKernelEx : drv.LaunchKernelEx;
  return set_err(launch_err(fn(&dc, f, args, NULL)));
}

RT_API cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t* c, const void* func, void** args) {
  return launch_ex(c, func, args, 0);
}

RT_API cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t* c, const void* func,
                                            void** args) {
  return launch_ex(c, func, args, 1);
}

RT_API cudaError_t cudaGetFuncBySymbol(cudaFunction_t* out, const void* symbol) {
  RT_ENTER();
  CUkernel k;
  cudaError_t e = kernel_into(out, symbol, &k);
  if (e != cudaSuccess)
    return set_err(e);
  *out = (cudaFunction_t)k;   /* a CUkernel serves as a CUfunction */
  return cudaSuccess;
}

RT_API cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* a, const void* func) {
  RT_ENTER();
  CUkernel k;
  cudaError_t e = kernel_into(a, func, &k);
  if (e != cudaSuccess)
    return set_err(e);
  memset(a, 0, sizeof(*a));
  int v = 0;
#define KA(field, attr)                                                             \
  if (drv.KernelGetAttribute(&v, attr, k, 0) == CUDA_SUCCESS)                       \
    a->field = v;
  KA(sharedSizeBytes, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
  KA(maxThreadsPerBlock, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  KA(numRegs, CU_FUNC_ATTRIBUTE_NUM_REGS)
  KA(ptxVersion, CU_FUNC_ATTRIBUTE_PTX_VERSION)
  KA(binaryVersion, CU_FUNC_ATTRIBUTE_BINARY_VERSION)
  KA(maxDynamicSharedSizeBytes, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
  KA(preferredShmemCarveout, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT)
#undef KA
  return cudaSuccess;
}

RT_API cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  RT_ENTER();
  CUfunction f;
  cudaError_t e = resolve_func(func, &f);
  if (e != cudaSuccess)
    return set_err(e);
  return RT_CALL(FuncSetAttribute, f, (CUfunction_attribute)attr, value);
}

/* ---- Errors ---- */

RT_API cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}

RT_API cudaError_t cudaPeekAtLastError(void) {
  return last_error;
}

static const struct {
  cudaError_t e;
  const char* name;
  const char* text;
} rt_errs[] = {
  {cudaSuccess, "cudaSuccess", "no error"},
  {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
  {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
  {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
  {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
  {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
  {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
  {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
  {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
  {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
  {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
  {cudaErrorInvalidKernelImage, "cudaErrorInvalidKernelImage", "device kernel image is invalid"},
  {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
  {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice", "no kernel image is available for execution on the device"},
  {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
  {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
  {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
  {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
  {cudaErrorInvalidDevicePointer, "cudaErrorInvalidDevicePointer", "invalid device pointer"},
  {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
  {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
  {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
  {cudaErrorStreamCaptureMerge, "cudaErrorStreamCaptureMerge", "operation would result in a merge of separate capture sequences"},
  {cudaErrorStreamCaptureUnmatched, "cudaErrorStreamCaptureUnmatched", "capture was not ended in the same stream as it began"},
  {cudaErrorStreamCaptureUnjoined, "cudaErrorStreamCaptureUnjoined", "capturing stream has unjoined work"},
  {cudaErrorStreamCaptureIsolation, "cudaErrorStreamCaptureIsolation", "dependency created on uncaptured work in another stream"},
  {cudaErrorStreamCaptureImplicit, "cudaErrorStreamCaptureImplicit", "operation would make the legacy stream depend on a capturing blocking stream"},
  {cudaErrorCapturedEvent, "cudaErrorCapturedEvent", "operation not permitted on an event last recorded in a capturing stream"},
  {cudaErrorStreamCaptureWrongThread, "cudaErrorStreamCaptureWrongThread", "attempt to terminate a thread-local capture sequence from another thread"},
  {cudaErrorGraphExecUpdateFailure, "cudaErrorGraphExecUpdateFailure", "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update"},
  /* device faults a kernel body raises (SIMCU_FAULT), sticky */
  {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
  {cudaErrorAssert, "cudaErrorAssert", "device-side assert triggered"},
  {cudaErrorHardwareStackError, "cudaErrorHardwareStackError", "hardware stack error"},
  {cudaErrorIllegalInstruction, "cudaErrorIllegalInstruction", "an illegal instruction was encountered"},
  {cudaErrorMisalignedAddress, "cudaErrorMisalignedAddress", "misaligned address"},
  {cudaErrorInvalidAddressSpace, "cudaErrorInvalidAddressSpace", "operation not supported on global/shared address space"},
  {cudaErrorInvalidPc, "cudaErrorInvalidPc", "invalid program counter"},
  {cudaErrorLaunchFailure, "cudaErrorLaunchFailure", "unspecified launch failure"},
  {cudaErrorCooperativeLaunchTooLarge, "cudaErrorCooperativeLaunchTooLarge", "too many blocks in cooperative launch"},
  {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered", "part or all of the requested memory range is already mapped"},
  {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered", "pointer does not correspond to a registered memory region"},
  {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

RT_API const char* cudaGetErrorString(cudaError_t e) {
  for (size_t i = 0; i < sizeof(rt_errs) / sizeof(rt_errs[0]); i++)
    if (rt_errs[i].e == e)
      return rt_errs[i].text;
  return "unrecognized error code";
}

RT_API const char* cudaGetErrorName(cudaError_t e) {
  for (size_t i = 0; i < sizeof(rt_errs) / sizeof(rt_errs[0]); i++)
    if (rt_errs[i].e == e)
      return rt_errs[i].name;
  return "cudaErrorUnknown";
}

/* ---- Device ---- */

RT_API cudaError_t cudaDriverGetVersion(int* v) {
  pthread_once(&rt_once, rt_init);
  if (v == NULL)
    return set_err(cudaErrorInvalidValue);
  if (drv.DriverGetVersion == NULL) {
    *v = 0;
    return cudaSuccess;
  }
  return RT_CALL(DriverGetVersion, v);
}

RT_API cudaError_t cudaRuntimeGetVersion(int* v) {
  if (v == NULL)
    return set_err(cudaErrorInvalidValue);
  *v = RT_VERSION;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetDeviceCount(int* n) {
  RT_ENTER();
  return RT_CALL(DeviceGetCount, n);
}

RT_API cudaError_t cudaGetDevice(int* d) {
  RT_ENTER();
  if (d == NULL)
    return set_err(cudaErrorInvalidValue);
  *d = 0;
  return cudaSuccess;
}

RT_API cudaError_t cudaSetDevice(int d) {
  RT_ENTER();
  return d == 0 ? cudaSuccess : set_err(cudaErrorInvalidDevice);
}

RT_API cudaError_t cudaSetDeviceFlags(unsigned int flags) {
  RT_ENTER();
  (void)flags;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  RT_ENTER();
  if (flags == NULL)
    return set_err(cudaErrorInvalidValue);
  *flags = cudaDeviceMapHost;
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetAttribute(int* v, enum cudaDeviceAttr a, int d) {
  RT_ENTER();
  /* cudaDeviceAttr values equal CUdevice_attribute values. */
  return RT_CALL(DeviceGetAttribute, v, (CUdevice_attribute)a, d);
}

RT_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int d) {
  RT_ENTER();
  if (p == NULL)
    return set_err(cudaErrorInvalidValue);
  if (d != 0)
    return set_err(cudaErrorInvalidDevice);
  memset(p, 0, sizeof(*p));
  drv.DeviceGetName(p->name, sizeof(p->name), 0);
  drv.DeviceTotalMem(&p->totalGlobalMem, 0);
  int v;
#define A(field, attr)                                                              \
  if (drv.DeviceGetAttribute(&v, attr, 0) == CUDA_SUCCESS)                          \
    p->field = v;
  A(sharedMemPerBlock, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
  A(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK)
  A(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE)
  A(memPitch, CU_DEVICE_ATTRIBUTE_MAX_PITCH)
  A(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
  A(maxThreadsDim[0], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)
  A(maxThreadsDim[1], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)
  A(maxThreadsDim[2], CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
  A(maxGridSize[0], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)
  A(maxGridSize[1], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)
  A(maxGridSize[2], CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
  A(totalConstMem, CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY)
  A(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
  A(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
  A(textureAlignment, CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT)
  A(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
  A(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
  A(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)
  A(ECCEnabled, CU_DEVICE_ATTRIBUTE_ECC_ENABLED)
  A(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT)
  A(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
  A(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH)
  A(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)
  A(persistingL2CacheMaxSize, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE)
  A(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)
  A(streamPrioritiesSupported, CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED)
  A(sharedMemPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)
  A(regsPerMultiprocessor, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR)
  A(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY)
  A(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
  A(cooperativeLaunch, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)
  A(sharedMemPerBlockOptin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
  A(maxBlocksPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR)
  A(reservedSharedMemPerBlock, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK)
  A(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
  A(clusterLaunch, CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH)
#undef A
  return cudaSuccess;
}

RT_API cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  RT_ENTER();
  return RT_CALL(CtxGetStreamPriorityRange, least, greatest);
}

RT_API cudaError_t cudaDeviceSynchronize(void) {
  RT_ENTER();
  return RT_CALL(CtxSynchronize);
}

RT_API cudaError_t cudaDeviceReset(void) {
  RT_ENTER();
  return RT_CALL(PrimaryCtxReset, 0);
}

RT_API cudaError_t cudaDeviceSetLimit(enum cudaLimit l, size_t v) {
  RT_ENTER();
  return RT_CALL(CtxSetLimit, (CUlimit)l, v);
}

RT_API cudaError_t cudaDeviceGetLimit(size_t* v, enum cudaLimit l) {
  RT_ENTER();
  return RT_CALL(CtxGetLimit, v, (CUlimit)l);
}

RT_API cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** fn, unsigned long long flags,
                                           enum cudaDriverEntryPointQueryResult* status) {
  RT_ENTER();
  return set_err(map_err(get_proc(symbol, fn, RT_VERSION, flags,
                                  (CUdriverProcAddressQueryResult*)status)));
}

RT_API cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** fn,
                                                    unsigned int version, unsigned long long flags,
                                                    enum cudaDriverEntryPointQueryResult* status) {
  RT_ENTER();
  return set_err(map_err(get_proc(symbol, fn, (int)version, flags,
                                  (CUdriverProcAddressQueryResult*)status)));
}

/* ---- Memory ---- */

RT_API cudaError_t cudaMalloc(void** p, size_t n) {
  RT_ENTER();
  if (p == NULL)
    return set_err(cudaErrorInvalidValue);
  if (n == 0) {
    *p = NULL;
    return cudaSuccess;
  }
  CUdeviceptr d = 0;
  cudaError_t e = RT_CALL(MemAlloc, &d, n);
  *p = e == cudaSuccess ? (void*)(uintptr_t)d : NULL;
  return e;   /* CUDA_ERROR_OUT_OF_MEMORY is cudaErrorMemoryAllocation (2) */
}

RT_API cudaError_t cudaMallocManaged(void** p, size_t n, unsigned int flags) {
  RT_ENTER();
  if (p == NULL)
    return set_err(cudaErrorInvalidValue);
  CUdeviceptr d = 0;
  cudaError_t e = RT_CALL(MemAllocManaged, &d, n, flags);
  *p = (void*)(uintptr_t)d;
  return e;
}

RT_API cudaError_t cudaFree(void* p) {
  RT_ENTER();
  return RT_CALL(MemFree, (CUdeviceptr)(uintptr_t)p);
}

RT_API cudaError_t cudaMallocHost(void** p, size_t n) {
  RT_ENTER();
  return RT_CALL(MemAllocHost, p, n);
}

RT_API cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(MemHostAlloc, p, n, flags);
}

RT_API cudaError_t cudaFreeHost(void* p) {
  RT_ENTER();
  return RT_CALL(MemFreeHost, p);
}

RT_API cudaError_t cudaHostRegister(void* p, size_t n, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(MemHostRegister, p, n, flags);
}

RT_API cudaError_t cudaHostUnregister(void* p) {
  RT_ENTER();
  return RT_CALL(MemHostUnregister, p);
}

RT_API cudaError_t cudaMemGetInfo(size_t* f, size_t* t) {
  RT_ENTER();
  return RT_CALL(MemGetInfo, f, t);
}

RT_API cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  RT_ENTER();
  if (p == NULL)
    return set_err(cudaErrorInvalidValue);
  CUdeviceptr d = 0;
  cudaError_t e = RT_CALL(MemAllocAsync, &d, n, s);
  *p = (void*)(uintptr_t)d;
  return e;
}

RT_API cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(MemFreeAsync, (CUdeviceptr)(uintptr_t)p, s);
}

RT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  RT_ENTER();
  if (a == NULL)
    return set_err(cudaErrorInvalidValue);
  unsigned type = 0;
  int managed = 0;
  CUdeviceptr dp = 0;
  void* hp = NULL;
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER};
  void* data[] = {&type, &managed, &dp, &hp};
  cudaError_t e = RT_CALL(PointerGetAttributes, 4, attrs, data, (CUdeviceptr)(uintptr_t)p);
  if (e != cudaSuccess)
    return e;
  memset(a, 0, sizeof(*a));
  a->device = 0;
  if (managed)
    a->type = cudaMemoryTypeManaged;
  else if (type == CU_MEMORYTYPE_DEVICE)
    a->type = cudaMemoryTypeDevice;
  else if (type == CU_MEMORYTYPE_HOST)
    a->type = cudaMemoryTypeHost;
  else
    a->type = cudaMemoryTypeUnregistered;
  a->devicePointer = a->type == cudaMemoryTypeUnregistered ? NULL : (void*)(uintptr_t)dp;
  a->hostPointer = a->type == cudaMemoryTypeDevice ? NULL : (a->type == cudaMemoryTypeUnregistered ? NULL : hp);
  return cudaSuccess;
}

static cudaError_t memcpy_any(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind,
                              cudaStream_t s, int async, int pt) {
  RT_ENTER();
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, sp = (CUdeviceptr)(uintptr_t)src;
  if (!async) {
    switch (kind) {
    case cudaMemcpyHostToDevice: if (!pt) return RT_CALL(MemcpyHtoD, d, src, n); break;
    case cudaMemcpyDeviceToHost: if (!pt) return RT_CALL(MemcpyDtoH, dst, sp, n); break;
    case cudaMemcpyDeviceToDevice: if (!pt) return RT_CALL(MemcpyDtoD, d, sp, n); break;
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault: break;
    default: return set_err(cudaErrorInvalidMemcpyDirection);
    }
    return pt ? RT_CALL(pt_Memcpy, d, sp, n) : RT_CALL(Memcpy, d, sp, n);
  }
  switch (kind) {
  case cudaMemcpyHostToDevice: if (!pt) return RT_CALL(MemcpyHtoDAsync, d, src, n, s); break;
  case cudaMemcpyDeviceToHost: if (!pt) return RT_CALL(MemcpyDtoHAsync, dst, sp, n, s); break;
  case cudaMemcpyDeviceToDevice: if (!pt) return RT_CALL(MemcpyDtoDAsync, d, sp, n, s); break;
  case cudaMemcpyHostToHost:
  case cudaMemcpyDefault: break;
  default: return set_err(cudaErrorInvalidMemcpyDirection);
  }
  return pt ? RT_CALL(pt_MemcpyAsync, d, sp, n, s) : RT_CALL(MemcpyAsync, d, sp, n, s);
}

RT_API cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind k) {
  return memcpy_any(dst, src, n, k, NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t n, enum cudaMemcpyKind k) {
  return memcpy_any(dst, src, n, k, NULL, 0, 1);
}
RT_API cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind k,
                                   cudaStream_t s) {
  return memcpy_any(dst, src, n, k, s, 1, 0);
}
RT_API cudaError_t cudaMemcpyAsync_ptsz(void* dst, const void* src, size_t n, enum cudaMemcpyKind k,
                                        cudaStream_t s) {
  return memcpy_any(dst, src, n, k, s, 1, 1);
}

RT_API cudaError_t cudaMemset(void* p, int v, size_t n) {
  RT_ENTER();
  return RT_CALL(MemsetD8, (CUdeviceptr)(uintptr_t)p, (unsigned char)v, n);
}
RT_API cudaError_t cudaMemset_ptds(void* p, int v, size_t n) {
  RT_ENTER();
  return RT_CALL(pt_MemsetD8, (CUdeviceptr)(uintptr_t)p, (unsigned char)v, n);
}
RT_API cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(MemsetD8Async, (CUdeviceptr)(uintptr_t)p, (unsigned char)v, n, s);
}
RT_API cudaError_t cudaMemsetAsync_ptsz(void* p, int v, size_t n, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_MemsetD8Async, (CUdeviceptr)(uintptr_t)p, (unsigned char)v, n, s);
}

/* ---- Streams and events ---- */

RT_API cudaError_t cudaStreamCreate(cudaStream_t* s) {
  RT_ENTER();
  return RT_CALL(StreamCreate, s, CU_STREAM_DEFAULT);
}
RT_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(StreamCreate, s, flags);
}
RT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int prio) {
  RT_ENTER();
  return RT_CALL(StreamCreateWithPriority, s, flags, prio);
}
RT_API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(StreamDestroy, s);
}
RT_API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(StreamSynchronize, s);
}
RT_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_StreamSynchronize, s);
}
RT_API cudaError_t cudaStreamQuery(cudaStream_t s) {
  RT_ENTER();
  cudaError_t e = drv.StreamQuery != NULL ? map_err(drv.StreamQuery(s)) : cudaErrorNotSupported;
  return e == cudaErrorNotReady ? e : set_err(e);   /* not-ready is not an error to remember */
}
RT_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) {
  RT_ENTER();
  cudaError_t e = map_err(drv.pt_StreamQuery(s));
  return e == cudaErrorNotReady ? e : set_err(e);
}
RT_API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(StreamWaitEvent, s, e, flags);
}
RT_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(pt_StreamWaitEvent, s, e, flags);
}
RT_API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* flags) {
  RT_ENTER();
  return RT_CALL(StreamGetFlags, s, flags);
}
RT_API cudaError_t cudaStreamGetPriority(cudaStream_t s, int* prio) {
  RT_ENTER();
  return RT_CALL(StreamGetPriority, s, prio);
}
RT_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  RT_ENTER();
  return RT_CALL(StreamBeginCapture, s, (CUstreamCaptureMode)mode);
}
RT_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  RT_ENTER();
  return RT_CALL(pt_StreamBeginCapture, s, (CUstreamCaptureMode)mode);
}
RT_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  RT_ENTER();
  return RT_CALL(StreamEndCapture, s, g);
}
RT_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* g) {
  RT_ENTER();
  return RT_CALL(pt_StreamEndCapture, s, g);
}
RT_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* st) {
  RT_ENTER();
  return RT_CALL(StreamIsCapturing, s, (CUstreamCaptureStatus*)st);
}
RT_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* st) {
  RT_ENTER();
  return RT_CALL(pt_StreamIsCapturing, s, (CUstreamCaptureStatus*)st);
}
RT_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus* st,
                                            unsigned long long* id, cudaGraph_t* g,
                                            const cudaGraphNode_t** deps,
                                            const cudaGraphEdgeData** edges, size_t* n) {
  RT_ENTER();
  return RT_CALL(StreamGetCaptureInfo, s, (CUstreamCaptureStatus*)st, (cuuint64_t*)id, g,
                 (const CUgraphNode**)deps, (const CUgraphEdgeData**)edges, n);
}
RT_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* st,
                                                 unsigned long long* id, cudaGraph_t* g,
                                                 const cudaGraphNode_t** deps,
                                                 const cudaGraphEdgeData** edges, size_t* n) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetCaptureInfo, s, (CUstreamCaptureStatus*)st, (cuuint64_t*)id, g,
                 (const CUgraphNode**)deps, (const CUgraphEdgeData**)edges, n);
}
RT_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int* flags) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetFlags, s, flags);
}
RT_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int* prio) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetPriority, s, prio);
}
RT_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(pt_EventRecordWithFlags, e, s, flags);
}
RT_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  RT_ENTER();
  return RT_CALL(ThreadExchangeStreamCaptureMode, (CUstreamCaptureMode*)mode);
}
RT_API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  RT_ENTER();
  return RT_CALL(LaunchHostFunc, s, fn, data);
}
RT_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) {
  RT_ENTER();
  return RT_CALL(pt_LaunchHostFunc, s, fn, data);
}

RT_API cudaError_t cudaEventCreate(cudaEvent_t* e) {
  RT_ENTER();
  return RT_CALL(EventCreate, e, CU_EVENT_DEFAULT);
}
RT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(EventCreate, e, flags);
}
RT_API cudaError_t cudaEventDestroy(cudaEvent_t e) {
  RT_ENTER();
  return RT_CALL(EventDestroy, e);
}
RT_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(EventRecord, e, s);
}
RT_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_EventRecord, e, s);
}
RT_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(EventRecordWithFlags, e, s, flags);
}
RT_API cudaError_t cudaEventQuery(cudaEvent_t e) {
  RT_ENTER();
  cudaError_t r = map_err(drv.EventQuery(e));
  return r == cudaErrorNotReady ? r : set_err(r);
}
RT_API cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  RT_ENTER();
  return RT_CALL(EventSynchronize, e);
}
RT_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  RT_ENTER();
  return RT_CALL(EventElapsedTime, ms, a, b);
}

/* ---- Graphs ---- */

static cudaError_t kernel_params(const struct cudaKernelNodeParams* p, CUDA_KERNEL_NODE_PARAMS* d) {
  if (p == NULL)
    return cudaErrorInvalidValue;
  CUfunction f;
  cudaError_t e = resolve_func(p->func, &f);
  if (e != cudaSuccess)
    return e;
  memset(d, 0, sizeof(*d));
  d->func = f;
  d->gridDimX = p->gridDim.x;
  d->gridDimY = p->gridDim.y;
  d->gridDimZ = p->gridDim.z;
  d->blockDimX = p->blockDim.x;
  d->blockDimY = p->blockDim.y;
  d->blockDimZ = p->blockDim.z;
  d->sharedMemBytes = p->sharedMemBytes;
  d->kernelParams = p->kernelParams;
  d->extra = p->extra;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphCreate(cudaGraph_t* g, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(GraphCreate, g, flags);
}
RT_API cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  RT_ENTER();
  return RT_CALL(GraphDestroy, g);
}
RT_API cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* n, cudaGraph_t g, const cudaGraphNode_t* deps,
                                          size_t ndeps, const struct cudaKernelNodeParams* p) {
  RT_ENTER();
  CUDA_KERNEL_NODE_PARAMS d;
  cudaError_t e = kernel_params(p, &d);
  if (e != cudaSuccess)
    return set_err(e);
  return RT_CALL(GraphAddKernelNode, n, g, deps, ndeps, &d);
}
RT_API cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  RT_ENTER();
  return RT_CALL(GraphGetNodes, g, nodes, n);
}
RT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* x, cudaGraph_t g, unsigned long long flags) {
  RT_ENTER();
  return RT_CALL(GraphInstantiate, x, g, flags);
}
RT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* x, cudaGraph_t g,
                                                 unsigned long long flags) {
  RT_ENTER();
  return RT_CALL(GraphInstantiate, x, g, flags);
}
RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(GraphLaunch, x, s);
}
RT_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t x, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_GraphLaunch, x, s);
}
RT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  RT_ENTER();
  return RT_CALL(GraphExecDestroy, x);
}
RT_API cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t n,
                                                    const struct cudaKernelNodeParams* p) {
  RT_ENTER();
  CUDA_KERNEL_NODE_PARAMS d;
  cudaError_t e = kernel_params(p, &d);
  if (e != cudaSuccess)
    return set_err(e);
  return RT_CALL(GraphExecKernelNodeSetParams, x, n, &d);
}
RT_API cudaError_t cudaGraphExecUpdate(cudaGraphExec_t x, cudaGraph_t g,
                                       cudaGraphExecUpdateResultInfo* info) {
  RT_ENTER();
  return RT_CALL(GraphExecUpdate, x, g, (CUgraphExecUpdateResultInfo*)info);
}

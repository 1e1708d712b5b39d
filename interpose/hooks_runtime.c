/* Runtime overrides: launches (cudaLaunchKernel, cudaLaunchKernelExC and the
 * __cudaLaunchKernel that CUDA 13 nvcc emits for <<<>>>), kernel registration,
 * cudaGetDriverEntryPoint[ByVersion], allocations, syncs, copies and memsets.
 *
 * DESIGN: runtime overrides are reached only as exported symbols (the dlsym
 * override hands these out for runtime names too), so each row has one function,
 * which calls the next definition (RTLD_NEXT, see real.c). The runtime then
 * calls the driver on this thread with the re-entry guard raised, so a launch
 * made here is counted once, as "runtime". Registration calls are written out
 * by hand: their results are void or a handle, not an error code. */
#include <string.h>

#include "allocmap.h"
#include "funcinfo.h"
#include "images.h"
#include "hooks_common.h"
#include "launch.h"

/* Function types, one per row. */
#define GRAPE_RT(name, base, ptds, kind, stream, params, args) \
  typedef cudaError_t (*pfn_##name) params;
#define GRAPE_RT0(name, base, ptds, kind) typedef cudaError_t (*pfn_##name)(void);
#include "hooks.def"

void* grape__route_entry(grape_slot_t slot, const char* symbol, void* p, int version, int ptds);

/* ---- Launches ---- */

static inline __attribute__((always_inline)) cudaError_t hook_cudaLaunchKernel(grape_route_t route, grape_hook_t h, int ptds,
                                                pfn_cudaLaunchKernel real, const void* func,
                                                dim3 g, dim3 b, void** args, size_t shm,
                                                cudaStream_t s) {
  (void)h;
  grape_launch_t l = {func, GRAPE_FN_RUNTIME, {g.x, g.y, g.z}, {b.x, b.y, b.z}, (uint32_t)shm,
                      s, ptds, args, NULL, 0, NULL, 0};
  if (grape__mode == GRAPE_MODE_GRAPH && grape__hold_launch(route, &l))
    return cudaSuccess;
  GRAPE_CALL(cudaError_t, real, (func, g, b, args, shm, s));
  if (r_ == cudaSuccess)
    grape__on_launch(route, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return r_;
}

static inline __attribute__((always_inline)) cudaError_t hook_cudaLaunchKernelExC(grape_route_t route, grape_hook_t h, int ptds,
                                                   pfn_cudaLaunchKernelExC real,
                                                   const cudaLaunchConfig_t* c, const void* func,
                                                   void** args) {
  (void)h;
  if (c == NULL)
    return real(c, func, args);
  grape_launch_t l = {func, GRAPE_FN_RUNTIME, {c->gridDim.x, c->gridDim.y, c->gridDim.z},
                      {c->blockDim.x, c->blockDim.y, c->blockDim.z}, (uint32_t)c->dynamicSmemBytes,
                      c->stream, ptds, args, NULL, 0, c->attrs,
                      c->attrs ? c->numAttrs * sizeof(*c->attrs) : 0};
  for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
    if (c->attrs[i].id == cudaLaunchAttributeCooperative && c->attrs[i].val.cooperative)
      l.flags |= GRAPE_SIG_COOPERATIVE;
  if (grape__mode == GRAPE_MODE_GRAPH && grape__hold_launch(route, &l))
    return cudaSuccess;
  GRAPE_CALL(cudaError_t, real, (c, func, args));
  if (r_ == cudaSuccess)
    grape__on_launch(route, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return r_;
}

/* A cooperative grid must fit on the device at once: never held; the region
 * leaves its known path here, then the launch is recorded. */
static inline __attribute__((always_inline)) cudaError_t hook_cudaLaunchCooperativeKernel(
    grape_route_t route, grape_hook_t h, int ptds, pfn_cudaLaunchCooperativeKernel real,
    const void* func, dim3 g, dim3 b, void** args, size_t shm, cudaStream_t s) {
  (void)h;
  grape_launch_t l = {func, GRAPE_FN_RUNTIME, {g.x, g.y, g.z}, {b.x, b.y, b.z}, (uint32_t)shm,
                      s, ptds, args, NULL, GRAPE_SIG_COOPERATIVE, NULL, 0};
  if (grape__mode == GRAPE_MODE_GRAPH)
    grape__hold_launch(route, &l);
  GRAPE_CALL(cudaError_t, real, (func, g, b, args, shm, s));
  if (r_ == cudaSuccess)
    grape__on_launch(route, &l);
  return r_;
}

GRAPE_HOOK_DEF(cudaError_t, __cudaGetKernel, (cudaKernel_t* k, const void* hostFun), (k, hostFun), ,
               if (r_ == cudaSuccess && k != NULL)
                   GRAPE_NO_REENTRY(grape__func_alias(*k, GRAPE_FN_RUNTIME, hostFun)))

/* ---- The program's own stream capture (see hooks_driver.c) ---- */

GRAPE_HOOK_DEF(cudaError_t, cudaStreamBeginCapture, (cudaStream_t s, enum cudaStreamCaptureMode mode),
               (s, mode), grape__flush_stream(grape__stream_key(s, ptds)),
               if (r_ == cudaSuccess) grape__capture_begun())
GRAPE_HOOK_DEF(cudaError_t, cudaStreamBeginCaptureToGraph,
               (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps,
                const cudaGraphEdgeData* data, size_t n, enum cudaStreamCaptureMode mode),
               (s, g, deps, data, n, mode), grape__flush_stream(grape__stream_key(s, ptds)),
               if (r_ == cudaSuccess) grape__capture_begun())
GRAPE_HOOK_DEF(cudaError_t, cudaStreamEndCapture, (cudaStream_t s, cudaGraph_t* g), (s, g),
               GRAPE_CAPTURE_END_BEFORE(s), GRAPE_CAPTURE_END_AFTER(s))

/* ---- Driver entry points ---- */

/* The entry point's wrapper for the route: per-thread default stream when the
 * flags ask for it, or when they leave it open and the call was a _ptsz one. */
static inline void* ep_route(const char* sym, void* p, int version, unsigned long long flags,
                             int ptds) {
  int pt = (flags & cudaEnablePerThreadDefaultStream) || (ptds && !(flags & cudaEnableLegacyStream));
  return grape__route_entry(GRAPE_SLOT_EP, sym, p, version, pt);
}

GRAPE_HOOK_DEF(cudaError_t, cudaGetDriverEntryPoint,
               (const char* sym, void** fp, unsigned long long flags,
                enum cudaDriverEntryPointQueryResult* st),
               (sym, fp, flags, st), ,
               if (r_ == cudaSuccess && fp != NULL) *fp = ep_route(sym, *fp, CUDART_VERSION, flags, ptds))
GRAPE_HOOK_DEF(cudaError_t, cudaGetDriverEntryPointByVersion,
               (const char* sym, void** fp, unsigned ver, unsigned long long flags,
                enum cudaDriverEntryPointQueryResult* st),
               (sym, fp, ver, flags, st), ,
               if (r_ == cudaSuccess && fp != NULL) *fp = ep_route(sym, *fp, (int)ver, flags, ptds))

/* ---- Allocations ---- */

#define RT_ALLOC_HOOK(base, kind, before, ...) GRAPE_ALLOC_HOOK(cudaError_t, base, kind, before, __VA_ARGS__)
#define RT_FREE_HOOK(base, before, ...) GRAPE_FREE_HOOK(cudaError_t, base, before, __VA_ARGS__)
RT_ALLOC_HOOK(cudaMalloc, GRAPE_ALLOC_DEVICE, GRAPE_FLUSH_NONE, (p, n), (void** p, size_t n), *p, n)
RT_ALLOC_HOOK(cudaMallocManaged, GRAPE_ALLOC_MANAGED, GRAPE_FLUSH_NONE, (p, n, fl),
              (void** p, size_t n, unsigned fl), *p, n)
RT_ALLOC_HOOK(cudaMallocAsync, GRAPE_ALLOC_ASYNC, GRAPE_FLUSH_STREAM(s), (p, n, s),
              (void** p, size_t n, cudaStream_t s), *p, n)
RT_ALLOC_HOOK(cudaMallocHost, GRAPE_ALLOC_HOST_PINNED, GRAPE_FLUSH_NONE, (p, n), (void** p, size_t n), *p, n)
RT_ALLOC_HOOK(cudaHostAlloc, GRAPE_ALLOC_HOST_PINNED, GRAPE_FLUSH_NONE, (p, n, fl),
              (void** p, size_t n, unsigned fl), *p, n)
RT_ALLOC_HOOK(cudaHostRegister, GRAPE_ALLOC_HOST_REGISTERED, GRAPE_FLUSH_NONE, (p, n, fl),
              (void* p, size_t n, unsigned fl), p, n)
RT_FREE_HOOK(cudaFree, GRAPE_FLUSH_ALL, (p), (void* p), p)
RT_FREE_HOOK(cudaFreeAsync, GRAPE_FLUSH_STREAM(s), (p, s), (void* p, cudaStream_t s), p)
RT_FREE_HOOK(cudaFreeHost, GRAPE_FLUSH_ALL, (p), (void* p), p)
RT_FREE_HOOK(cudaHostUnregister, GRAPE_FLUSH_ALL, (p), (void* p), p)

/* ---- Copies and memsets on a stream ---- */

/* True when both ends are device memory the shim knows of (cudaMemcpyDefault). */
static int both_device(const void* dst, const void* src) {
  grape_alloc_t a;
  return grape__alloc_find((uint64_t)(uintptr_t)dst, &a) == 0 && a.kind <= GRAPE_ALLOC_MAPPED &&
         grape__alloc_find((uint64_t)(uintptr_t)src, &a) == 0 && a.kind <= GRAPE_ALLOC_MAPPED;
}

static inline cudaError_t hook_cudaMemcpyAsync(grape_route_t route, grape_hook_t h, int ptds,
                                               pfn_cudaMemcpyAsync real, void* dst,
                                               const void* src, size_t n,
                                               enum cudaMemcpyKind kind, cudaStream_t s) {
  (void)route;
  if (!grape__active())
    return real(dst, src, n, kind, s);
  GRAPE_COUNT(api_calls[h]);
  /* A device-to-device copy is an op of the region; one that touches host
   * memory is a point where the host sees results: it ends the region. */
  int d2d = kind == cudaMemcpyDeviceToDevice || (kind == cudaMemcpyDefault && both_device(dst, src));
  grape_memop_t m = {.kind = GRAPE_OP_MEMCPY,
                     .p.cpy = {(uint64_t)(uintptr_t)dst, (uint64_t)(uintptr_t)src, n},
                     .stream = s, .ptds = ptds};
  if (!d2d)
    grape__flush_stream(grape__stream_key(s, ptds));
  else if (grape__mode == GRAPE_MODE_GRAPH && grape__hold_memop(&m))
    return cudaSuccess;
  GRAPE_CALL(cudaError_t, real, (dst, src, n, kind, s));
  if (d2d && r_ == cudaSuccess)
    GRAPE_NO_REENTRY(grape__on_memop(&m));
  if (!d2d)
    GRAPE_COUNT(submissions);
  return r_;
}

static inline cudaError_t hook_cudaMemsetAsync(grape_route_t route, grape_hook_t h, int ptds,
                                               pfn_cudaMemsetAsync real, void* p, int v, size_t n,
                                               cudaStream_t s) {
  (void)route;
  if (!grape__active())
    return real(p, v, n, s);
  GRAPE_COUNT(api_calls[h]);
  grape_memop_t m = {.kind = GRAPE_OP_MEMSET,
                     .p.set = {(uint64_t)(uintptr_t)p, (uint32_t)(unsigned char)v, 1, n},
                     .stream = s, .ptds = ptds};
  if (grape__mode == GRAPE_MODE_GRAPH && grape__hold_memop(&m))
    return cudaSuccess;
  GRAPE_CALL(cudaError_t, real, (p, v, n, s));
  if (r_ == cudaSuccess)
    GRAPE_NO_REENTRY(grape__on_memop(&m));
  return r_;
}

/* ---- Streams, limits, teardown ---- */

GRAPE_HOOK_DEF(cudaError_t, cudaStreamDestroy, (cudaStream_t s), (s),
               grape__stream_destroyed(grape__stream_key(s, 0)), )
GRAPE_HOOK_DEF(cudaError_t, cudaFuncSetAttribute, (const void* f, enum cudaFuncAttribute a, int v),
               (f, a, v), , if (r_ == cudaSuccess) grape__limits_forget(f))
GRAPE_HOOK_DEF(cudaError_t, cudaKernelSetAttributeForDevice,
               (cudaKernel_t k, enum cudaFuncAttribute a, int v, int d), (k, a, v, d), ,
               if (r_ == cudaSuccess) grape__limits_forget(k))
GRAPE_HOOK_DEF(cudaError_t, cudaLibraryUnload, (cudaLibrary_t lib), (lib), grape__flush_all(),
               if (r_ == cudaSuccess) GRAPE_NO_REENTRY(grape__func_forget_image(lib)))

/* ---- Generated: bodies and exported overrides ---- */

#define GRAPE_RT(name, base, ptds, kind, stream, params, args) \
  GRAPE_GEN_BODY_##kind(cudaError_t, name, base, ptds, stream, params, args)
#define GRAPE_RT0(name, base, ptds, kind) GRAPE_GEN_BODY0_##kind(cudaError_t, name)
#include "hooks.def"

#define GRAPE_GEN_RT_ENTRY(name, params, args) \
  GRAPE_GEN_ENTRY(GRAPE_EXPORT, cudaError_t, name, params, args, name, GRAPE_SLOT_EXPORT, GRAPE_ROUTE_RUNTIME)
#define GRAPE_GEN_RT_CUSTOM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_PLAIN GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_SYNC_ALL GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_SYNC_STREAM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_WAIT_ALL GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_WAIT_STREAM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_REPORT GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_MANUAL(name, params, args)

#define GRAPE_GEN_RT0_ENTRY(name) \
  GRAPE_GEN_ENTRY0(GRAPE_EXPORT, cudaError_t, name, name, GRAPE_SLOT_EXPORT, GRAPE_ROUTE_RUNTIME)
#define GRAPE_GEN_RT0_PLAIN GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_SYNC_ALL GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_WAIT_ALL GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_REPORT GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_MANUAL(name)
#define GRAPE_RT(name, base, ptds, kind, stream, params, args) \
  GRAPE_GEN_RT_##kind(name, params, args)
#define GRAPE_RT0(name, base, ptds, kind) GRAPE_GEN_RT0_##kind(name)
#include "hooks.def"

/* ---- Calls without arguments (hooks.def: MANUAL) ---- */

/* The thread's last error: an error met while submitting held work is
 * returned here too (taken, or only peeked); neither call flushes. */
GRAPE_EXPORT cudaError_t cudaGetLastError(void) {
  pfn_cudaGetLastError real = GRAPE_REAL_AT(cudaGetLastError, GRAPE_SLOT_EXPORT);
  if (real == NULL)
    return GRAPE_MISSING_cudaError_t;
  GRAPE_HOOK_BODY(cudaError_t, GRAPE_HOOK_cudaGetLastError, real, (), , GRAPE_AFTER_REPORT)
}

GRAPE_EXPORT cudaError_t cudaPeekAtLastError(void) {
  pfn_cudaPeekAtLastError real = GRAPE_REAL_AT(cudaPeekAtLastError, GRAPE_SLOT_EXPORT);
  if (real == NULL)
    return GRAPE_MISSING_cudaError_t;
  GRAPE_HOOK_BODY(cudaError_t, GRAPE_HOOK_cudaPeekAtLastError, real, (), ,
                  r_ = (cudaError_t)grape__pending_take((int)r_, 1))
}

GRAPE_EXPORT cudaError_t cudaDeviceReset(void) {
  pfn_cudaDeviceReset real = GRAPE_REAL_AT(cudaDeviceReset, GRAPE_SLOT_EXPORT);
  if (real == NULL)
    return GRAPE_MISSING_cudaError_t;
  GRAPE_HOOK_BODY(cudaError_t, GRAPE_HOOK_cudaDeviceReset, real, (), grape__graphs_drop(), )
}

/* ---- Registration (written out: void and handle results) ---- */

typedef void** (*pfn_register_fatbin)(void*);
typedef void (*pfn_fatbin_handle)(void**);
typedef void (*pfn_register_function)(void**, const char*, char*, const char*, int, uint3*, uint3*,
                                      dim3*, dim3*, int*);

GRAPE_EXPORT void** __cudaRegisterFatBinary(void* fatCubin) {
  pfn_register_fatbin real =
      (pfn_register_fatbin)grape__real_export(GRAPE_HOOK___cudaRegisterFatBinary);
  if (real == NULL)
    return NULL;
  if (!grape__active())
    return real(fatCubin);
  GRAPE_COUNT(api_calls[GRAPE_HOOK___cudaRegisterFatBinary]);
  void** handle;
  GRAPE_NO_REENTRY(handle = real(fatCubin));
  if (handle != NULL)
    GRAPE_NO_REENTRY(grape__image_register(handle, fatCubin));
  return handle;
}

GRAPE_EXPORT void __cudaRegisterFatBinaryEnd(void** handle) {
  pfn_fatbin_handle real = (pfn_fatbin_handle)grape__real_export(GRAPE_HOOK___cudaRegisterFatBinaryEnd);
  if (real == NULL)
    return;
  if (grape__active())
    GRAPE_COUNT(api_calls[GRAPE_HOOK___cudaRegisterFatBinaryEnd]);
  GRAPE_NO_REENTRY(real(handle));
}

GRAPE_EXPORT void __cudaUnregisterFatBinary(void** handle) {
  pfn_fatbin_handle real = (pfn_fatbin_handle)grape__real_export(GRAPE_HOOK___cudaUnregisterFatBinary);
  if (real == NULL)
    return;
  int active = grape__active();
  if (active) {
    GRAPE_COUNT(api_calls[GRAPE_HOOK___cudaUnregisterFatBinary]);
    grape__flush_all();
  }
  GRAPE_NO_REENTRY(real(handle));
  if (active)
    GRAPE_NO_REENTRY(grape__func_forget_image(handle));
}

GRAPE_EXPORT void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun,
                                         const char* deviceName, int thread_limit, uint3* tid,
                                         uint3* bid, dim3* bDim, dim3* gDim, int* wSize) {
  pfn_register_function real =
      (pfn_register_function)grape__real_export(GRAPE_HOOK___cudaRegisterFunction);
  if (real == NULL)
    return;
  int active = grape__active();
  GRAPE_NO_REENTRY(real(handle, hostFun, deviceFun, deviceName, thread_limit, tid, bid, bDim, gDim, wSize));
  if (active) {
    GRAPE_COUNT(api_calls[GRAPE_HOOK___cudaRegisterFunction]);
    GRAPE_NO_REENTRY(grape__func_register(hostFun, GRAPE_FN_RUNTIME, deviceFun, handle));
  }
}

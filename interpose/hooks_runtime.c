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
#include "capture.h"
#include "funcattrs.h"
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
  grape_fast_t fa_ = {NULL, NULL};
  if (grape__hit_path_on() &&
      grape__hold_hit(route, func, GRAPE_FN_RUNTIME, g.x, g.y, g.z, b.x, b.y, b.z, (uint32_t)shm,
                      s, ptds, args, &fa_) == GRAPE_FAST_HELD)
    return cudaSuccess;
  grape_launch_t l = {func, GRAPE_FN_RUNTIME, {g.x, g.y, g.z}, {b.x, b.y, b.z}, (uint32_t)shm,
                      s, ptds, args, NULL, 0, NULL, 0};
  GRAPE_TL_START(tl_, h);
  if (grape__mode == GRAPE_MODE_GRAPH && fa_.s == NULL && grape__hold_launch(route, &l)) {
    if (GRAPE_TL_ON(tl_))
      grape__tl_launch_end(&tl_, &l, 1, 1);
    return cudaSuccess;
  }
  cudaError_t r;
  if (GRAPE_TL_ON(tl_))
    grape__tl_dev_begin(&tl_, l.stream, ptds);
  uint64_t t0_ = grape__launch_time_start();
  GRAPE_CALL_NO_WAIT(r = real(func, g, b, args, shm, s));
  if (t0_ != 0)
    grape__launch_time_end(t0_);
  if (GRAPE_TL_ON(tl_))
    grape__tl_launch_end(&tl_, &l, r == cudaSuccess, 0);
  if (r == cudaSuccess)
    grape__launched(route, &fa_, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return GRAPE_SEEN(r);
}

static inline __attribute__((always_inline)) cudaError_t hook_cudaLaunchKernelExC(grape_route_t route, grape_hook_t h, int ptds,
                                                   pfn_cudaLaunchKernelExC real,
                                                   const cudaLaunchConfig_t* c, const void* func,
                                                   void** args) {
  (void)h;
  if (c == NULL)
    return real(c, func, args);
  grape_fast_t fa_ = {NULL, NULL};
  if (grape__hit_path_on() && (c->attrs == NULL || c->numAttrs == 0) &&
      grape__hold_hit(route, func, GRAPE_FN_RUNTIME, c->gridDim.x, c->gridDim.y, c->gridDim.z,
                      c->blockDim.x, c->blockDim.y, c->blockDim.z, (uint32_t)c->dynamicSmemBytes,
                      c->stream, ptds, args, &fa_) == GRAPE_FAST_HELD)
    return cudaSuccess;
  grape_launch_t l = {func, GRAPE_FN_RUNTIME, {c->gridDim.x, c->gridDim.y, c->gridDim.z},
                      {c->blockDim.x, c->blockDim.y, c->blockDim.z}, (uint32_t)c->dynamicSmemBytes,
                      c->stream, ptds, args, NULL, 0, c->attrs,
                      c->attrs ? c->numAttrs * sizeof(*c->attrs) : 0};
  for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
    if (c->attrs[i].id == cudaLaunchAttributeCooperative && c->attrs[i].val.cooperative)
      l.flags |= GRAPE_SIG_COOPERATIVE;
  GRAPE_TL_START(tl_, h);
  if (grape__mode == GRAPE_MODE_GRAPH && fa_.s == NULL && grape__hold_launch(route, &l)) {
    if (GRAPE_TL_ON(tl_))
      grape__tl_launch_end(&tl_, &l, 1, 1);
    return cudaSuccess;
  }
  cudaError_t r;
  if (GRAPE_TL_ON(tl_))
    grape__tl_dev_begin(&tl_, l.stream, ptds);
  uint64_t t0_ = grape__launch_time_start();
  GRAPE_CALL_NO_WAIT(r = real(c, func, args));
  if (t0_ != 0)
    grape__launch_time_end(t0_);
  if (GRAPE_TL_ON(tl_))
    grape__tl_launch_end(&tl_, &l, r == cudaSuccess, 0);
  if (r == cudaSuccess)
    grape__launched(route, &fa_, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return GRAPE_SEEN(r);
}

/* A cooperative grid must fit on the device at once: never held; the region
 * leaves its known path here, then the launch is recorded. */
static inline __attribute__((always_inline)) cudaError_t hook_cudaLaunchCooperativeKernel(
    grape_route_t route, grape_hook_t h, int ptds, pfn_cudaLaunchCooperativeKernel real,
    const void* func, dim3 g, dim3 b, void** args, size_t shm, cudaStream_t s) {
  (void)h;
  grape_launch_t l = {func, GRAPE_FN_RUNTIME, {g.x, g.y, g.z}, {b.x, b.y, b.z}, (uint32_t)shm,
                      s, ptds, args, NULL, GRAPE_SIG_COOPERATIVE, NULL, 0};
  GRAPE_TL_START(tl_, h);
  if (grape__mode == GRAPE_MODE_GRAPH)
    grape__hold_launch(route, &l);
  cudaError_t r;
  if (GRAPE_TL_ON(tl_))
    grape__tl_dev_begin(&tl_, l.stream, ptds);
  GRAPE_CALL_NO_WAIT(r = real(func, g, b, args, shm, s));
  if (GRAPE_TL_ON(tl_))
    grape__tl_launch_end(&tl_, &l, r == cudaSuccess, 0);
  if (r == cudaSuccess)
    grape__on_launch(route, &l);
  return GRAPE_SEEN(r);
}

GRAPE_HOOK_DEF(cudaError_t, __cudaGetKernel, (cudaKernel_t* k, const void* hostFun), (k, hostFun),
               GRAPE_NOTHING, grape__aliased(k ? *k : NULL, GRAPE_FN_RUNTIME, hostFun))

/* ---- The program's own stream capture (see hooks_driver.c) ---- */

GRAPE_HOOK_DEF(cudaError_t, cudaStreamBeginCapture, (cudaStream_t s, enum cudaStreamCaptureMode mode),
               (s, mode), grape__flush_stream_of(s, ptds), grape__capture_begun())
GRAPE_HOOK_DEF(cudaError_t, cudaStreamBeginCaptureToGraph,
               (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t* deps,
                const cudaGraphEdgeData* data, size_t n, enum cudaStreamCaptureMode mode),
               (s, g, deps, data, n, mode), grape__flush_stream_of(s, ptds), grape__capture_begun())
GRAPE_CAPTURE_END_HOOK(cudaError_t, cudaStreamEndCapture, cudaStream_t, cudaGraph_t)

/* ---- Driver entry points ---- */

/* The entry point *fp found for sym becomes the wrapper of its row for this
 * route: per-thread default stream when the flags ask for it, or when they
 * leave it open and the call was a _ptsz one. */
static inline void ep_route(const char* sym, void** fp, int version, unsigned long long flags,
                            int ptds) {
  int pt = (flags & cudaEnablePerThreadDefaultStream) || (ptds && !(flags & cudaEnableLegacyStream));
  if (fp != NULL)
    *fp = grape__route_entry(GRAPE_SLOT_EP, sym, *fp, version, pt);
}

GRAPE_HOOK_DEF(cudaError_t, cudaGetDriverEntryPoint,
               (const char* sym, void** fp, unsigned long long flags,
                enum cudaDriverEntryPointQueryResult* st),
               (sym, fp, flags, st), GRAPE_NOTHING, ep_route(sym, fp, CUDART_VERSION, flags, ptds))
GRAPE_HOOK_DEF(cudaError_t, cudaGetDriverEntryPointByVersion,
               (const char* sym, void** fp, unsigned ver, unsigned long long flags,
                enum cudaDriverEntryPointQueryResult* st),
               (sym, fp, ver, flags, st), GRAPE_NOTHING, ep_route(sym, fp, (int)ver, flags, ptds))

/* ---- Allocations ---- */

GRAPE_ALLOC_HOOK(cudaError_t, cudaMalloc, (void** p, size_t n), (p, n), GRAPE_NOTHING,
                 GRAPE_ALLOC_DEVICE, *p, n)
GRAPE_ALLOC_HOOK(cudaError_t, cudaMallocManaged, (void** p, size_t n, unsigned fl), (p, n, fl),
                 GRAPE_NOTHING, GRAPE_ALLOC_MANAGED, *p, n)
GRAPE_ALLOC_HOOK(cudaError_t, cudaMallocAsync, (void** p, size_t n, cudaStream_t s), (p, n, s),
                 grape__flush_stream_of(s, ptds), GRAPE_ALLOC_ASYNC, *p, n)
GRAPE_ALLOC_HOOK(cudaError_t, cudaMallocFromPoolAsync,
                 (void** p, size_t n, cudaMemPool_t pool, cudaStream_t s), (p, n, pool, s),
                 grape__flush_stream_of(s, ptds), GRAPE_ALLOC_ASYNC, *p, n)
GRAPE_ALLOC_HOOK(cudaError_t, cudaMallocPitch, (void** p, size_t* pitch, size_t width, size_t rows),
                 (p, pitch, width, rows), GRAPE_NOTHING, GRAPE_ALLOC_DEVICE, *p, *pitch * rows)
GRAPE_ALLOC_HOOK(cudaError_t, cudaMalloc3D, (struct cudaPitchedPtr* pp, struct cudaExtent e), (pp, e),
                 GRAPE_NOTHING, GRAPE_ALLOC_DEVICE, pp->ptr, pp->pitch * e.height * e.depth)
GRAPE_ALLOC_HOOK(cudaError_t, cudaMallocHost, (void** p, size_t n), (p, n), GRAPE_NOTHING,
                 GRAPE_ALLOC_HOST_PINNED, *p, n)
GRAPE_ALLOC_HOOK(cudaError_t, cudaHostAlloc, (void** p, size_t n, unsigned fl), (p, n, fl),
                 GRAPE_NOTHING, GRAPE_ALLOC_HOST_PINNED, *p, n)
GRAPE_ALLOC_HOOK(cudaError_t, cudaHostRegister, (void* p, size_t n, unsigned fl), (p, n, fl),
                 GRAPE_NOTHING, GRAPE_ALLOC_HOST_REGISTERED, p, n)
GRAPE_FREE_HOOK(cudaError_t, cudaFree, (void* p), (p), grape__flush_all(), p)
GRAPE_FREE_HOOK(cudaError_t, cudaFreeAsync, (void* p, cudaStream_t s), (p, s),
                grape__flush_stream_of(s, ptds), p)
GRAPE_FREE_HOOK(cudaError_t, cudaFreeHost, (void* p), (p), grape__flush_all(), p)
GRAPE_FREE_HOOK(cudaError_t, cudaHostUnregister, (void* p), (p), grape__flush_all(), p)

/* ---- Copies and memsets on a stream ---- */

/* True when both ends are device memory the shim knows of (cudaMemcpyDefault). */
static int both_device(const void* dst, const void* src) {
  return grape__is_device_mem(dst) && grape__is_device_mem(src);
}

static inline cudaError_t hook_cudaMemcpyAsync(grape_route_t route, grape_hook_t h, int ptds,
                                               pfn_cudaMemcpyAsync real, void* dst,
                                               const void* src, size_t n,
                                               enum cudaMemcpyKind kind, cudaStream_t s) {
  (void)route;
  GRAPE_COUNT(api_calls[h]);
  /* A device-to-device copy, or one from device memory into page-locked
   * host memory, is an op of the region; any other copy that touches host
   * memory is a point where the host sees results: it ends the region. */
  int d2d = kind == cudaMemcpyDeviceToDevice || (kind == cudaMemcpyDefault && both_device(dst, src));
  int to_pinned = !d2d && (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDefault) &&
                  grape__copy_to_pinned((uintptr_t)dst, (uintptr_t)src, n);
  grape_memop_t m = to_pinned ? grape__memcpy_to_host_op((uintptr_t)dst, (uintptr_t)src, n, s, ptds)
                              : grape__memcpy_op((uintptr_t)dst, (uintptr_t)src, n, s, ptds);
  GRAPE_COPY_HOOK_REST(cudaError_t, d2d || to_pinned, m,
                       d2d ? GRAPE_TRACE_DIR_DTOD : grape__copy_dir_rt(dst, src, kind),
                       real(dst, src, n, kind, s))
}

GRAPE_MEMOP_HOOK(cudaError_t, cudaMemsetAsync, (void* p, int v, size_t n, cudaStream_t s), (p, v, n, s),
                 grape__memset_op((uintptr_t)p, (unsigned char)v, 1, n, s, ptds))

/* ---- Streams, limits, teardown ---- */

GRAPE_HOOK_DEF(cudaError_t, cudaStreamDestroy, (cudaStream_t s), (s), grape__stream_gone(s),
               GRAPE_NOTHING)
GRAPE_HOOK_DEF(cudaError_t, cudaFuncSetAttribute, (const void* f, enum cudaFuncAttribute a, int v),
               (f, a, v), grape__func_attr_setting(f, a, v), grape__func_attr_set(f, a, v))
GRAPE_HOOK_DEF(cudaError_t, cudaKernelSetAttributeForDevice,
               (cudaKernel_t k, enum cudaFuncAttribute a, int v, int d), (k, a, v, d),
               grape__func_attr_setting(k, a, v), grape__func_attr_set(k, a, v))
GRAPE_HOOK_DEF(cudaError_t, cudaFuncSetCacheConfig, (const void* f, enum cudaFuncCache c), (f, c),
               grape__func_attr_setting(f, GRAPE_FATTR_CACHE_CONFIG, c),
               grape__func_attr_set(f, GRAPE_FATTR_CACHE_CONFIG, c))
GRAPE_HOOK_DEF(cudaError_t, cudaFuncSetSharedMemConfig, (const void* f, enum cudaSharedMemConfig c),
               (f, c), grape__func_attr_setting(f, GRAPE_FATTR_SHMEM_CONFIG, c),
               grape__func_attr_set(f, GRAPE_FATTR_SHMEM_CONFIG, c))
GRAPE_HOOK_DEF(cudaError_t, cudaLibraryUnload, (cudaLibrary_t lib), (lib), grape__flush_all(),
               grape__image_unloaded(lib))

/* ---- Profiler control: capture ranges (GRAPE_CAPTURE, capture.c) ---- */

static inline cudaError_t hook_cudaProfilerStart(pfn_cudaProfilerStart real) {
  cudaError_t r;
  GRAPE_NO_REENTRY(r = real());
  grape__capture_profiler(1);
  return r;
}

static inline cudaError_t hook_cudaProfilerStop(pfn_cudaProfilerStop real) {
  grape__capture_profiler(0);
  cudaError_t r;
  GRAPE_NO_REENTRY(r = real());
  return r;
}

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
#define GRAPE_GEN_RT_COPY_ALL GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_COPY_STREAM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_MEMSET_ALL GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_MEMSET_STREAM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_GRAPH_STREAM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_GRAPH_MADE GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_GRAPH_MADE_ALL GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_WAIT_STREAM GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_REPORT GRAPE_GEN_RT_ENTRY
#define GRAPE_GEN_RT_MANUAL(name, params, args)

#define GRAPE_GEN_RT0_ENTRY(name) \
  GRAPE_GEN_ENTRY0(GRAPE_EXPORT, cudaError_t, name, name, GRAPE_SLOT_EXPORT, GRAPE_ROUTE_RUNTIME)
#define GRAPE_GEN_RT0_PLAIN GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_CUSTOM GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_SYNC_ALL GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_WAIT_ALL GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_REPORT GRAPE_GEN_RT0_ENTRY
#define GRAPE_GEN_RT0_MANUAL(name)
#define GRAPE_RT(name, base, ptds, kind, stream, params, args) \
  GRAPE_GEN_RT_##kind(name, params, args)
#define GRAPE_RT0(name, base, ptds, kind) GRAPE_GEN_RT0_##kind(name)
#include "hooks.def"

/* ---- Calls without arguments, written out (api.txt: manual) ---- */

/* The exported override name(void): a generated entry's shape, with the
 * named function before() called ahead of the real call and the real result
 * passed through result(). */
#define RT0_OVERRIDE(name, before, result)                    \
  static inline cudaError_t rt0_body_##name(pfn_##name real) { \
    GRAPE_COUNT(api_calls[GRAPE_HOOK_##name]);                \
    before();                                                 \
    cudaError_t r;                                            \
    GRAPE_NO_REENTRY(r = real());                             \
    return (cudaError_t)grape__seen(result((int)r));          \
  }                                                           \
  GRAPE_EXPORT cudaError_t name(void) {                       \
    pfn_##name real = GRAPE_REAL_AT(name, GRAPE_SLOT_EXPORT); \
    if (real == NULL)                                         \
      return GRAPE_MISSING_cudaError_t;                       \
    if (!grape__active())                                     \
      return real();                                          \
    GRAPE_TIMED_BODY(cudaError_t, name, rt0_body_##name(real)); \
  }
static void nothing_first(void) {}
static int result_unchanged(int r) { return r; }
static int error_peeked(int r) { return grape__pending_take(r, 1); }

/* The thread's last error: an error met while submitting held work is
 * returned here too (taken, or only peeked); neither call flushes. */
RT0_OVERRIDE(cudaGetLastError, nothing_first, grape__report_async)
RT0_OVERRIDE(cudaPeekAtLastError, nothing_first, error_peeked)
/* A reset destroys every graph of the device: the shim's executables go first. */
RT0_OVERRIDE(cudaDeviceReset, grape__graphs_drop, result_unchanged)

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
    grape__image_unloaded(handle);
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

/* Driver overrides: exported cu* functions, the wrappers handed out by dlsym,
 * cuGetProcAddress and cudaGetDriverEntryPoint, and the dlsym override itself.
 *
 * DESIGN: every row of hooks.def becomes four functions (exported override and
 * three route wrappers) around one body; see hooks.h for the routes. The
 * routing calls (dlsym, cuGetProcAddress[_v2]) call the real function with the
 * caller's arguments unchanged (version and flags included), then swap the
 * result for the wrapper of the matching row, which calls exactly the pointer
 * the real call returned. A request for "cuGetProcAddress" itself gets the
 * shim's own, so later lookups stay visible. While a hook is running on this
 * thread (the runtime resolving the driver inside a runtime override) or in
 * off mode, everything is handed back unwrapped. */
#include <dlfcn.h>
#include <string.h>

#include "allocmap.h"
#include "capture.h"
#include "cublas.h"
#include "funcattrs.h"
#include "funcinfo.h"
#include "images.h"
#include "grape/cubin.h"
#include "hooks_common.h"
#include "launch.h"

/* Function types, one per row. */
#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) \
  typedef ret (*pfn_##name) params;
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) typedef ret (*pfn_##name)(void);
#include "hooks.def"

/* ---- Entry-point routing ---- */

/* What cuGetProcAddress (slot GPA) or cudaGetDriverEntryPoint (slot EP) should
 * hand back for symbol, given the real result p. */
void* grape__route_entry(grape_slot_t slot, const char* symbol, void* p, int version, int ptds) {
  if (p == NULL || symbol == NULL)
    return p;
  if (strcmp(symbol, "cuGetProcAddress") == 0)
    return version >= 12000 ? (void*)cuGetProcAddress_v2 : (void*)cuGetProcAddress;
  return grape__wrap(slot, grape__hook_by_gpa(symbol, version, ptds), p);
}

/* Both cuGetProcAddress forms: the real lookup, its result swapped for the
 * matching wrapper. Passing through, the hook still never hands back the
 * shim's own export, so that the caller does not pay for a second trip
 * through the shim. */
#define GPA_HOOK(name, params, args)                                                      \
  static inline CUresult hook_##name(grape_route_t route, grape_hook_t h, int ptds,       \
                                     pfn_##name real, GRAPE_UNPAREN params) {             \
    (void)route;                                                                          \
    (void)ptds;                                                                           \
    CUresult r;                                                                           \
    if (!grape__active()) {                                                               \
      r = real args;                                                                      \
      if (r == CUDA_SUCCESS && pfn != NULL && *pfn != NULL)                               \
        *pfn = grape__unown(*pfn);                                                        \
      return r;                                                                           \
    }                                                                                     \
    GRAPE_COUNT(api_calls[h]);                                                            \
    GRAPE_NO_REENTRY(r = real args);                                                      \
    if (r == CUDA_SUCCESS && pfn != NULL)                                                 \
      *pfn = grape__route_entry(GRAPE_SLOT_GPA, symbol, *pfn, cudaVersion,                \
                                (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0); \
    return r;                                                                             \
  }
GPA_HOOK(cuGetProcAddress, (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags),
         (symbol, pfn, cudaVersion, flags))
GPA_HOOK(cuGetProcAddress_v2,
         (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
          CUdriverProcAddressQueryResult* symbolStatus),
         (symbol, pfn, cudaVersion, flags, symbolStatus))

/* Export tables are passed through; at debug level their ids are logged. */
static void log_export_table(const CUuuid* id) {
  if (id == NULL || grape__log_level() < GRAPE_LOG_DEBUG)
    return;
  const unsigned char* u = (const unsigned char*)id->bytes;
  grape_log_debug("cuGetExportTable %02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x"
                  " (passed through)",
                  u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
                  u[13], u[14], u[15]);
}

GRAPE_HOOK_DEF(CUresult, cuGetExportTable, (const void** table, const CUuuid* id), (table, id),
               log_export_table(id), GRAPE_NOTHING)

/* ---- Launches ---- */

static inline __attribute__((always_inline)) CUresult hook_cuLaunchKernel(grape_route_t route, grape_hook_t h, int ptds,
                                           pfn_cuLaunchKernel real, CUfunction f, unsigned gx,
                                           unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                           unsigned bz, unsigned shm, CUstream s, void** params,
                                           void** extra) {
  (void)h;   /* the caller checked grape__active() */
  grape_fast_t fa_ = {NULL, NULL};
  if (grape__hit_path_on() && extra == NULL &&
      grape__hold_hit(route, f, GRAPE_FN_FUNCTION, gx, gy, gz, bx, by, bz, shm, s, ptds, params, &fa_) == GRAPE_FAST_HELD)
    return CUDA_SUCCESS;
  grape_launch_t l = {f, GRAPE_FN_FUNCTION, {gx, gy, gz}, {bx, by, bz}, shm, s, ptds,
                      params, extra, 0, NULL, 0};
  GRAPE_TL_START(tl_, h);
  if (grape__mode == GRAPE_MODE_GRAPH && fa_.s == NULL && grape__hold_launch(route, &l)) {
    if (GRAPE_TL_ON(tl_))
      grape__tl_launch_end(&tl_, &l, 1, 1);
    return CUDA_SUCCESS;
  }
  CUresult r;
  if (GRAPE_TL_ON(tl_))
    grape__tl_dev_begin(&tl_, l.stream, ptds);
  uint64_t t0_ = grape__launch_time_start();
  GRAPE_CALL_NO_WAIT(r = real(f, gx, gy, gz, bx, by, bz, shm, s, params, extra));
  if (t0_ != 0)
    grape__launch_time_end(t0_);
  if (GRAPE_TL_ON(tl_))
    grape__tl_launch_end(&tl_, &l, r == CUDA_SUCCESS, 0);
  if (r == CUDA_SUCCESS)
    grape__launched(route, &fa_, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return GRAPE_SEEN(r);
}

static inline __attribute__((always_inline)) CUresult hook_cuLaunchCooperativeKernel(grape_route_t route, grape_hook_t h,
                                                      int ptds, pfn_cuLaunchCooperativeKernel real,
                                                      CUfunction f, unsigned gx, unsigned gy,
                                                      unsigned gz, unsigned bx, unsigned by,
                                                      unsigned bz, unsigned shm, CUstream s,
                                                      void** params) {
  (void)h;   /* the caller checked grape__active() */
  /* Never held (a cooperative grid must fit on the device at once), so the
   * region leaves its known path here. */
  grape_launch_t l = {f, GRAPE_FN_FUNCTION, {gx, gy, gz}, {bx, by, bz}, shm, s, ptds,
                      params, NULL, GRAPE_SIG_COOPERATIVE, NULL, 0};
  GRAPE_TL_START(tl_, h);
  if (grape__mode == GRAPE_MODE_GRAPH)
    grape__hold_launch(route, &l);
  CUresult r;
  if (GRAPE_TL_ON(tl_))
    grape__tl_dev_begin(&tl_, l.stream, ptds);
  GRAPE_CALL_NO_WAIT(r = real(f, gx, gy, gz, bx, by, bz, shm, s, params));
  if (GRAPE_TL_ON(tl_))
    grape__tl_launch_end(&tl_, &l, r == CUDA_SUCCESS, 0);
  if (r == CUDA_SUCCESS)
    grape__on_launch(route, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return GRAPE_SEEN(r);
}

static inline __attribute__((always_inline)) CUresult hook_cuLaunchKernelEx(grape_route_t route, grape_hook_t h, int ptds,
                                             pfn_cuLaunchKernelEx real, const CUlaunchConfig* c,
                                             CUfunction f, void** params, void** extra) {
  if (c == NULL)
    return real(c, f, params, extra);
  (void)h;
  grape_fast_t fa_ = {NULL, NULL};
  if (grape__hit_path_on() && extra == NULL &&
      (c->attrs == NULL || c->numAttrs == 0) &&
      grape__hold_hit(route, f, GRAPE_FN_FUNCTION, c->gridDimX, c->gridDimY, c->gridDimZ,
                      c->blockDimX, c->blockDimY, c->blockDimZ, c->sharedMemBytes, c->hStream,
                      ptds, params, &fa_) == GRAPE_FAST_HELD)
    return CUDA_SUCCESS;
  grape_launch_t l = {f, GRAPE_FN_FUNCTION, {c->gridDimX, c->gridDimY, c->gridDimZ},
                      {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
                      c->hStream, ptds, params, extra, 0, c->attrs,
                      c->attrs ? c->numAttrs * sizeof(*c->attrs) : 0};
  for (unsigned i = 0; c->attrs && i < c->numAttrs; i++)
    if (c->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && c->attrs[i].value.cooperative)
      l.flags |= GRAPE_SIG_COOPERATIVE;
  GRAPE_TL_START(tl_, h);
  if (grape__mode == GRAPE_MODE_GRAPH && fa_.s == NULL && grape__hold_launch(route, &l)) {
    if (GRAPE_TL_ON(tl_))
      grape__tl_launch_end(&tl_, &l, 1, 1);
    return CUDA_SUCCESS;
  }
  CUresult r;
  if (GRAPE_TL_ON(tl_))
    grape__tl_dev_begin(&tl_, l.stream, ptds);
  uint64_t t0_ = grape__launch_time_start();
  GRAPE_CALL_NO_WAIT(r = real(c, f, params, extra));
  if (t0_ != 0)
    grape__launch_time_end(t0_);
  if (GRAPE_TL_ON(tl_))
    grape__tl_launch_end(&tl_, &l, r == CUDA_SUCCESS, 0);
  if (r == CUDA_SUCCESS)
    grape__launched(route, &fa_, &l);   /* calls no CUDA but first-time lookups, which guard themselves */
  return GRAPE_SEEN(r);
}

/* ---- The program's own stream capture ---- */

/* Begin: the stream's region ends first (its ops must not mix with captured
 * work); see grape__capture_begun. */
GRAPE_HOOK_DEF(CUresult, cuStreamBeginCapture_v2, (CUstream s, CUstreamCaptureMode mode), (s, mode),
               grape__flush_stream_of(s, ptds), grape__capture_begun())
GRAPE_HOOK_DEF(CUresult, cuStreamBeginCaptureToGraph,
               (CUstream s, CUgraph g, const CUgraphNode* deps, const CUgraphEdgeData* data, size_t n,
                CUstreamCaptureMode mode),
               (s, g, deps, data, n, mode), grape__flush_stream_of(s, ptds), grape__capture_begun())
GRAPE_CAPTURE_END_HOOK(CUresult, cuStreamEndCapture, CUstream, CUgraph)

/* ---- Modules and functions ---- */

/* Images handed to the driver may be freed right after the load, so they are
 * parsed now (the parse owns copies) and kept by the handle the load made (a
 * module or a library; NULL when it made none). */
static void register_loaded_image(const void* handle, const void* image) {
  grape_fatbin_t* fb = NULL;
  grape_cubin_err_t err;
  if (grape__image_load(image, &fb, &err) != 0) {
    grape_log_debug("module image not parsed: %s", err.msg);
    return;
  }
  grape__image_register_parsed(handle, fb, image);
}
static void image_loaded(const void* handle, const void* image) {
  if (handle != NULL)
    GRAPE_NO_REENTRY(register_loaded_image(handle, image));
}

GRAPE_HOOK_DEF(CUresult, cuModuleLoadData, (CUmodule* m, const void* image), (m, image),
               GRAPE_NOTHING, image_loaded(m ? *m : NULL, image))
GRAPE_HOOK_DEF(CUresult, cuModuleLoadDataEx,
               (CUmodule* m, const void* image, unsigned n, CUjit_option* o, void** v),
               (m, image, n, o, v), GRAPE_NOTHING, image_loaded(m ? *m : NULL, image))
GRAPE_HOOK_DEF(CUresult, cuModuleLoadFatBinary, (CUmodule* m, const void* image), (m, image),
               GRAPE_NOTHING, image_loaded(m ? *m : NULL, image))
GRAPE_HOOK_DEF(CUresult, cuLibraryLoadData,
               (CUlibrary* lib, const void* code, CUjit_option* jo, void** jv, unsigned nj,
                CUlibraryOption* lo, void** lv, unsigned nl),
               (lib, code, jo, jv, nj, lo, lv, nl), GRAPE_NOTHING, image_loaded(lib ? *lib : NULL, code))

GRAPE_HOOK_DEF(CUresult, cuModuleGetFunction, (CUfunction* f, CUmodule m, const char* name),
               (f, m, name), GRAPE_NOTHING, grape__fetched(f ? *f : NULL, GRAPE_FN_FUNCTION, name, m))
GRAPE_HOOK_DEF(CUresult, cuLibraryGetKernel, (CUkernel* k, CUlibrary lib, const char* name),
               (k, lib, name), GRAPE_NOTHING, grape__fetched(k ? *k : NULL, GRAPE_FN_KERNEL, name, lib))
GRAPE_HOOK_DEF(CUresult, cuKernelGetFunction, (CUfunction* f, CUkernel k), (f, k), GRAPE_NOTHING,
               grape__aliased(f ? *f : NULL, GRAPE_FN_FUNCTION, k))

/* Unloads end every region (the driver synchronises), then forget the
 * image's function infos. */
GRAPE_HOOK_DEF(CUresult, cuModuleUnload, (CUmodule m), (m), grape__flush_all(),
               grape__image_unloaded(m))
GRAPE_HOOK_DEF(CUresult, cuLibraryUnload, (CUlibrary lib), (lib), grape__flush_all(),
               grape__image_unloaded(lib))

/* Context teardown: held work is submitted and every executable graph goes
 * before the context does. */
GRAPE_HOOK_DEF(CUresult, cuCtxDestroy_v2, (CUcontext x), (x), grape__graphs_drop(), GRAPE_NOTHING)
GRAPE_HOOK_DEF(CUresult, cuCtxDetach, (CUcontext x), (x), grape__graphs_drop(), GRAPE_NOTHING)
GRAPE_HOOK_DEF(CUresult, cuGreenCtxDestroy, (CUgreenCtx x), (x), grape__graphs_drop(), GRAPE_NOTHING)
GRAPE_HOOK_DEF(CUresult, cuDevicePrimaryCtxRelease_v2, (CUdevice d), (d), grape__graphs_drop(),
               GRAPE_NOTHING)
GRAPE_HOOK_DEF(CUresult, cuDevicePrimaryCtxReset_v2, (CUdevice d), (d), grape__graphs_drop(),
               GRAPE_NOTHING)

/* A function's attributes change: what is held of it goes first, and a held
 * launch checks its limits again (funcattrs.h). */
GRAPE_HOOK_DEF(CUresult, cuFuncSetAttribute, (CUfunction f, CUfunction_attribute a, int v), (f, a, v),
               grape__func_attr_setting(f, a, v), grape__func_attr_set(f, a, v))
GRAPE_HOOK_DEF(CUresult, cuKernelSetAttribute, (CUfunction_attribute a, int v, CUkernel k, CUdevice d),
               (a, v, k, d), grape__func_attr_setting(k, a, v), grape__func_attr_set(k, a, v))
GRAPE_HOOK_DEF(CUresult, cuFuncSetCacheConfig, (CUfunction f, CUfunc_cache c), (f, c),
               grape__func_attr_setting(f, GRAPE_FATTR_CACHE_CONFIG, c),
               grape__func_attr_set(f, GRAPE_FATTR_CACHE_CONFIG, c))
GRAPE_HOOK_DEF(CUresult, cuKernelSetCacheConfig, (CUkernel k, CUfunc_cache c, CUdevice d), (k, c, d),
               grape__func_attr_setting(k, GRAPE_FATTR_CACHE_CONFIG, c),
               grape__func_attr_set(k, GRAPE_FATTR_CACHE_CONFIG, c))
GRAPE_HOOK_DEF(CUresult, cuFuncSetSharedMemConfig, (CUfunction f, CUsharedconfig c), (f, c),
               grape__func_attr_setting(f, GRAPE_FATTR_SHMEM_CONFIG, c),
               grape__func_attr_set(f, GRAPE_FATTR_SHMEM_CONFIG, c))

GRAPE_HOOK_DEF(CUresult, cuStreamDestroy_v2, (CUstream s), (s), grape__stream_gone(s), GRAPE_NOTHING)

/* ---- Allocations ---- */

GRAPE_ALLOC_HOOK(CUresult, cuMemAlloc_v2, (CUdeviceptr* p, size_t n), (p, n), GRAPE_NOTHING,
                 GRAPE_ALLOC_DEVICE, *p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemAllocManaged, (CUdeviceptr* p, size_t n, unsigned fl), (p, n, fl),
                 GRAPE_NOTHING, GRAPE_ALLOC_MANAGED, *p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemAllocAsync, (CUdeviceptr* p, size_t n, CUstream s), (p, n, s),
                 grape__flush_stream_of(s, ptds), GRAPE_ALLOC_ASYNC, *p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemAllocPitch_v2,
                 (CUdeviceptr* p, size_t* pitch, size_t width, size_t rows, unsigned es),
                 (p, pitch, width, rows, es),
                 GRAPE_NOTHING, GRAPE_ALLOC_DEVICE, *p, *pitch * rows)
GRAPE_ALLOC_HOOK(CUresult, cuMemAllocFromPoolAsync,
                 (CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s), (p, n, pool, s),
                 grape__flush_stream_of(s, ptds), GRAPE_ALLOC_ASYNC, *p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemMap,
                 (CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle mh, unsigned long long fl),
                 (p, n, off, mh, fl), GRAPE_NOTHING, GRAPE_ALLOC_MAPPED, p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemHostAlloc, (void** p, size_t n, unsigned fl), (p, n, fl), GRAPE_NOTHING,
                 GRAPE_ALLOC_HOST_PINNED, *p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemAllocHost_v2, (void** p, size_t n), (p, n), GRAPE_NOTHING,
                 GRAPE_ALLOC_HOST_PINNED, *p, n)
GRAPE_ALLOC_HOOK(CUresult, cuMemHostRegister_v2, (void* p, size_t n, unsigned fl), (p, n, fl),
                 GRAPE_NOTHING, GRAPE_ALLOC_HOST_REGISTERED, p, n)
/* cuMemFree synchronises implicitly; cuMemFreeAsync is stream-ordered. */
GRAPE_FREE_HOOK(CUresult, cuMemFree_v2, (CUdeviceptr p), (p), grape__flush_all(), p)
GRAPE_FREE_HOOK(CUresult, cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s),
                grape__flush_stream_of(s, ptds), p)
GRAPE_FREE_HOOK(CUresult, cuMemFreeHost, (void* p), (p), grape__flush_all(), p)
GRAPE_FREE_HOOK(CUresult, cuMemHostUnregister, (void* p), (p), grape__flush_all(), p)

GRAPE_HOOK_DEF(CUresult, cuMemUnmap, (CUdeviceptr p, size_t n), (p, n),
               (grape__flush_all(), grape__builds_settle()),
               grape__alloc_remove_range((uint64_t)p, n))

/* ---- Async memsets and device-to-device copies: ops of the region ---- */

GRAPE_MEMOP_HOOK(CUresult, cuMemsetD8Async, (CUdeviceptr d, unsigned char v, size_t n, CUstream s),
                 (d, v, n, s), grape__memset_op(d, v, 1, n, s, ptds))
GRAPE_MEMOP_HOOK(CUresult, cuMemsetD16Async, (CUdeviceptr d, unsigned short v, size_t n, CUstream s),
                 (d, v, n, s), grape__memset_op(d, v, 2, n, s, ptds))
GRAPE_MEMOP_HOOK(CUresult, cuMemsetD32Async, (CUdeviceptr d, unsigned int v, size_t n, CUstream s),
                 (d, v, n, s), grape__memset_op(d, v, 4, n, s, ptds))
GRAPE_MEMOP_HOOK(CUresult, cuMemcpyDtoDAsync_v2, (CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s),
                 (d, src, n, s), grape__memcpy_op(d, src, n, s, ptds))

/* A copy into page-locked host memory is an op of the region (launch.h,
 * grape__copy_to_pinned); into pageable memory it ends the region, as it
 * returns only once done. */
static inline CUresult hook_cuMemcpyDtoHAsync_v2(grape_route_t route, grape_hook_t h, int ptds,
                                                 pfn_cuMemcpyDtoHAsync_v2 real, void* dst,
                                                 CUdeviceptr src, size_t n, CUstream s) {
  (void)route;
  GRAPE_COUNT(api_calls[h]);
  int op = grape__copy_to_pinned((uintptr_t)dst, src, n);
  grape_memop_t m = grape__memcpy_to_host_op((uintptr_t)dst, src, n, s, ptds);
  GRAPE_COPY_HOOK_REST(CUresult, op, m,
                       GRAPE_TRACE_DIR_DTOH, real(dst, src, n, s))
}

/* ---- Profiler control: capture ranges (GRAPE_CAPTURE, capture.c) ---- */

static inline CUresult hook_cuProfilerStart(pfn_cuProfilerStart real) {
  CUresult r;
  GRAPE_NO_REENTRY(r = real());
  grape__capture_profiler(1);   /* the call itself stays outside the range */
  return r;
}

static inline CUresult hook_cuProfilerStop(pfn_cuProfilerStop real) {
  grape__capture_profiler(0);
  CUresult r;
  GRAPE_NO_REENTRY(r = real());
  return r;
}

/* ---- Generated: bodies, exported overrides, route wrappers ---- */

#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) \
  GRAPE_GEN_BODY_##kind(ret, name, base, ptds, stream, params, args)
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) GRAPE_GEN_BODY0_##kind(ret, name)
#include "hooks.def"

#define GRAPE_GEN_DRV_ENTRIES(ret, name, params, args)                                         \
  GRAPE_GEN_ENTRY(GRAPE_EXPORT, ret, name, params, args, name, GRAPE_SLOT_EXPORT, GRAPE_ROUTE_DRIVER) \
  GRAPE_GEN_ROUTE_ENTRY(ret, name, params, args, grape__w_##name##_dlsym, GRAPE_SLOT_DLSYM, GRAPE_ROUTE_DLSYM) \
  GRAPE_GEN_ROUTE_ENTRY(ret, name, params, args, grape__w_##name##_gpa, GRAPE_SLOT_GPA, GRAPE_ROUTE_GPA) \
  GRAPE_GEN_ROUTE_ENTRY(ret, name, params, args, grape__w_##name##_ep, GRAPE_SLOT_EP, GRAPE_ROUTE_EP)
#define GRAPE_GEN_DRV_CUSTOM GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_PLAIN GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_SYNC_ALL GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_SYNC_STREAM GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_WAIT_ALL GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_COPY_ALL GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_COPY_STREAM GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_MEMSET_ALL GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_MEMSET_STREAM GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_GRAPH_STREAM GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_GRAPH_MADE GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_GRAPH_MADE_ALL GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_WAIT_STREAM GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_REPORT GRAPE_GEN_DRV_ENTRIES
#define GRAPE_GEN_DRV_MANUAL(ret, name, params, args)

#define GRAPE_GEN_DRV0_ENTRIES(ret, name)                                                        \
  GRAPE_GEN_ENTRY0(GRAPE_EXPORT, ret, name, name, GRAPE_SLOT_EXPORT, GRAPE_ROUTE_DRIVER)          \
  GRAPE_GEN_ROUTE_ENTRY0(ret, name, grape__w_##name##_dlsym, GRAPE_SLOT_DLSYM, GRAPE_ROUTE_DLSYM) \
  GRAPE_GEN_ROUTE_ENTRY0(ret, name, grape__w_##name##_gpa, GRAPE_SLOT_GPA, GRAPE_ROUTE_GPA)       \
  GRAPE_GEN_ROUTE_ENTRY0(ret, name, grape__w_##name##_ep, GRAPE_SLOT_EP, GRAPE_ROUTE_EP)
#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) \
  GRAPE_GEN_DRV_##kind(ret, name, params, args)
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) GRAPE_GEN_DRV0_ENTRIES(ret, name)
#include "hooks.def"

/* cuGetProcAddress[_v2]: every entry runs the hook, which also works when
 * passing through (see hooks.def, MANUAL). */
#define GPA_ENTRIES(name, params, args)                                                      \
  static inline CUresult name##_entry(grape_slot_t slot, GRAPE_UNPAREN params) {             \
    pfn_##name real = GRAPE_REAL_AT(name, slot);                                             \
    if (real == NULL)                                                                        \
      return CUDA_ERROR_NOT_FOUND;                                                           \
    return hook_##name(GRAPE_ROUTE_DRIVER, GRAPE_HOOK_##name, 0, real, GRAPE_UNPAREN args);  \
  }                                                                                          \
  GRAPE_EXPORT CUresult name params { return name##_entry(GRAPE_SLOT_EXPORT, GRAPE_UNPAREN args); } \
  CUresult grape__w_##name##_dlsym params { return name##_entry(GRAPE_SLOT_DLSYM, GRAPE_UNPAREN args); } \
  CUresult grape__w_##name##_gpa params { return name##_entry(GRAPE_SLOT_GPA, GRAPE_UNPAREN args); } \
  CUresult grape__w_##name##_ep params { return name##_entry(GRAPE_SLOT_EP, GRAPE_UNPAREN args); }
GPA_ENTRIES(cuGetProcAddress, (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags),
            (symbol, pfn, cudaVersion, flags))
GPA_ENTRIES(cuGetProcAddress_v2,
            (const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
             CUdriverProcAddressQueryResult* symbolStatus),
            (symbol, pfn, cudaVersion, flags, symbolStatus))

/* ---- dlsym ---- */

/* Runtime row by name (a runtime symbol looked up by handle gets the override). */
static int runtime_row(const char* name) {
  for (int i = 0; i < GRAPE_HOOK_COUNT; i++)
    if (grape__hooks[i].gpa == NULL && strcmp(grape__hooks[i].name, name) == 0)
      return i;
  return -1;
}

/* True for the handles that search the global scope: RTLD_DEFAULT and the
 * main program's (dlopen(NULL)). */
static GRAPE_NO_SANITIZE int global_scope(void* handle) {
  static void* main_handle;
  if (handle == RTLD_DEFAULT)
    return 1;
  void* m = __atomic_load_n(&main_handle, __ATOMIC_RELAXED);
  if (m == NULL) {
    m = dlopen(NULL, RTLD_LAZY | RTLD_NOLOAD);
    if (m == NULL)
      return 0;
    dlclose(m);   /* the main program stays loaded; only its handle value is kept */
    __atomic_store_n(&main_handle, m, __ATOMIC_RELAXED);
  }
  return handle == m;
}

/* The override. A name that is not cu* costs one real dlsym and two compares.
 * Limitation: dlsym(RTLD_NEXT, ...) from another object resolves relative to
 * libgrape, not to the caller (glibc finds the caller by return address). */
GRAPE_EXPORT GRAPE_NO_SANITIZE void* dlsym(void* handle, const char* symbol) {
  void* p = grape__real_dlsym(handle, symbol);
  /* Sanitizer runtimes call dlsym before they are initialised: nothing on this
   * path may be instrumented, and only CUDA names ("cu" + upper case, "cuda")
   * go further. */
  if (p == NULL || symbol[0] != 'c' || symbol[1] != 'u')
    return p;
  if (symbol[2] == 'b') {   /* cuBLAS's GEMMs (cublas.c) */
    grape__init();
    return grape__cublas_dlsym(handle, symbol, p);
  }
  if (!((symbol[2] >= 'A' && symbol[2] <= 'Z') || (symbol[2] == 'd' && symbol[3] == 'a')))
    return p;
  /* In the global scope the shim's own exports stand before CUDA's. Where no
   * real definition follows them (the program loaded CUDA RTLD_LOCAL, or not at
   * all), the answer is the one the program would get without the shim. */
  if (global_scope(handle) && grape__is_own(p) && grape__real_dlsym(RTLD_NEXT, symbol) == NULL)
    return NULL;
  /* cuGetProcAddress always comes back as the shim's own, even when passing
   * through (off mode, or the runtime resolving the driver inside a hook): it
   * then swaps any of the shim's exports that the driver hands back (a driver
   * resolving through the global scope does) for the real functions. */
  if (strncmp(symbol, "cuGetProcAddress", 16) == 0 && !grape__is_own(p)) {
    if (symbol[16] == '\0')
      return (void*)cuGetProcAddress;
    if (strcmp(symbol + 16, "_v2") == 0)
      return (void*)cuGetProcAddress_v2;
  }
  if (!grape__active())
    return p;
  if (grape__is_own(p))
    return p;
  if (strncmp(symbol, "cuda", 4) == 0) {
    int r = runtime_row(symbol);
    return r >= 0 ? grape__hooks[r].wrapper[GRAPE_SLOT_EXPORT] : p;
  }
  int h = grape__hook_by_name(symbol);
  if (h < 0)
    return p;
  return grape__wrap(GRAPE_SLOT_DLSYM, h, p);
}

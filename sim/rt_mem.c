/* rt_mem.c: the memory part of the sim's runtime: allocation (plain,
 * pitched, managed, pinned, stream-ordered, pools), pointer attributes,
 * copies (1-D, 2-D, 3-D, peer), memsets (1-D, 2-D, 3-D) and managed-memory
 * hints.
 *
 * DESIGN: every function is a thin translation to the driver entry point
 * NVIDIA's runtime uses for it (rt_internal.h's table), so the driver's rules
 * (stream order, pageable snapshots, capture checks) hold for both APIs and
 * the exit report counts the driver calls the real runtime would make. The
 * _ptds/_ptsz forms call the driver's per-thread variants.
 */
#include "rt_internal.h"

#include <stddef.h>

/* ---- Memory ---- */

RT_API cudaError_t cudaMalloc(void** p, size_t n) {
  RT_ENTER();
  if (p == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
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
    return grape__rt_err(cudaErrorInvalidValue);
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

/* ---- Stream-ordered allocation and pools ---- */

/* cudaMallocAsync allocates from the device's current pool (cudaDeviceSetMemPool). */
static cudaError_t malloc_async(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s, int pt) {
  RT_ENTER();
  if (p == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  CUdeviceptr d = 0;
  CUresult r = pool == NULL ? RT_PT(pt, MemAllocAsync)(&d, n, s)
                            : RT_PT(pt, MemAllocFromPoolAsync)(&d, n, pool, s);
  *p = (void*)(uintptr_t)d;
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMallocAsync(void** p, size_t n, cudaStream_t s) {
  return malloc_async(p, n, NULL, s, 0);
}
RT_API cudaError_t cudaMallocAsync_ptsz(void** p, size_t n, cudaStream_t s) {
  return malloc_async(p, n, NULL, s, 1);
}
RT_API cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t s) {
  if (pool == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  return malloc_async(p, n, pool, s, 0);
}
RT_API cudaError_t cudaMallocFromPoolAsync_ptsz(void** p, size_t n, cudaMemPool_t pool,
                                               cudaStream_t s) {
  if (pool == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  return malloc_async(p, n, pool, s, 1);
}

RT_API cudaError_t cudaFreeAsync(void* p, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(MemFreeAsync, (CUdeviceptr)(uintptr_t)p, s);
}
RT_API cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_MemFreeAsync, (CUdeviceptr)(uintptr_t)p, s);
}

/* cudaMemPool_t is CUmemoryPool, and the runtime's pool structures and
 * attribute numbers are the driver's. */
RT_API cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const struct cudaMemPoolProps* props) {
  RT_ENTER();
  return RT_CALL(MemPoolCreate, pool, (const CUmemPoolProps*)props);
}
RT_API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool) {
  RT_ENTER();
  return RT_CALL(MemPoolDestroy, pool);
}
RT_API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep) {
  RT_ENTER();
  return RT_CALL(MemPoolTrimTo, pool, keep);
}
RT_API cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr a, void* v) {
  RT_ENTER();
  return RT_CALL(MemPoolSetAttribute, pool, (CUmemPool_attribute)a, v);
}
RT_API cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr a, void* v) {
  RT_ENTER();
  return RT_CALL(MemPoolGetAttribute, pool, (CUmemPool_attribute)a, v);
}
RT_API cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc* map,
                                        size_t n) {
  RT_ENTER();
  return RT_CALL(MemPoolSetAccess, pool, (const CUmemAccessDesc*)map, n);
}
RT_API cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags* flags, cudaMemPool_t pool,
                                        struct cudaMemLocation* loc) {
  RT_ENTER();
  return RT_CALL(MemPoolGetAccess, (CUmemAccess_flags*)flags, pool, (CUmemLocation*)loc);
}
RT_API cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int d) {
  RT_ENTER();
  return RT_CALL(DeviceGetDefaultMemPool, pool, d);
}
RT_API cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* pool, int d) {
  RT_ENTER();
  return RT_CALL(DeviceGetMemPool, pool, d);
}
RT_API cudaError_t cudaDeviceSetMemPool(int d, cudaMemPool_t pool) {
  RT_ENTER();
  return RT_CALL(DeviceSetMemPool, d, pool);
}

RT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  RT_ENTER();
  if (a == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
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

cudaError_t grape__rt_memcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind,
                             cudaStream_t s, int async, int pt) {
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, sp = (CUdeviceptr)(uintptr_t)src;
  if (!async) {
    switch (kind) {
    case cudaMemcpyHostToDevice: if (!pt) return RT_CALL(MemcpyHtoD, d, src, n); break;
    case cudaMemcpyDeviceToHost: if (!pt) return RT_CALL(MemcpyDtoH, dst, sp, n); break;
    case cudaMemcpyDeviceToDevice: if (!pt) return RT_CALL(MemcpyDtoD, d, sp, n); break;
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault: break;
    default: return grape__rt_err(cudaErrorInvalidMemcpyDirection);
    }
    return pt ? RT_CALL(pt_Memcpy, d, sp, n) : RT_CALL(Memcpy, d, sp, n);
  }
  switch (kind) {
  case cudaMemcpyHostToDevice: if (!pt) return RT_CALL(MemcpyHtoDAsync, d, src, n, s); break;
  case cudaMemcpyDeviceToHost: if (!pt) return RT_CALL(MemcpyDtoHAsync, dst, sp, n, s); break;
  case cudaMemcpyDeviceToDevice: if (!pt) return RT_CALL(MemcpyDtoDAsync, d, sp, n, s); break;
  case cudaMemcpyHostToHost:
  case cudaMemcpyDefault: break;
  default: return grape__rt_err(cudaErrorInvalidMemcpyDirection);
  }
  return pt ? RT_CALL(pt_MemcpyAsync, d, sp, n, s) : RT_CALL(MemcpyAsync, d, sp, n, s);
}

static cudaError_t memcpy_any(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind,
                              cudaStream_t s, int async, int pt) {
  RT_ENTER();
  return grape__rt_memcpy(dst, src, n, kind, s, async, pt);
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


/* ---- Pitched allocation and host mappings ---- */

RT_API cudaError_t cudaMallocPitch(void** p, size_t* pitch, size_t width, size_t height) {
  RT_ENTER();
  if (p == NULL || pitch == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  if (width == 0 || height == 0) {
    *p = NULL;
    *pitch = 0;
    return cudaSuccess;
  }
  CUdeviceptr d = 0;
  cudaError_t e = RT_CALL(MemAllocPitch, &d, pitch, width, height, 4);
  *p = (void*)(uintptr_t)d;
  return e;
}

RT_API cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pp, struct cudaExtent ext) {
  RT_ENTER();
  if (pp == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  size_t pitch = 0;
  void* p = NULL;
  cudaError_t e = cudaMallocPitch(&p, &pitch, ext.width, ext.height * ext.depth);
  if (e != cudaSuccess)
    return e;
  *pp = (struct cudaPitchedPtr){p, pitch, ext.width, ext.height};
  return cudaSuccess;
}

RT_API cudaError_t cudaHostGetDevicePointer(void** pd, void* ph, unsigned int flags) {
  RT_ENTER();
  if (pd == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  CUdeviceptr d = 0;
  cudaError_t e = RT_CALL(MemHostGetDevicePointer, &d, ph, flags);
  *pd = (void*)(uintptr_t)d;
  return e;
}

/* ---- 2-D, 3-D and peer copies ----
 *
 * Routed as NVIDIA's runtime routes them: cudaMemcpy2D* through cuMemcpy2D*,
 * cudaMemcpy3D* through cuMemcpy3D*, peer copies through cuMemcpyPeer* and
 * cuMemcpy3DPeer*. The copy kind becomes each side's memory type
 * (cudaMemcpyDefault: unified, the driver looks at the pointer). */

static int kind_types(enum cudaMemcpyKind k, CUmemorytype* src, CUmemorytype* dst) {
  switch (k) {
  case cudaMemcpyHostToHost: *src = CU_MEMORYTYPE_HOST; *dst = CU_MEMORYTYPE_HOST; return 0;
  case cudaMemcpyHostToDevice: *src = CU_MEMORYTYPE_HOST; *dst = CU_MEMORYTYPE_DEVICE; return 0;
  case cudaMemcpyDeviceToHost: *src = CU_MEMORYTYPE_DEVICE; *dst = CU_MEMORYTYPE_HOST; return 0;
  case cudaMemcpyDeviceToDevice: *src = CU_MEMORYTYPE_DEVICE; *dst = CU_MEMORYTYPE_DEVICE; return 0;
  case cudaMemcpyDefault: *src = CU_MEMORYTYPE_UNIFIED; *dst = CU_MEMORYTYPE_UNIFIED; return 0;
  default: return -1;
  }
}

/* One side of a driver copy: the pointer goes to the field its type reads. */
#define COPY_SIDE(c, pre, type, ptr)                                               \
  do {                                                                             \
    (c)->pre##MemoryType = (type);                                                 \
    if ((type) == CU_MEMORYTYPE_HOST)                                              \
      (c)->pre##Host = (ptr);                                                      \
    else                                                                           \
      (c)->pre##Device = (CUdeviceptr)(uintptr_t)(ptr);                            \
  } while (0)

/* One side of a 3-D copy's box, from the runtime's position and pitched
 * pointer: origin, row pitch and slice height. */
#define BOX_SIDE(c, pre, pos, pptr)                                                \
  do {                                                                             \
    (c)->pre##XInBytes = (pos).x;                                                  \
    (c)->pre##Y = (pos).y;                                                         \
    (c)->pre##Z = (pos).z;                                                         \
    (c)->pre##Pitch = (pptr).pitch;                                                \
    (c)->pre##Height = (pptr).ysize;                                               \
  } while (0)

/* The box of a 3-D copy from the runtime's parameters p (cudaMemcpy3DParms or
 * cudaMemcpy3DPeerParms: the same fields) into the driver's c (CUDA_MEMCPY3D
 * or CUDA_MEMCPY3D_PEER): both sides and the extent, in bytes
 * (grape__rt_copy3d_params turns an array's elements into bytes). */
#define COPY_BOX(c, p)                                                             \
  do {                                                                             \
    BOX_SIDE(c, src, (p)->srcPos, (p)->srcPtr);                                    \
    BOX_SIDE(c, dst, (p)->dstPos, (p)->dstPtr);                                    \
    (c)->WidthInBytes = (p)->extent.width;                                         \
    (c)->Height = (p)->extent.height;                                              \
    (c)->Depth = (p)->extent.depth;                                                \
  } while (0)

static cudaError_t copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width,
                          size_t height, enum cudaMemcpyKind k, cudaStream_t s, int async, int pt) {
  RT_ENTER();
  CUmemorytype st, dt;
  if (kind_types(k, &st, &dt) != 0)
    return grape__rt_err(cudaErrorInvalidMemcpyDirection);
  if (width > dpitch || width > spitch)
    return grape__rt_err(cudaErrorInvalidPitchValue);
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  COPY_SIDE(&c, src, st, src);
  COPY_SIDE(&c, dst, dt, dst);
  c.srcPitch = spitch;
  c.dstPitch = dpitch;
  c.WidthInBytes = width;
  c.Height = height;
  CUresult r = async ? RT_PT(pt, Memcpy2DAsync)(&c, s) : RT_PT(pt, Memcpy2D)(&c);
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMemcpy2D(void* dst, size_t dpitch, const void* src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind k) {
  return copy2d(dst, dpitch, src, spitch, width, height, k, NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpy2D_ptds(void* dst, size_t dpitch, const void* src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind k) {
  return copy2d(dst, dpitch, src, spitch, width, height, k, NULL, 0, 1);
}
RT_API cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind k,
                                     cudaStream_t s) {
  return copy2d(dst, dpitch, src, spitch, width, height, k, s, 1, 0);
}
RT_API cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                          size_t width, size_t height, enum cudaMemcpyKind k,
                                          cudaStream_t s) {
  return copy2d(dst, dpitch, src, spitch, width, height, k, s, 1, 1);
}

/* An array side of a 3-D copy: positions in its elements (esize bytes). */
static cudaError_t array_side(CUDA_MEMCPY3D* c, int is_src, cudaArray_const_t a,
                              struct cudaPos pos, size_t* esize) {
  RT_TRY(grape__rt_array_esize(a, esize));
  if (is_src) {
    c->srcMemoryType = CU_MEMORYTYPE_ARRAY;
    c->srcArray = (CUarray)(uintptr_t)a;
    c->srcXInBytes = pos.x * *esize;
    c->srcY = pos.y;
    c->srcZ = pos.z;
  } else {
    c->dstMemoryType = CU_MEMORYTYPE_ARRAY;
    c->dstArray = (CUarray)(uintptr_t)a;
    c->dstXInBytes = pos.x * *esize;
    c->dstY = pos.y;
    c->dstZ = pos.z;
  }
  return cudaSuccess;
}

/* A side given by an array replaces the pointer side the kind names; the
 * extent is then in the array's elements (the source's when both are). */
cudaError_t grape__rt_copy3d_params(const struct cudaMemcpy3DParms* p, CUDA_MEMCPY3D* c) {
  if (p == NULL)
    return cudaErrorInvalidValue;
  CUmemorytype st, dt;
  if (kind_types(p->kind, &st, &dt) != 0)
    return cudaErrorInvalidMemcpyDirection;
  memset(c, 0, sizeof(*c));
  COPY_SIDE(c, src, st, p->srcPtr.ptr);
  COPY_SIDE(c, dst, dt, p->dstPtr.ptr);
  COPY_BOX(c, p);
  size_t esize = 0, desize = 0;
  if (p->dstArray != NULL)
    RT_TRY(array_side(c, 0, p->dstArray, p->dstPos, &desize));
  if (p->srcArray != NULL)
    RT_TRY(array_side(c, 1, p->srcArray, p->srcPos, &esize));
  if (esize == 0)
    esize = desize;
  if (esize != 0)
    c->WidthInBytes = p->extent.width * esize;
  return cudaSuccess;
}

static cudaError_t copy3d(const struct cudaMemcpy3DParms* p, cudaStream_t s, int async, int pt) {
  RT_ENTER();
  CUDA_MEMCPY3D c;
  RT_TRY(grape__rt_copy3d_params(p, &c));
  CUresult r = async ? RT_PT(pt, Memcpy3DAsync)(&c, s) : RT_PT(pt, Memcpy3D)(&c);
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return copy3d(p, NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpy3D_ptds(const struct cudaMemcpy3DParms* p) {
  return copy3d(p, NULL, 0, 1);
}
RT_API cudaError_t cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p, cudaStream_t s) {
  return copy3d(p, s, 1, 0);
}
RT_API cudaError_t cudaMemcpy3DAsync_ptsz(const struct cudaMemcpy3DParms* p, cudaStream_t s) {
  return copy3d(p, s, 1, 1);
}

/* A batch of 1-D copies: the driver's cuMemcpyBatchAsync checks the
 * arguments and submits each copy (the attribute structures agree field for
 * field and value for value). */
_Static_assert(sizeof(struct cudaMemcpyAttributes) == sizeof(CUmemcpyAttributes),
               "cudaMemcpyAttributes is CUmemcpyAttributes");
static cudaError_t copy_batch(void* const* dsts, const void* const* srcs, const size_t* sizes,
                              size_t count, struct cudaMemcpyAttributes* attrs, size_t* idxs,
                              size_t nattrs, cudaStream_t s, int pt) {
  RT_ENTER();
  CUresult r = RT_PT(pt, MemcpyBatchAsync)((CUdeviceptr*)(uintptr_t)dsts,
                                           (CUdeviceptr*)(uintptr_t)srcs,
                                           (size_t*)(uintptr_t)sizes, count,
                                           (CUmemcpyAttributes*)attrs, idxs, nattrs, s);
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs,
                                        const size_t* sizes, size_t count,
                                        struct cudaMemcpyAttributes* attrs, size_t* idxs,
                                        size_t nattrs, cudaStream_t s) {
  return copy_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, s, 0);
}
RT_API cudaError_t cudaMemcpyBatchAsync_ptsz(void* const* dsts, const void* const* srcs,
                                             const size_t* sizes, size_t count,
                                             struct cudaMemcpyAttributes* attrs, size_t* idxs,
                                             size_t nattrs, cudaStream_t s) {
  return copy_batch(dsts, srcs, sizes, count, attrs, idxs, nattrs, s, 1);
}

/* A batch of 3-D copies: the driver's cuMemcpy3DBatchAsync checks and
 * submits them (an op's structures agree field for field and value for
 * value with the driver's, and a cudaArray_t is a CUarray). */
_Static_assert(sizeof(struct cudaMemcpy3DBatchOp) == sizeof(CUDA_MEMCPY3D_BATCH_OP) &&
                   offsetof(struct cudaMemcpy3DBatchOp, extent) ==
                       offsetof(CUDA_MEMCPY3D_BATCH_OP, extent) &&
                   offsetof(struct cudaMemcpy3DBatchOp, srcAccessOrder) ==
                       offsetof(CUDA_MEMCPY3D_BATCH_OP, srcAccessOrder) &&
                   offsetof(struct cudaMemcpy3DOperand, op.ptr.layerHeight) ==
                       offsetof(CUmemcpy3DOperand, op.ptr.layerHeight) &&
                   offsetof(struct cudaMemcpy3DOperand, op.array.offset.z) ==
                       offsetof(CUmemcpy3DOperand, op.array.offset.z) &&
                   (int)cudaMemcpyOperandTypeArray == (int)CU_MEMCPY_OPERAND_TYPE_ARRAY &&
                   (int)cudaMemcpySrcAccessOrderAny == (int)CU_MEMCPY_SRC_ACCESS_ORDER_ANY,
               "cudaMemcpy3DBatchOp is CUDA_MEMCPY3D_BATCH_OP");
static cudaError_t copy_batch3d(size_t n, struct cudaMemcpy3DBatchOp* ops,
                                unsigned long long flags, cudaStream_t s, int pt) {
  RT_ENTER();
  CUresult r = RT_PT(pt, Memcpy3DBatchAsync)(n, (CUDA_MEMCPY3D_BATCH_OP*)ops, flags, s);
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMemcpy3DBatchAsync(size_t n, struct cudaMemcpy3DBatchOp* ops,
                                          unsigned long long flags, cudaStream_t s) {
  return copy_batch3d(n, ops, flags, s, 0);
}
RT_API cudaError_t cudaMemcpy3DBatchAsync_ptsz(size_t n, struct cudaMemcpy3DBatchOp* ops,
                                               unsigned long long flags, cudaStream_t s) {
  return copy_batch3d(n, ops, flags, s, 1);
}

/* Peer copies: device 0 is the only device, so both sides are device 0 and
 * its primary context. */
static cudaError_t peer_copy(void* dst, int dd, const void* src, int sd, size_t n, cudaStream_t s,
                             int async, int pt) {
  RT_ENTER();
  if (dd != 0 || sd != 0)
    return grape__rt_err(cudaErrorInvalidDevice);
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, sp = (CUdeviceptr)(uintptr_t)src;
  CUcontext c = grape__rt_primary_ctx;
  CUresult r = async ? RT_PT(pt, MemcpyPeerAsync)(d, c, sp, c, n, s)
                     : RT_PT(pt, MemcpyPeer)(d, c, sp, c, n);
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMemcpyPeer(void* dst, int dd, const void* src, int sd, size_t n) {
  return peer_copy(dst, dd, src, sd, n, NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpyPeerAsync(void* dst, int dd, const void* src, int sd, size_t n,
                                       cudaStream_t s) {
  return peer_copy(dst, dd, src, sd, n, s, 1, 0);
}

static cudaError_t copy3d_peer(const struct cudaMemcpy3DPeerParms* p, cudaStream_t s, int async,
                               int pt) {
  RT_ENTER();
  if (p == NULL || p->srcArray != NULL || p->dstArray != NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  if (p->srcDevice != 0 || p->dstDevice != 0)
    return grape__rt_err(cudaErrorInvalidDevice);
  CUDA_MEMCPY3D_PEER c;
  memset(&c, 0, sizeof(c));
  COPY_SIDE(&c, src, CU_MEMORYTYPE_UNIFIED, p->srcPtr.ptr);
  COPY_SIDE(&c, dst, CU_MEMORYTYPE_UNIFIED, p->dstPtr.ptr);
  c.srcContext = grape__rt_primary_ctx;
  c.dstContext = grape__rt_primary_ctx;
  COPY_BOX(&c, p);
  CUresult r = async ? RT_PT(pt, Memcpy3DPeerAsync)(&c, s) : RT_PT(pt, Memcpy3DPeer)(&c);
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaMemcpy3DPeer(const struct cudaMemcpy3DPeerParms* p) {
  return copy3d_peer(p, NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpy3DPeer_ptds(const struct cudaMemcpy3DPeerParms* p) {
  return copy3d_peer(p, NULL, 0, 1);
}
RT_API cudaError_t cudaMemcpy3DPeerAsync(const struct cudaMemcpy3DPeerParms* p, cudaStream_t s) {
  return copy3d_peer(p, s, 1, 0);
}
RT_API cudaError_t cudaMemcpy3DPeerAsync_ptsz(const struct cudaMemcpy3DPeerParms* p,
                                              cudaStream_t s) {
  return copy3d_peer(p, s, 1, 1);
}

/* ---- 2-D and 3-D memsets (cuMemsetD2D8[Async]) ---- */

static cudaError_t memset2d(void* p, size_t pitch, int v, size_t width, size_t height,
                            cudaStream_t s, int async, int pt) {
  CUdeviceptr d = (CUdeviceptr)(uintptr_t)p;
  CUresult r = async ? RT_PT(pt, MemsetD2D8Async)(d, pitch, (unsigned char)v, width, height, s)
                     : RT_PT(pt, MemsetD2D8)(d, pitch, (unsigned char)v, width, height);
  return grape__rt_err(grape__rt_map(r));
}

static cudaError_t memset2d_api(void* p, size_t pitch, int v, size_t width, size_t height,
                                cudaStream_t s, int async, int pt) {
  RT_ENTER();
  if (height > 1 && width > pitch)
    return grape__rt_err(cudaErrorInvalidPitchValue);
  return memset2d(p, pitch, v, width, height, s, async, pt);
}

RT_API cudaError_t cudaMemset2D(void* p, size_t pitch, int v, size_t width, size_t height) {
  return memset2d_api(p, pitch, v, width, height, NULL, 0, 0);
}
RT_API cudaError_t cudaMemset2D_ptds(void* p, size_t pitch, int v, size_t width, size_t height) {
  return memset2d_api(p, pitch, v, width, height, NULL, 0, 1);
}
RT_API cudaError_t cudaMemset2DAsync(void* p, size_t pitch, int v, size_t width, size_t height,
                                     cudaStream_t s) {
  return memset2d_api(p, pitch, v, width, height, s, 1, 0);
}
RT_API cudaError_t cudaMemset2DAsync_ptsz(void* p, size_t pitch, int v, size_t width,
                                          size_t height, cudaStream_t s) {
  return memset2d_api(p, pitch, v, width, height, s, 1, 1);
}

/* A 3-D memset is one 2-D memset when its slices follow each other without a
 * gap (extent height = the allocation's rows per slice), else one per slice. */
static cudaError_t memset3d(struct cudaPitchedPtr pp, int v, struct cudaExtent e, cudaStream_t s,
                            int async, int pt) {
  RT_ENTER();
  if (e.width == 0 || e.height == 0 || e.depth == 0)
    return cudaSuccess;
  if (e.width > pp.pitch || (e.depth > 1 && e.height > pp.ysize))
    return grape__rt_err(cudaErrorInvalidValue);
  if (e.depth == 1 || e.height == pp.ysize)
    return memset2d(pp.ptr, pp.pitch, v, e.width, e.height * e.depth, s, async, pt);
  for (size_t z = 0; z < e.depth; z++) {
    char* slice = (char*)pp.ptr + z * pp.pitch * pp.ysize;
    cudaError_t r = memset2d(slice, pp.pitch, v, e.width, e.height, s, async, pt);
    if (r != cudaSuccess)
      return r;
  }
  return cudaSuccess;
}

RT_API cudaError_t cudaMemset3D(struct cudaPitchedPtr pp, int v, struct cudaExtent e) {
  return memset3d(pp, v, e, NULL, 0, 0);
}
RT_API cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr pp, int v, struct cudaExtent e) {
  return memset3d(pp, v, e, NULL, 0, 1);
}
RT_API cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pp, int v, struct cudaExtent e,
                                     cudaStream_t s) {
  return memset3d(pp, v, e, s, 1, 0);
}
RT_API cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pp, int v, struct cudaExtent e,
                                          cudaStream_t s) {
  return memset3d(pp, v, e, s, 1, 1);
}

/* ---- Managed memory: prefetch, advice, attachment ---- */

static CUmemLocation location(struct cudaMemLocation l) {
  CUmemLocation c = {(CUmemLocationType)l.type, l.id};   /* the enums agree */
  return c;
}

RT_API cudaError_t cudaMemPrefetchAsync(const void* p, size_t n, struct cudaMemLocation loc,
                                        unsigned int flags, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(MemPrefetchAsync, (CUdeviceptr)(uintptr_t)p, n, location(loc), flags, s);
}
RT_API cudaError_t cudaMemPrefetchAsync_ptsz(const void* p, size_t n, struct cudaMemLocation loc,
                                             unsigned int flags, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_MemPrefetchAsync, (CUdeviceptr)(uintptr_t)p, n, location(loc), flags, s);
}

RT_API cudaError_t cudaMemAdvise(const void* p, size_t n, enum cudaMemoryAdvise a,
                                 struct cudaMemLocation loc) {
  RT_ENTER();
  return RT_CALL(MemAdvise, (CUdeviceptr)(uintptr_t)p, n, (CUmem_advise)a, location(loc));
}

RT_API cudaError_t cudaStreamAttachMemAsync(cudaStream_t s, void* p, size_t n, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(StreamAttachMemAsync, s, (CUdeviceptr)(uintptr_t)p, n, flags);
}
RT_API cudaError_t cudaStreamAttachMemAsync_ptsz(cudaStream_t s, void* p, size_t n,
                                                 unsigned int flags) {
  RT_ENTER();
  return RT_CALL(pt_StreamAttachMemAsync, s, (CUdeviceptr)(uintptr_t)p, n, flags);
}

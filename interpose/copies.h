/* What a copy moves: its bytes and its direction (host to device, ...), from
 * the arguments of each copy entry point that api.txt classes copy_all or
 * copy_stream, for the timeline (GRAPE_TIMELINE), as nsys names a copy
 * ("Memcpy HtoD"). One grape__copy_<base>(args) per hook row base; and the
 * bytes a memset writes, one grape__set_<base>(args) per memset_all or
 * memset_stream row (its direction NONE).
 *
 * DESIGN: read only while the timeline records the call (after the real
 * call, whose arguments are then known good). Where the caller does not say
 * which side is which (cudaMemcpyDefault, unified addressing), the shim's
 * allocation map does: device, stream-ordered, managed and mapped memory
 * are the device's, anything else the host's. Arrays are device memory. */
#ifndef GRAPE_INTERPOSE_COPIES_H
#define GRAPE_INTERPOSE_COPIES_H

#include <stdint.h>

#include "allocmap.h"
#include "cuda_types.h"
#include "grape/trace.h"

typedef struct grape_copy_s {
  uint64_t bytes;
  uint32_t dir;   /* GRAPE_TRACE_DIR_* */
} grape_copy_t;

/* Whether p lies in memory of the device (as the allocation map knows it). */
static inline int grape__is_device_mem(const void* p) {
  grape_alloc_t a;
  return grape__alloc_find((uint64_t)(uintptr_t)p, &a) == 0 && a.kind <= GRAPE_ALLOC_MAPPED;
}

static inline uint32_t grape__copy_dir(int src_dev, int dst_dev) {
  return src_dev ? (dst_dev ? GRAPE_TRACE_DIR_DTOD : GRAPE_TRACE_DIR_DTOH)
                 : (dst_dev ? GRAPE_TRACE_DIR_HTOD : GRAPE_TRACE_DIR_HTOH);
}

/* The runtime's copy kind; cudaMemcpyDefault asks the allocation map. */
static inline uint32_t grape__copy_dir_rt(const void* dst, const void* src, enum cudaMemcpyKind k) {
  switch (k) {
  case cudaMemcpyHostToHost: return GRAPE_TRACE_DIR_HTOH;
  case cudaMemcpyHostToDevice: return GRAPE_TRACE_DIR_HTOD;
  case cudaMemcpyDeviceToHost: return GRAPE_TRACE_DIR_DTOH;
  case cudaMemcpyDeviceToDevice: return GRAPE_TRACE_DIR_DTOD;
  default: return grape__copy_dir(grape__is_device_mem(src), grape__is_device_mem(dst));
  }
}

/* A side of one of the driver's 2-D / 3-D copies. */
static inline int grape__side_is_device(CUmemorytype t, CUdeviceptr dev) {
  return t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY ||
         (t == CU_MEMORYTYPE_UNIFIED && grape__is_device_mem((const void*)(uintptr_t)dev));
}

static inline grape_copy_t grape__copy_2d(const CUDA_MEMCPY2D* p) {
  if (p == NULL)
    return (grape_copy_t){0, GRAPE_TRACE_DIR_NONE};
  return (grape_copy_t){(uint64_t)p->WidthInBytes * p->Height,
                        grape__copy_dir(grape__side_is_device(p->srcMemoryType, p->srcDevice),
                                        grape__side_is_device(p->dstMemoryType, p->dstDevice))};
}

static inline grape_copy_t grape__copy_3d(const CUDA_MEMCPY3D* p) {
  if (p == NULL)
    return (grape_copy_t){0, GRAPE_TRACE_DIR_NONE};
  return (grape_copy_t){(uint64_t)p->WidthInBytes * p->Height * p->Depth,
                        grape__copy_dir(grape__side_is_device(p->srcMemoryType, p->srcDevice),
                                        grape__side_is_device(p->dstMemoryType, p->dstDevice))};
}

static inline grape_copy_t grape__copy_rt3d(const struct cudaMemcpy3DParms* p) {
  if (p == NULL)
    return (grape_copy_t){0, GRAPE_TRACE_DIR_NONE};
  uint32_t dir = p->kind != cudaMemcpyDefault
                     ? grape__copy_dir_rt(NULL, NULL, p->kind)
                     : grape__copy_dir(p->srcArray != NULL || grape__is_device_mem(p->srcPtr.ptr),
                                       p->dstArray != NULL || grape__is_device_mem(p->dstPtr.ptr));
  return (grape_copy_t){(uint64_t)p->extent.width * p->extent.height * p->extent.depth, dir};
}

/* ---- Driver rows ---- */

static inline grape_copy_t grape__copy_cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  return (grape_copy_t){n, grape__copy_dir(grape__is_device_mem((const void*)(uintptr_t)src),
                                           grape__is_device_mem((const void*)(uintptr_t)dst))};
}
static inline grape_copy_t grape__copy_cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
                                                     CUstream s) {
  (void)s;
  return grape__copy_cuMemcpy(dst, src, n);
}
static inline grape_copy_t grape__copy_cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n) {
  (void)dst, (void)src;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_HTOD};
}
static inline grape_copy_t grape__copy_cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src,
                                                            size_t n, CUstream s) {
  (void)s;
  return grape__copy_cuMemcpyHtoD_v2(dst, src, n);
}
static inline grape_copy_t grape__copy_cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n) {
  (void)dst, (void)src;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOH};
}
static inline grape_copy_t grape__copy_cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n,
                                                            CUstream s) {
  (void)s;
  return grape__copy_cuMemcpyDtoH_v2(dst, src, n);
}
static inline grape_copy_t grape__copy_cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  (void)dst, (void)src;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOD};
}
static inline grape_copy_t grape__copy_cuMemcpyPeer(CUdeviceptr dst, CUcontext dc, CUdeviceptr src,
                                                    CUcontext sc, size_t n) {
  (void)dc, (void)sc;
  return grape__copy_cuMemcpyDtoD_v2(dst, src, n);
}
static inline grape_copy_t grape__copy_cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dc,
                                                         CUdeviceptr src, CUcontext sc, size_t n,
                                                         CUstream s) {
  (void)s;
  return grape__copy_cuMemcpyPeer(dst, dc, src, sc, n);
}
static inline grape_copy_t grape__copy_cuMemcpy2D_v2(const CUDA_MEMCPY2D* p) {
  return grape__copy_2d(p);
}
static inline grape_copy_t grape__copy_cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* p) {
  return grape__copy_2d(p);
}
static inline grape_copy_t grape__copy_cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* p, CUstream s) {
  (void)s;
  return grape__copy_2d(p);
}
static inline grape_copy_t grape__copy_cuMemcpy3D_v2(const CUDA_MEMCPY3D* p) {
  return grape__copy_3d(p);
}
static inline grape_copy_t grape__copy_cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* p, CUstream s) {
  (void)s;
  return grape__copy_3d(p);
}

/* The 1-D copies with a (1-D) CUDA array, which is device memory. */
static inline grape_copy_t grape__copy_cuMemcpyHtoA_v2(CUarray dst, size_t off, const void* src,
                                                       size_t n) {
  (void)dst, (void)off, (void)src;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_HTOD};
}
static inline grape_copy_t grape__copy_cuMemcpyHtoAAsync_v2(CUarray dst, size_t off,
                                                            const void* src, size_t n, CUstream s) {
  (void)s;
  return grape__copy_cuMemcpyHtoA_v2(dst, off, src, n);
}
static inline grape_copy_t grape__copy_cuMemcpyAtoH_v2(void* dst, CUarray src, size_t off,
                                                       size_t n) {
  (void)dst, (void)src, (void)off;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOH};
}
static inline grape_copy_t grape__copy_cuMemcpyAtoHAsync_v2(void* dst, CUarray src, size_t off,
                                                            size_t n, CUstream s) {
  (void)s;
  return grape__copy_cuMemcpyAtoH_v2(dst, src, off, n);
}
static inline grape_copy_t grape__copy_cuMemcpyDtoA_v2(CUarray dst, size_t off, CUdeviceptr src,
                                                       size_t n) {
  (void)dst, (void)off, (void)src;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOD};
}
static inline grape_copy_t grape__copy_cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t off,
                                                       size_t n) {
  (void)dst, (void)src, (void)off;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOD};
}
static inline grape_copy_t grape__copy_cuMemcpyAtoA_v2(CUarray dst, size_t doff, CUarray src,
                                                       size_t soff, size_t n) {
  (void)dst, (void)doff, (void)src, (void)soff;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOD};
}

/* A batch of 1-D copies: all their bytes; their direction when every copy
 * of the batch goes the same way (as the allocation map sees its sides),
 * else not known. */
static inline grape_copy_t grape__copy_batch(void* const* dsts, const void* const* srcs,
                                             const size_t* sizes, size_t count) {
  grape_copy_t c = {0, GRAPE_TRACE_DIR_NONE};
  for (size_t i = 0; dsts != NULL && srcs != NULL && sizes != NULL && i < count; i++) {
    uint32_t d = grape__copy_dir(grape__is_device_mem(srcs[i]), grape__is_device_mem(dsts[i]));
    c.dir = i == 0 || c.dir == d ? d : GRAPE_TRACE_DIR_NONE;
    c.bytes += sizes[i];
  }
  return c;
}
static inline grape_copy_t grape__copy_cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                             size_t* sizes, size_t count,
                                                             CUmemcpyAttributes* a, size_t* ai,
                                                             size_t na, CUstream s) {
  (void)a, (void)ai, (void)na, (void)s;
  return grape__copy_batch((void* const*)dsts, (const void* const*)srcs, sizes, count);
}
/* CUDA 12.8's form (the unversioned symbol): the same with the index of a
 * failing copy, which a recorded (successful) call leaves unset. */
static inline grape_copy_t grape__copy_cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs,
                                                          size_t* sizes, size_t count,
                                                          CUmemcpyAttributes* a, size_t* ai,
                                                          size_t na, size_t* fail, CUstream s) {
  (void)fail;
  return grape__copy_cuMemcpyBatchAsync_v2(dsts, srcs, sizes, count, a, ai, na, s);
}

/* A batch of 3-D copies: all their bytes (an op's extent counts elements of
 * its array operand's size, or bytes between two pointers; an array of a
 * format other than the plain integer and float ones counts none); their
 * direction when every op goes the same way, else not known (copies.c: the
 * element sizes are the driver's). */
grape_copy_t grape__copy_batch3d(const CUDA_MEMCPY3D_BATCH_OP* ops, size_t n);
static inline grape_copy_t grape__copy_cuMemcpy3DBatchAsync_v2(size_t n,
                                                               CUDA_MEMCPY3D_BATCH_OP* ops,
                                                               unsigned long long flags,
                                                               CUstream s) {
  (void)flags, (void)s;
  return grape__copy_batch3d(ops, n);
}
/* CUDA 12.8's form (the unversioned symbol): the same with the index of a
 * failing op, which a recorded (successful) call leaves unset. */
static inline grape_copy_t grape__copy_cuMemcpy3DBatchAsync(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops,
                                                            size_t* fail, unsigned long long flags,
                                                            CUstream s) {
  (void)fail;
  return grape__copy_cuMemcpy3DBatchAsync_v2(n, ops, flags, s);
}

/* ---- Runtime rows ---- */

static inline grape_copy_t grape__copy_cudaMemcpy(void* dst, const void* src, size_t n,
                                                  enum cudaMemcpyKind k) {
  return (grape_copy_t){n, grape__copy_dir_rt(dst, src, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpy2D(void* dst, size_t dpitch, const void* src,
                                                    size_t spitch, size_t width, size_t height,
                                                    enum cudaMemcpyKind k) {
  (void)dpitch, (void)spitch;
  return (grape_copy_t){(uint64_t)width * height, grape__copy_dir_rt(dst, src, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src,
                                                         size_t spitch, size_t width, size_t height,
                                                         enum cudaMemcpyKind k, cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpy2D(dst, dpitch, src, spitch, width, height, k);
}
static inline grape_copy_t grape__copy_cudaMemcpy3D(const struct cudaMemcpy3DParms* p) {
  return grape__copy_rt3d(p);
}
static inline grape_copy_t grape__copy_cudaMemcpy3DAsync(const struct cudaMemcpy3DParms* p,
                                                         cudaStream_t s) {
  (void)s;
  return grape__copy_rt3d(p);
}
static inline grape_copy_t grape__copy_cudaMemcpyPeer(void* dst, int dd, const void* src, int sd,
                                                      size_t n) {
  (void)dst, (void)dd, (void)src, (void)sd;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOD};
}
static inline grape_copy_t grape__copy_cudaMemcpyPeerAsync(void* dst, int dd, const void* src,
                                                           int sd, size_t n, cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpyPeer(dst, dd, src, sd, n);
}

static inline grape_copy_t grape__copy_cudaMemcpyBatchAsync(void* const* dsts,
                                                            const void* const* srcs,
                                                            const size_t* sizes, size_t count,
                                                            struct cudaMemcpyAttributes* a,
                                                            size_t* ai, size_t na, cudaStream_t s) {
  (void)a, (void)ai, (void)na, (void)s;
  return grape__copy_batch(dsts, srcs, sizes, count);
}

/* The operands and extent of cudaMemcpy3DBatchOp are the driver's, field
 * for field (the sim's runtime checks it), and a cudaArray_t is a CUarray. */
static inline grape_copy_t grape__copy_cudaMemcpy3DBatchAsync(size_t n,
                                                              struct cudaMemcpy3DBatchOp* ops,
                                                              unsigned long long flags,
                                                              cudaStream_t s) {
  (void)flags, (void)s;
  return grape__copy_batch3d((const CUDA_MEMCPY3D_BATCH_OP*)ops, n);
}

/* Copies into device memory that the call names (an array, a variable)
 * from p, and out of it into p: the kind says where p lies,
 * cudaMemcpyDefault the allocation map. */
static inline uint32_t grape__copy_dir_into_device(const void* p, enum cudaMemcpyKind k) {
  return k == cudaMemcpyDefault ? grape__copy_dir(grape__is_device_mem(p), 1)
                                : grape__copy_dir_rt(NULL, NULL, k);
}
static inline uint32_t grape__copy_dir_out_of_device(const void* p, enum cudaMemcpyKind k) {
  return k == cudaMemcpyDefault ? grape__copy_dir(1, grape__is_device_mem(p))
                                : grape__copy_dir_rt(NULL, NULL, k);
}

static inline grape_copy_t grape__copy_cudaMemcpy2DToArray(cudaArray_t dst, size_t wo, size_t ho,
                                                           const void* src, size_t spitch,
                                                           size_t width, size_t height,
                                                           enum cudaMemcpyKind k) {
  (void)dst, (void)wo, (void)ho, (void)spitch;
  return (grape_copy_t){(uint64_t)width * height, grape__copy_dir_into_device(src, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpy2DToArrayAsync(cudaArray_t dst, size_t wo,
                                                                size_t ho, const void* src,
                                                                size_t spitch, size_t width,
                                                                size_t height,
                                                                enum cudaMemcpyKind k,
                                                                cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpy2DToArray(dst, wo, ho, src, spitch, width, height, k);
}
static inline grape_copy_t grape__copy_cudaMemcpy2DFromArray(void* dst, size_t dpitch,
                                                             cudaArray_const_t src, size_t wo,
                                                             size_t ho, size_t width,
                                                             size_t height,
                                                             enum cudaMemcpyKind k) {
  (void)dpitch, (void)src, (void)wo, (void)ho;
  return (grape_copy_t){(uint64_t)width * height, grape__copy_dir_out_of_device(dst, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpy2DFromArrayAsync(void* dst, size_t dpitch,
                                                                  cudaArray_const_t src, size_t wo,
                                                                  size_t ho, size_t width,
                                                                  size_t height,
                                                                  enum cudaMemcpyKind k,
                                                                  cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpy2DFromArray(dst, dpitch, src, wo, ho, width, height, k);
}
static inline grape_copy_t grape__copy_cudaMemcpy2DArrayToArray(cudaArray_t dst, size_t dwo,
                                                                size_t dho, cudaArray_const_t src,
                                                                size_t swo, size_t sho,
                                                                size_t width, size_t height,
                                                                enum cudaMemcpyKind k) {
  (void)dst, (void)dwo, (void)dho, (void)src, (void)swo, (void)sho, (void)k;
  return (grape_copy_t){(uint64_t)width * height, GRAPE_TRACE_DIR_DTOD};
}
static inline grape_copy_t grape__copy_cudaMemcpyToArray(cudaArray_t dst, size_t wo, size_t ho,
                                                         const void* src, size_t n,
                                                         enum cudaMemcpyKind k) {
  (void)dst, (void)wo, (void)ho;
  return (grape_copy_t){n, grape__copy_dir_into_device(src, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpyToArrayAsync(cudaArray_t dst, size_t wo,
                                                              size_t ho, const void* src, size_t n,
                                                              enum cudaMemcpyKind k,
                                                              cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpyToArray(dst, wo, ho, src, n, k);
}
static inline grape_copy_t grape__copy_cudaMemcpyFromArray(void* dst, cudaArray_const_t src,
                                                           size_t wo, size_t ho, size_t n,
                                                           enum cudaMemcpyKind k) {
  (void)src, (void)wo, (void)ho;
  return (grape_copy_t){n, grape__copy_dir_out_of_device(dst, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpyFromArrayAsync(void* dst, cudaArray_const_t src,
                                                                size_t wo, size_t ho, size_t n,
                                                                enum cudaMemcpyKind k,
                                                                cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpyFromArray(dst, src, wo, ho, n, k);
}
static inline grape_copy_t grape__copy_cudaMemcpyArrayToArray(cudaArray_t dst, size_t dwo,
                                                              size_t dho, cudaArray_const_t src,
                                                              size_t swo, size_t sho, size_t n,
                                                              enum cudaMemcpyKind k) {
  (void)dst, (void)dwo, (void)dho, (void)src, (void)swo, (void)sho, (void)k;
  return (grape_copy_t){n, GRAPE_TRACE_DIR_DTOD};
}
static inline grape_copy_t grape__copy_cudaMemcpyToSymbol(const void* symbol, const void* src,
                                                          size_t n, size_t off,
                                                          enum cudaMemcpyKind k) {
  (void)symbol, (void)off;
  return (grape_copy_t){n, grape__copy_dir_into_device(src, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpyToSymbolAsync(const void* symbol, const void* src,
                                                               size_t n, size_t off,
                                                               enum cudaMemcpyKind k,
                                                               cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpyToSymbol(symbol, src, n, off, k);
}
static inline grape_copy_t grape__copy_cudaMemcpyFromSymbol(void* dst, const void* symbol,
                                                            size_t n, size_t off,
                                                            enum cudaMemcpyKind k) {
  (void)symbol, (void)off;
  return (grape_copy_t){n, grape__copy_dir_out_of_device(dst, k)};
}
static inline grape_copy_t grape__copy_cudaMemcpyFromSymbolAsync(void* dst, const void* symbol,
                                                                 size_t n, size_t off,
                                                                 enum cudaMemcpyKind k,
                                                                 cudaStream_t s) {
  (void)s;
  return grape__copy_cudaMemcpyFromSymbol(dst, symbol, n, off, k);
}

/* ---- Memsets (the bytes written: elements of 1, 2 or 4 bytes) ---- */

static inline grape_copy_t grape__set_bytes(uint64_t bytes) {
  return (grape_copy_t){bytes, GRAPE_TRACE_DIR_NONE};
}
static inline grape_copy_t grape__set_cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  (void)d, (void)v;
  return grape__set_bytes(n);
}
static inline grape_copy_t grape__set_cuMemsetD16_v2(CUdeviceptr d, unsigned short v, size_t n) {
  (void)d, (void)v;
  return grape__set_bytes((uint64_t)n * 2);
}
static inline grape_copy_t grape__set_cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  (void)d, (void)v;
  return grape__set_bytes((uint64_t)n * 4);
}
static inline grape_copy_t grape__set_cuMemsetD2D8_v2(CUdeviceptr d, size_t pitch, unsigned char v,
                                                      size_t w, size_t h) {
  (void)d, (void)pitch, (void)v;
  return grape__set_bytes((uint64_t)w * h);
}
static inline grape_copy_t grape__set_cuMemsetD2D16_v2(CUdeviceptr d, size_t pitch,
                                                       unsigned short v, size_t w, size_t h) {
  (void)d, (void)pitch, (void)v;
  return grape__set_bytes((uint64_t)w * h * 2);
}
static inline grape_copy_t grape__set_cuMemsetD2D32_v2(CUdeviceptr d, size_t pitch, unsigned int v,
                                                       size_t w, size_t h) {
  (void)d, (void)pitch, (void)v;
  return grape__set_bytes((uint64_t)w * h * 4);
}
static inline grape_copy_t grape__set_cuMemsetD2D8Async(CUdeviceptr d, size_t pitch,
                                                        unsigned char v, size_t w, size_t h,
                                                        CUstream s) {
  (void)s;
  return grape__set_cuMemsetD2D8_v2(d, pitch, v, w, h);
}
static inline grape_copy_t grape__set_cuMemsetD2D16Async(CUdeviceptr d, size_t pitch,
                                                         unsigned short v, size_t w, size_t h,
                                                         CUstream s) {
  (void)s;
  return grape__set_cuMemsetD2D16_v2(d, pitch, v, w, h);
}
static inline grape_copy_t grape__set_cuMemsetD2D32Async(CUdeviceptr d, size_t pitch,
                                                         unsigned int v, size_t w, size_t h,
                                                         CUstream s) {
  (void)s;
  return grape__set_cuMemsetD2D32_v2(d, pitch, v, w, h);
}
static inline grape_copy_t grape__set_cudaMemset(void* p, int v, size_t n) {
  (void)p, (void)v;
  return grape__set_bytes(n);
}
static inline grape_copy_t grape__set_cudaMemset2D(void* p, size_t pitch, int v, size_t w,
                                                   size_t h) {
  (void)p, (void)pitch, (void)v;
  return grape__set_bytes((uint64_t)w * h);
}
static inline grape_copy_t grape__set_cudaMemset2DAsync(void* p, size_t pitch, int v, size_t w,
                                                        size_t h, cudaStream_t s) {
  (void)s;
  return grape__set_cudaMemset2D(p, pitch, v, w, h);
}
static inline grape_copy_t grape__set_cudaMemset3D(struct cudaPitchedPtr p, int v,
                                                   struct cudaExtent e) {
  (void)p, (void)v;
  return grape__set_bytes((uint64_t)e.width * e.height * e.depth);
}
static inline grape_copy_t grape__set_cudaMemset3DAsync(struct cudaPitchedPtr p, int v,
                                                        struct cudaExtent e, cudaStream_t s) {
  (void)s;
  return grape__set_cudaMemset3D(p, v, e);
}

#endif

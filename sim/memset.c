/* memset.c: the memsets of the simulated driver: cuMemsetD8/D16/D32 and
 * cuMemsetD2D8/16/32, with their Async, _ptds and _ptsz forms; and the work of
 * a graph's memset node.
 *
 * DESIGN: a memset, of one row or of a pitched 2-D block, is one OP_MEMSET
 * on its stream (one node when captured); a synchronous one returns after it
 * ran in stream order, and may not be issued while its stream captures. The
 * rows must lie inside one device allocation and the address must be
 * aligned to the element size.
 */
#include "internal.h"

CUresult grape__sim_memset_work(CUdeviceptr d, unsigned v, unsigned esize, size_t n,
                                size_t height, size_t pitch, sim_work_t* w) {
  if (!grape__sim_dev_range(d, pitch * (height - 1) + n * esize))
    return CUDA_ERROR_INVALID_VALUE;
  *w = (sim_work_t){.kind = OP_MEMSET};
  w->u.ms.dst = (void*)(uintptr_t)d;
  w->u.ms.value = v;
  w->u.ms.esize = esize;
  w->u.ms.n = n;
  w->u.ms.height = height;
  w->u.ms.pitch = pitch;
  return CUDA_SUCCESS;
}

/* A memset entry point: pitch 0 means rows packed (1-D forms). */
static CUresult memset_any(CUdeviceptr d, unsigned v, unsigned esize, size_t n, size_t height,
                           size_t pitch, CUstream h, int ptds, int async) {
  SIM_TRY(grape__sim_check_init());
  if (n == 0 || height == 0)
    return CUDA_SUCCESS;
  if (pitch == 0)
    pitch = n * esize;
  if ((d % esize) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  sim_work_t w;
  SIM_TRY(grape__sim_memset_work(d, v, esize, n, height, pitch, &w));
  struct CUstream_st* s;
  SIM_TRY(grape__sim_op_stream(h, ptds, async, &s));
  CUresult r = grape__sim_submit(s, &w, NULL, 0);
  if (r == CUDA_SUCCESS && !async)
    r = grape__sim_wait_stream(s);
  return r;
}

#define MEMSET_API(name, T, es, ptds, async)                                       \
  SIM_EXPORT CUresult name(CUdeviceptr d, T v, size_t n) {                         \
    SIM_COUNT(name);                                                               \
    return memset_any(d, v, es, n, 1, 0, NULL, ptds, async);                       \
  }
#define MEMSET_ASYNC_API(name, T, es, ptds)                                        \
  SIM_EXPORT CUresult name(CUdeviceptr d, T v, size_t n, CUstream s) {             \
    SIM_COUNT(name);                                                               \
    return memset_any(d, v, es, n, 1, 0, s, ptds, 1);                              \
  }
MEMSET_API(cuMemsetD8_v2, unsigned char, 1, 0, 0)
MEMSET_API(cuMemsetD8_v2_ptds, unsigned char, 1, 1, 0)
MEMSET_API(cuMemsetD16_v2, unsigned short, 2, 0, 0)
MEMSET_API(cuMemsetD16_v2_ptds, unsigned short, 2, 1, 0)
MEMSET_API(cuMemsetD32_v2, unsigned int, 4, 0, 0)
MEMSET_API(cuMemsetD32_v2_ptds, unsigned int, 4, 1, 0)
MEMSET_ASYNC_API(cuMemsetD8Async, unsigned char, 1, 0)
MEMSET_ASYNC_API(cuMemsetD8Async_ptsz, unsigned char, 1, 1)
MEMSET_ASYNC_API(cuMemsetD16Async, unsigned short, 2, 0)
MEMSET_ASYNC_API(cuMemsetD16Async_ptsz, unsigned short, 2, 1)
MEMSET_ASYNC_API(cuMemsetD32Async, unsigned int, 4, 0)
MEMSET_ASYNC_API(cuMemsetD32Async_ptsz, unsigned int, 4, 1)

#define MEMSET2D_API(name, T, es, ptds)                                            \
  SIM_EXPORT CUresult name(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h) { \
    SIM_COUNT(name);                                                               \
    return memset_any(d, v, es, w, h, pitch, NULL, ptds, 0);                       \
  }
MEMSET2D_API(cuMemsetD2D8_v2, unsigned char, 1, 0)
MEMSET2D_API(cuMemsetD2D8_v2_ptds, unsigned char, 1, 1)
MEMSET2D_API(cuMemsetD2D32_v2, unsigned int, 4, 0)
MEMSET2D_API(cuMemsetD2D32_v2_ptds, unsigned int, 4, 1)
MEMSET2D_API(cuMemsetD2D16_v2, unsigned short, 2, 0)
MEMSET2D_API(cuMemsetD2D16_v2_ptds, unsigned short, 2, 1)

#define MEMSET2D_ASYNC_API(name, T, es, ptds)                                      \
  SIM_EXPORT CUresult name(CUdeviceptr d, size_t pitch, T v, size_t w, size_t h,   \
                           CUstream s) {                                           \
    SIM_COUNT(name);                                                               \
    return memset_any(d, v, es, w, h, pitch, s, ptds, 1);                          \
  }
MEMSET2D_ASYNC_API(cuMemsetD2D8Async, unsigned char, 1, 0)
MEMSET2D_ASYNC_API(cuMemsetD2D8Async_ptsz, unsigned char, 1, 1)
MEMSET2D_ASYNC_API(cuMemsetD2D16Async, unsigned short, 2, 0)
MEMSET2D_ASYNC_API(cuMemsetD2D16Async_ptsz, unsigned short, 2, 1)
MEMSET2D_ASYNC_API(cuMemsetD2D32Async, unsigned int, 4, 0)
MEMSET2D_ASYNC_API(cuMemsetD2D32Async_ptsz, unsigned int, 4, 1)

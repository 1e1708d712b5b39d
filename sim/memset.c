/* memset.c: the memsets of the simulated driver: cuMemsetD8/D16/D32 and
 * cuMemsetD2D8/16/32, with their Async, _ptds and _ptsz forms; and the work of
 * a graph's memset node.
 *
 * DESIGN: a memset, of one row or of a pitched 2-D block, is one OP_MEMSET
 * on its stream (one node when captured); a synchronous one returns after it
 * ran in stream order, and may not be issued while its stream captures. The
 * rows must lie inside one device allocation, and the address (and a 2-D
 * pitch) must be aligned to the element size: one function checks both for
 * eager memsets and for graph memset nodes, added or updated, so a memset
 * CUDA refuses is refused on every path.
 */
#include "internal.h"

CUresult grape__sim_memset_work(CUdeviceptr d, unsigned v, unsigned esize, size_t n,
                                size_t height, size_t pitch, sim_work_t* w) {
  /* cuMemsetD16/D32: "the dstDevice pointer must be two/four byte aligned";
   * the 2-D forms: "the dstDevice pointer and dstPitch offset must be". */
  if ((d % esize) != 0 || (height > 1 && (pitch % esize) != 0))
    return CUDA_ERROR_INVALID_VALUE;
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
                           size_t pitch, CUstream h, int async, int ptds) {
  SIM_TRY(grape__sim_check_init());
  if (n == 0 || height == 0)
    return CUDA_SUCCESS;
  if (pitch == 0)
    pitch = n * esize;
  sim_work_t w;
  SIM_TRY(grape__sim_memset_work(d, v, esize, n, height, pitch, &w));
  struct CUstream_st* s;
  SIM_TRY(grape__sim_op_stream(h, ptds, async, &s));
  CUresult r = grape__sim_submit(s, &w, NULL, 0);
  if (r == CUDA_SUCCESS && !async)
    r = grape__sim_wait_stream(s);
  return r;
}

SIM_TWINS(cuMemsetD8_v2, _ptds, (CUdeviceptr d, unsigned char v, size_t n), memset_any,
          d, v, 1, n, 1, 0, NULL, 0)
SIM_TWINS(cuMemsetD16_v2, _ptds, (CUdeviceptr d, unsigned short v, size_t n), memset_any,
          d, v, 2, n, 1, 0, NULL, 0)
SIM_TWINS(cuMemsetD32_v2, _ptds, (CUdeviceptr d, unsigned int v, size_t n), memset_any,
          d, v, 4, n, 1, 0, NULL, 0)
SIM_TWINS(cuMemsetD8Async, _ptsz, (CUdeviceptr d, unsigned char v, size_t n, CUstream s),
          memset_any, d, v, 1, n, 1, 0, s, 1)
SIM_TWINS(cuMemsetD16Async, _ptsz, (CUdeviceptr d, unsigned short v, size_t n, CUstream s),
          memset_any, d, v, 2, n, 1, 0, s, 1)
SIM_TWINS(cuMemsetD32Async, _ptsz, (CUdeviceptr d, unsigned int v, size_t n, CUstream s),
          memset_any, d, v, 4, n, 1, 0, s, 1)

/* 2-D: w elements per row, h rows, pitch bytes apart. */
SIM_TWINS(cuMemsetD2D8_v2, _ptds,
          (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h), memset_any,
          d, v, 1, w, h, pitch, NULL, 0)
SIM_TWINS(cuMemsetD2D16_v2, _ptds,
          (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h), memset_any,
          d, v, 2, w, h, pitch, NULL, 0)
SIM_TWINS(cuMemsetD2D32_v2, _ptds,
          (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h), memset_any,
          d, v, 4, w, h, pitch, NULL, 0)
SIM_TWINS(cuMemsetD2D8Async, _ptsz,
          (CUdeviceptr d, size_t pitch, unsigned char v, size_t w, size_t h, CUstream s),
          memset_any, d, v, 1, w, h, pitch, s, 1)
SIM_TWINS(cuMemsetD2D16Async, _ptsz,
          (CUdeviceptr d, size_t pitch, unsigned short v, size_t w, size_t h, CUstream s),
          memset_any, d, v, 2, w, h, pitch, s, 1)
SIM_TWINS(cuMemsetD2D32Async, _ptsz,
          (CUdeviceptr d, size_t pitch, unsigned int v, size_t w, size_t h, CUstream s),
          memset_any, d, v, 4, w, h, pitch, s, 1)

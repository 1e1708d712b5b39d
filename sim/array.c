/* array.c: CUDA arrays of the simulated driver: cuArrayCreate,
 * cuArray3DCreate, their descriptors and cuArrayDestroy. Copies to and from
 * them are copy.c's (an ARRAY side of a box copy, and the 1-D forms).
 *
 * DESIGN: a CUDA array's layout is opaque to programs; here it is a packed
 * block of the device arena (rows of Width elements, Height rows per slice,
 * Depth slices), so its memory counts against the device's like any
 * allocation, and copies reach it through the descriptor's box. Its address
 * is never handed out: only the handle, checked against the registry. No
 * device code runs, so textures and surfaces over arrays are not simulated;
 * the sim serves the formats of 1, 2 and 4-byte integers, half and float,
 * with 1, 2 or 4 channels, and refuses the others (video, block-compressed
 * and normalised formats) with CUDA_ERROR_NOT_SUPPORTED, as it does sparse
 * and deferred-mapping arrays.
 */
#include "internal.h"

#include <stdlib.h>

/* The limits of compute capability 9.0 (CUDA C++ Programming Guide,
 * "Features and Technical Specifications", texture reference limits for a
 * CUDA array). */
#define MAX_1D 131072u
#define MAX_2D_W 131072u
#define MAX_2D_H 65536u
#define MAX_3D 16384u
#define MAX_LAYERED_W 32768u
#define MAX_LAYERS 2048u
#define MAX_CUBEMAP 32768u

struct CUarray_st {
  CUDA_ARRAY3D_DESCRIPTOR d;
  unsigned esize;          /* bytes per element: format size x channels */
  CUdeviceptr mem;         /* packed rows, rows per slice, slices */
};

static unsigned format_bytes(CUarray_format f) {
  switch (f) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8:
    return 1;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
    return 2;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT:
    return 4;
  default:
    return 0;
  }
}

/* Checks a descriptor against what CUDA documents for cuArray3DCreate: a
 * 1-D array has Height and Depth 0, a 2-D one Depth 0; a layered array's
 * Depth is its layer count; a cubemap is square with 6 faces (6 per layer
 * when layered). */
static CUresult check_desc(const CUDA_ARRAY3D_DESCRIPTOR* d) {
  static const unsigned known = CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST |
                                CUDA_ARRAY3D_CUBEMAP | CUDA_ARRAY3D_TEXTURE_GATHER |
                                CUDA_ARRAY3D_DEPTH_TEXTURE | CUDA_ARRAY3D_COLOR_ATTACHMENT |
                                CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING;
  if (d->Flags & ~known)
    return CUDA_ERROR_INVALID_VALUE;
  if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
    return CUDA_ERROR_NOT_SUPPORTED;
  if (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4)
    return CUDA_ERROR_INVALID_VALUE;
  if (format_bytes(d->Format) == 0)
    return (int)d->Format > 0 ? CUDA_ERROR_NOT_SUPPORTED : CUDA_ERROR_INVALID_VALUE;
  size_t w = d->Width, h = d->Height, z = d->Depth;
  int layered = (d->Flags & CUDA_ARRAY3D_LAYERED) != 0;
  if (w == 0 || (h == 0 && z != 0 && !layered))
    return CUDA_ERROR_INVALID_VALUE;
  if (d->Flags & CUDA_ARRAY3D_CUBEMAP) {
    if (w != h || w > MAX_CUBEMAP || (layered ? z == 0 || z % 6 != 0 || z / 6 > MAX_LAYERS : z != 6))
      return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
  }
  if (layered)
    return w <= MAX_LAYERED_W && h <= MAX_LAYERED_W && z >= 1 && z <= MAX_LAYERS
               ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (h == 0)
    return w <= MAX_1D ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  if (z == 0)
    return w <= MAX_2D_W && h <= MAX_2D_H ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  return w <= MAX_3D && h <= MAX_3D && z <= MAX_3D ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult array_create(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  SIM_TRY(grape__sim_need_ctx());
  if (out == NULL || d == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  SIM_TRY(check_desc(d));
  struct CUarray_st* a = grape__sim_reg_new(sizeof(*a), K_ARRAY);
  if (a == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  a->d = *d;
  a->esize = format_bytes(d->Format) * d->NumChannels;
  size_t rows = d->Height ? d->Height : 1, slices = d->Depth ? d->Depth : 1;
  CUresult r = grape__sim_dev_alloc(&a->mem, d->Width * a->esize * rows * slices);
  if (r != CUDA_SUCCESS) {
    grape__sim_reg_del(a);
    free(a);
    return r;
  }
  *out = a;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuArrayCreate_v2(CUarray* out, const CUDA_ARRAY_DESCRIPTOR* d) {
  SIM_COUNT(cuArrayCreate_v2);
  if (d == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
  return array_create(out, &d3);
}

SIM_EXPORT CUresult cuArray3DCreate_v2(CUarray* out, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  SIM_COUNT(cuArray3DCreate_v2);
  return array_create(out, d);
}

static CUresult array_of(CUarray h, struct CUarray_st** out) {
  SIM_TRY(grape__sim_check_init());
  if (h == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(h, K_ARRAY))
    return CUDA_ERROR_INVALID_HANDLE;
  *out = h;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR* out, CUarray h) {
  SIM_COUNT(cuArrayGetDescriptor_v2);
  struct CUarray_st* a;
  SIM_TRY(array_of(h, &a));
  if (out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *out = (CUDA_ARRAY_DESCRIPTOR){a->d.Width, a->d.Height, a->d.Format, a->d.NumChannels};
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR* out, CUarray h) {
  SIM_COUNT(cuArray3DGetDescriptor_v2);
  struct CUarray_st* a;
  SIM_TRY(array_of(h, &a));
  if (out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *out = a->d;
  return CUDA_SUCCESS;
}

/* Destroying an array waits for the device, as freeing memory does, so no
 * queued copy still uses it. */
SIM_EXPORT CUresult cuArrayDestroy(CUarray h) {
  SIM_COUNT(cuArrayDestroy);
  struct CUarray_st* a;
  SIM_TRY(grape__sim_need_ctx());
  SIM_TRY(array_of(h, &a));
  SIM_TRY(grape__sim_wait_all());
  grape__sim_reg_del(a);
  CUresult r = grape__sim_free_now(a->mem);
  free(a);
  return r;
}

CUresult grape__sim_array_box(CUarray h, sim_array_box_t* out) {
  struct CUarray_st* a;
  SIM_TRY(array_of(h, &a));
  out->mem = a->mem;
  out->esize = a->esize;
  out->row = (size_t)a->d.Width * a->esize;
  out->rows = a->d.Height ? a->d.Height : 1;
  out->slices = a->d.Depth ? a->d.Depth : 1;
  out->one_dim = a->d.Height == 0 && a->d.Depth == 0;
  return CUDA_SUCCESS;
}

/* copy.c: the copies of the simulated driver: 1-D (cuMemcpy, cuMemcpyHtoD,
 * DtoH, DtoD, and with 1-D arrays HtoA, AtoH, DtoA, AtoD, AtoA), 2-D and 3-D (cuMemcpy2D, cuMemcpy2DUnaligned, cuMemcpy3D) and
 * peer copies (cuMemcpyPeer, cuMemcpy3DPeer), each with its Async, _ptds and
 * _ptsz forms; batched 1-D and 3-D copies (cuMemcpyBatchAsync,
 * cuMemcpy3DBatchAsync); and the work of a graph's memcpy node.
 *
 * DESIGN: every form becomes one description of a strided copy (a box of
 * WidthInBytes x Height x Depth bytes, each side with its own origin, row
 * pitch and slice height; a 1-D copy is a box of one row) and then one
 * OP_MEMCPY on the stream, whose rows the stream's worker copies
 * (stream.c). One op per call, not one per row, so a captured 2-D
 * copy is one memcpy node and the simulated clock charges one copy, as on a
 * GPU. Copies follow CUDA's host-visible rules: a synchronous copy returns
 * after it ran in stream order; an async copy from pageable host memory
 * snapshots its source (packed) at the call, and an async copy into pageable
 * memory is synchronous, as documented; copies touching pinned memory are
 * truly asynchronous, so a program that forgets to synchronise sees stale
 * data; and pageable memory cannot be captured. Device sides must lie inside
 * one allocation, checked over the whole box. An ARRAY side is the box of
 * the array's packed elements (array.c): its origin and width in whole
 * elements, inside the array; the 1-D forms (cuMemcpyHtoA, AtoH, DtoA, AtoD,
 * AtoA) take 1-D arrays only, as CUDA documents, at byte offsets and counts
 * of whole elements.
 *
 * Peer copies: the sim has one device and one context, so a peer copy is a
 * device-to-device copy between the primary context and itself.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct side_s {
  CUmemorytype type;
  const void* host;
  CUdeviceptr dev;
  size_t x, y, z;          /* origin: bytes, rows, slices */
  size_t pitch, height;    /* bytes per row, rows per slice */
  /* resolved */
  char* start;             /* first byte of the box */
  int is_dev;              /* inside a device allocation */
  int pageable;            /* host memory the sim did not pin or register */
  CUarray array;           /* CU_MEMORYTYPE_ARRAY */
} side_t;

typedef struct box_s {
  size_t width, height, depth;
} box_t;

/* An array side: whole elements, inside the array. */
static CUresult array_side(side_t* s, const box_t* b) {
  sim_array_box_t a;
  SIM_TRY(grape__sim_array_box(s->array, &a));
  if (s->x % a.esize != 0 || b->width % a.esize != 0 || s->x > a.row ||
      b->width > a.row - s->x || s->y > a.rows || b->height > a.rows - s->y ||
      s->z > a.slices || b->depth > a.slices - s->z)
    return CUDA_ERROR_INVALID_VALUE;
  s->pitch = a.row;
  s->height = a.rows;
  s->start = (char*)(uintptr_t)(a.mem + s->z * a.row * a.rows + s->y * a.row + s->x);
  s->is_dev = 1;
  s->pageable = 0;
  return CUDA_SUCCESS;
}

/* Resolves one side of a copy and checks it against the box. */
static CUresult side_resolve(side_t* s, const box_t* b) {
  if (s->type == CU_MEMORYTYPE_ARRAY)
    return array_side(s, b);
  if (s->type != CU_MEMORYTYPE_HOST && s->type != CU_MEMORYTYPE_DEVICE &&
      s->type != CU_MEMORYTYPE_UNIFIED)
    return CUDA_ERROR_INVALID_VALUE;
  /* A single row needs no pitch; more rows need room for the row and its offset. */
  size_t pitch = s->pitch;
  if (b->height > 1 || b->depth > 1) {
    if (pitch < s->x + b->width)
      return CUDA_ERROR_INVALID_VALUE;
  } else if (pitch == 0) {
    pitch = s->x + b->width;
  }
  size_t height = s->height;
  if (b->depth > 1 && height < s->y + b->height)
    return CUDA_ERROR_INVALID_VALUE;
  uintptr_t base = s->type == CU_MEMORYTYPE_HOST ? (uintptr_t)s->host : (uintptr_t)s->dev;
  if (base == 0)
    return CUDA_ERROR_INVALID_VALUE;
  size_t first = s->z * pitch * height + s->y * pitch + s->x;
  size_t span = (b->depth - 1) * pitch * height + (b->height - 1) * pitch + b->width;
  s->pitch = pitch;
  s->height = height;
  s->start = (char*)(base + first);
  s->is_dev = grape__sim_dev_range((CUdeviceptr)(uintptr_t)s->start, span);
  if (s->type == CU_MEMORYTYPE_DEVICE && !s->is_dev)
    return CUDA_ERROR_INVALID_VALUE;
  s->pageable = !s->is_dev && !grape__sim_host_range(s->start, span);
  return CUDA_SUCCESS;
}

/* The work of a copy whose sides are resolved; the source is not snapshot. */
static void box_work(const side_t* src, const side_t* dst, const box_t* b, sim_work_t* w) {
  memset(w, 0, sizeof(*w));
  w->kind = OP_MEMCPY;
  w->u.cp.dst = dst->start;
  w->u.cp.src = src->start;
  w->u.cp.n = b->width;
  w->u.cp.rows = b->height;
  w->u.cp.depth = b->depth;
  w->u.cp.spitch = src->pitch;
  w->u.cp.dpitch = dst->pitch;
  w->u.cp.sslice = src->pitch * src->height;
  w->u.cp.dslice = dst->pitch * dst->height;
  w->u.cp.dir = src->is_dev ? (dst->is_dev ? SIM_DIR_DTOD : SIM_DIR_DTOH)
                            : (dst->is_dev ? SIM_DIR_HTOD : SIM_DIR_HTOH);
}

/* Submits a copy with the rules described at the top; read_now: the source
 * is read at the call even when it is not pageable (a batch's
 * CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL). */
static CUresult box_copy_read(side_t* src, side_t* dst, const box_t* b, CUstream h, int async,
                              int read_now, int ptds) {
  SIM_TRY(grape__sim_check_init());
  if (b->width == 0 || b->height == 0 || b->depth == 0)
    return CUDA_SUCCESS;
  SIM_TRY(side_resolve(src, b));
  SIM_TRY(side_resolve(dst, b));
  struct CUstream_st* s;
  SIM_TRY(grape__sim_op_stream(h, ptds, async, &s));
  sim_work_t w;
  box_work(src, dst, b, &w);
  pthread_mutex_lock(&grape__sim.lock);
  int capturing = s->cap != NULL;
  if (capturing && (src->pageable || dst->pageable))
    s->cap->invalidated = 1;   /* a graph cannot hold a copy of pageable memory */
  pthread_mutex_unlock(&grape__sim.lock);
  if (capturing && (src->pageable || dst->pageable))
    return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!capturing && async && (src->pageable || read_now)) {
    /* Pageable source: CUDA stages it before returning; the snapshot is packed. */
    size_t row = b->width, slice = row * b->height;
    char* snap = malloc(slice * b->depth);
    if (snap == NULL)
      return CUDA_ERROR_OUT_OF_MEMORY;
    w.u.cp.owned = snap;
    w.u.cp.src = snap;
    w.u.cp.spitch = row;
    w.u.cp.sslice = slice;
    for (size_t z = 0; z < b->depth; z++)
      for (size_t y = 0; y < b->height; y++)
        memcpy(snap + z * slice + y * row,
               src->start + z * src->pitch * src->height + y * src->pitch, row);
  }
  CUresult r = grape__sim_submit(s, &w, NULL, 0);
  if (r == CUDA_SUCCESS && !capturing && (!async || dst->pageable))
    r = grape__sim_wait_stream(s);
  return r;
}

static CUresult box_copy(side_t* src, side_t* dst, const box_t* b, CUstream h, int async,
                         int ptds) {
  return box_copy_read(src, dst, b, h, async, 0, ptds);
}

/* ---- 1-D copies ---- */

/* A copy of n bytes; each side's memory type says what it must be (UNIFIED:
 * whatever the pointer is, as cuMemcpy[Async] takes it); read_now as
 * box_copy_read's. */
static CUresult copy1d_read(void* dst, CUmemorytype dt, const void* src, CUmemorytype st,
                            size_t n, CUstream h, int async, int read_now, int ptds) {
  side_t s = {st, src, (CUdeviceptr)(uintptr_t)src, 0, 0, 0, 0, 0, NULL, 0, 0, NULL};
  side_t d = {dt, dst, (CUdeviceptr)(uintptr_t)dst, 0, 0, 0, 0, 0, NULL, 0, 0, NULL};
  box_t b = {n, 1, 1};
  return box_copy_read(&s, &d, &b, h, async, read_now, ptds);
}

static CUresult copy1d(void* dst, CUmemorytype dt, const void* src, CUmemorytype st, size_t n,
                       CUstream h, int async, int ptds) {
  return copy1d_read(dst, dt, src, st, n, h, async, 0, ptds);
}

#define P(x) ((void*)(uintptr_t)(x))
#define ANY CU_MEMORYTYPE_UNIFIED
#define DEV CU_MEMORYTYPE_DEVICE
#define HOST CU_MEMORYTYPE_HOST

SIM_TWINS(cuMemcpy, _ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), copy1d,
          P(d), ANY, P(s), ANY, n, NULL, 0)
SIM_TWINS(cuMemcpyHtoD_v2, _ptds, (CUdeviceptr d, const void* s, size_t n), copy1d,
          P(d), DEV, s, HOST, n, NULL, 0)
SIM_TWINS(cuMemcpyDtoH_v2, _ptds, (void* d, CUdeviceptr s, size_t n), copy1d,
          d, HOST, P(s), DEV, n, NULL, 0)
SIM_TWINS(cuMemcpyDtoD_v2, _ptds, (CUdeviceptr d, CUdeviceptr s, size_t n), copy1d,
          P(d), DEV, P(s), DEV, n, NULL, 0)
SIM_TWINS(cuMemcpyAsync, _ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st), copy1d,
          P(d), ANY, P(s), ANY, n, st, 1)
SIM_TWINS(cuMemcpyHtoDAsync_v2, _ptsz, (CUdeviceptr d, const void* s, size_t n, CUstream st),
          copy1d, P(d), DEV, s, HOST, n, st, 1)
SIM_TWINS(cuMemcpyDtoHAsync_v2, _ptsz, (void* d, CUdeviceptr s, size_t n, CUstream st), copy1d,
          d, HOST, P(s), DEV, n, st, 1)
SIM_TWINS(cuMemcpyDtoDAsync_v2, _ptsz, (CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st),
          copy1d, P(d), DEV, P(s), DEV, n, st, 1)

/* ---- 1-D copies to and from 1-D arrays ---- */

/* One side of a 1-D array copy: a 1-D array at a byte offset, or memory of
 * the given type. */
static side_t array_at(CUarray a, size_t off) {
  return (side_t){CU_MEMORYTYPE_ARRAY, NULL, 0, off, 0, 0, 0, 0, NULL, 0, 0, a};
}
static side_t memory_at(CUmemorytype t, const void* p) {
  return (side_t){t, p, (CUdeviceptr)(uintptr_t)p, 0, 0, 0, 0, 0, NULL, 0, 0, NULL};
}

static CUresult array_1d(CUarray a) {
  sim_array_box_t box;
  SIM_TRY(grape__sim_array_box(a, &box));
  return box.one_dim ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* AtoA: "the elements must be the same size". */
static CUresult same_elements(CUarray a, CUarray b) {
  sim_array_box_t x, y;
  SIM_TRY(grape__sim_array_box(a, &x));
  SIM_TRY(grape__sim_array_box(b, &y));
  return x.esize == y.esize ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

static CUresult copy_array1d(side_t src, side_t dst, size_t n, CUstream h, int async, int ptds) {
  SIM_TRY(grape__sim_check_init());
  if (src.type == CU_MEMORYTYPE_ARRAY)
    SIM_TRY(array_1d(src.array));
  if (dst.type == CU_MEMORYTYPE_ARRAY)
    SIM_TRY(array_1d(dst.array));
  if (src.type == CU_MEMORYTYPE_ARRAY && dst.type == CU_MEMORYTYPE_ARRAY)
    SIM_TRY(same_elements(src.array, dst.array));
  box_t b = {n, 1, 1};
  return box_copy(&src, &dst, &b, h, async, ptds);
}

SIM_TWINS(cuMemcpyHtoA_v2, _ptds, (CUarray d, size_t off, const void* s, size_t n), copy_array1d,
          memory_at(HOST, s), array_at(d, off), n, NULL, 0)
SIM_TWINS(cuMemcpyAtoH_v2, _ptds, (void* d, CUarray s, size_t off, size_t n), copy_array1d,
          array_at(s, off), memory_at(HOST, d), n, NULL, 0)
SIM_TWINS(cuMemcpyDtoA_v2, _ptds, (CUarray d, size_t off, CUdeviceptr s, size_t n), copy_array1d,
          memory_at(DEV, P(s)), array_at(d, off), n, NULL, 0)
SIM_TWINS(cuMemcpyAtoD_v2, _ptds, (CUdeviceptr d, CUarray s, size_t off, size_t n), copy_array1d,
          array_at(s, off), memory_at(DEV, P(d)), n, NULL, 0)
SIM_TWINS(cuMemcpyAtoA_v2, _ptds, (CUarray d, size_t doff, CUarray s, size_t soff, size_t n),
          copy_array1d, array_at(s, soff), array_at(d, doff), n, NULL, 0)
SIM_TWINS(cuMemcpyHtoAAsync_v2, _ptsz,
          (CUarray d, size_t off, const void* s, size_t n, CUstream st), copy_array1d,
          memory_at(HOST, s), array_at(d, off), n, st, 1)
SIM_TWINS(cuMemcpyAtoHAsync_v2, _ptsz, (void* d, CUarray s, size_t off, size_t n, CUstream st),
          copy_array1d, array_at(s, off), memory_at(HOST, d), n, st, 1)

/* ---- CUDA_MEMCPY2D / CUDA_MEMCPY3D ---- */

static CUresult copy2d(const CUDA_MEMCPY2D* p, CUstream h, int async, int ptds) {
  if (p == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  side_t src = {p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, 0,
                p->srcPitch, 0, NULL, 0, 0, p->srcArray};
  side_t dst = {p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, 0,
                p->dstPitch, 0, NULL, 0, 0, p->dstArray};
  box_t b = {p->WidthInBytes, p->Height, 1};
  return box_copy(&src, &dst, &b, h, async, ptds);
}

static void sides3d(const CUDA_MEMCPY3D* p, side_t* src, side_t* dst, box_t* b) {
  *src = (side_t){p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
                  p->srcPitch, p->srcHeight, NULL, 0, 0, p->srcArray};
  *dst = (side_t){p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ,
                  p->dstPitch, p->dstHeight, NULL, 0, 0, p->dstArray};
  *b = (box_t){p->WidthInBytes, p->Height, p->Depth};
}

static CUresult copy3d(const CUDA_MEMCPY3D* p, CUstream h, int async, int ptds) {
  if (p == NULL || p->reserved0 != NULL || p->reserved1 != NULL)
    return CUDA_ERROR_INVALID_VALUE;
  side_t src, dst;
  box_t b;
  sides3d(p, &src, &dst, &b);
  return box_copy(&src, &dst, &b, h, async, ptds);
}

/* The work of a memcpy graph node (no stream, no snapshot: a node of pageable
 * memory copies it when the graph runs, as CUDA's memcpy nodes do). */
CUresult grape__sim_copy3d_work(const CUDA_MEMCPY3D* p, sim_work_t* w) {
  if (p == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  side_t src, dst;
  box_t b;
  sides3d(p, &src, &dst, &b);
  if (b.width == 0 || b.height == 0 || b.depth == 0)
    return CUDA_ERROR_INVALID_VALUE;
  SIM_TRY(side_resolve(&src, &b));
  SIM_TRY(side_resolve(&dst, &b));
  box_work(&src, &dst, &b, w);
  return CUDA_SUCCESS;
}

SIM_TWINS(cuMemcpy2D_v2, _ptds, (const CUDA_MEMCPY2D* p), copy2d, p, NULL, 0)
SIM_TWINS(cuMemcpy2DUnaligned_v2, _ptds, (const CUDA_MEMCPY2D* p), copy2d, p, NULL, 0)
SIM_TWINS(cuMemcpy2DAsync_v2, _ptsz, (const CUDA_MEMCPY2D* p, CUstream s), copy2d, p, s, 1)
SIM_TWINS(cuMemcpy3D_v2, _ptds, (const CUDA_MEMCPY3D* p), copy3d, p, NULL, 0)
SIM_TWINS(cuMemcpy3DAsync_v2, _ptsz, (const CUDA_MEMCPY3D* p, CUstream s), copy3d, p, s, 1)

/* ---- Peer copies ---- */

static CUresult check_peer_ctx(CUcontext a, CUcontext b) {
  SIM_TRY(grape__sim_check_init());
  struct CUctx_st* p = grape__sim_primary();
  return a == p && b == p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult peer(CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n,
                     CUstream h, int async, int ptds) {
  SIM_TRY(check_peer_ctx(dc, sc));
  return copy1d(P(d), DEV, P(s), DEV, n, h, async, ptds);
}

SIM_TWINS(cuMemcpyPeer, _ptds, (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n),
          peer, d, dc, s, sc, n, NULL, 0)
SIM_TWINS(cuMemcpyPeerAsync, _ptsz,
          (CUdeviceptr d, CUcontext dc, CUdeviceptr s, CUcontext sc, size_t n, CUstream h), peer,
          d, dc, s, sc, n, h, 1)

static CUresult peer3d(const CUDA_MEMCPY3D_PEER* p, CUstream h, int async, int ptds) {
  if (p == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  SIM_TRY(check_peer_ctx(p->dstContext, p->srcContext));
  side_t src = {p->srcMemoryType, p->srcHost, p->srcDevice, p->srcXInBytes, p->srcY, p->srcZ,
                p->srcPitch, p->srcHeight, NULL, 0, 0, p->srcArray};
  side_t dst = {p->dstMemoryType, p->dstHost, p->dstDevice, p->dstXInBytes, p->dstY, p->dstZ,
                p->dstPitch, p->dstHeight, NULL, 0, 0, p->dstArray};
  box_t b = {p->WidthInBytes, p->Height, p->Depth};
  return box_copy(&src, &dst, &b, h, async, ptds);
}

/* ---- Batched copies (cuMemcpyBatchAsync: CUDA 13's form and 12.8's) ---- */

/* One copy of a batch checked as copy1d will submit it (any memory types):
 * whether it can be submitted. */
static CUresult batch1d_resolve(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  side_t s = memory_at(ANY, P(src)), d = memory_at(ANY, P(dst));
  box_t b = {n, 1, 1};
  if (n == 0)
    return CUDA_SUCCESS;   /* box_copy_read submits nothing for it */
  SIM_TRY(side_resolve(&s, &b));
  return side_resolve(&d, &b);
}

/* Checked as CUDA documents: three arrays of count copies, numAttrs (1 to
 * count) attributes whose first index is 0 and whose indices rise below
 * count, each with a source access order; never the legacy NULL stream.
 * Every copy is checked before any is submitted, so a bad copy leaves the
 * stream untouched. Each copy is then one 1-D copy op on the stream (any
 * memory types), in the batch's order, which CUDA leaves free; every order
 * honours the stream's. fail (CUDA 12.8's form; NULL for 13's): on an
 * error, the index of the copy it pertains to, or SIZE_MAX when it pertains
 * to none (an attribute describes a run of copies, not one); on success
 * CUDA says nothing of it, so it is left alone. A copy whose attribute says
 * CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL reads its source at the call,
 * whatever memory it is in (a pageable source always is). */
static CUresult batch1d(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                        CUmemcpyAttributes* attrs, size_t* idxs, size_t nattrs, size_t* fail,
                        CUstream h, int ptds) {
  size_t at = SIZE_MAX;
  CUresult r = grape__sim_check_init();
  if (r == CUDA_SUCCESS &&
      (count == 0 || dsts == NULL || srcs == NULL || sizes == NULL || attrs == NULL ||
       idxs == NULL || nattrs == 0 || nattrs > count || h == CU_STREAM_LEGACY ||
       (h == NULL && !ptds)))
    r = CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; r == CUDA_SUCCESS && k < nattrs; k++)
    if ((k == 0 ? idxs[k] != 0 : idxs[k] <= idxs[k - 1]) || idxs[k] >= count ||
        attrs[k].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
        attrs[k].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
      r = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; r == CUDA_SUCCESS && i < count; i++)
    if ((r = batch1d_resolve(dsts[i], srcs[i], sizes[i])) != CUDA_SUCCESS)
      at = i;
  for (size_t i = 0, k = 0; r == CUDA_SUCCESS && i < count; i++) {
    while (k + 1 < nattrs && idxs[k + 1] <= i)
      k++;   /* attribute k describes copies idxs[k] .. idxs[k + 1] - 1 */
    int now = attrs[k].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    if ((r = copy1d_read(P(dsts[i]), ANY, P(srcs[i]), ANY, sizes[i], h, 1, now, ptds)) !=
        CUDA_SUCCESS)
      at = i;
  }
  if (r != CUDA_SUCCESS && fail != NULL)
    *fail = at;
  return r;
}

/* CUDA 13's form, and 12.8's with the failing copy's index (the unversioned
 * symbols, which cuGetProcAddress returns below version 13000). */
SIM_TWINS(cuMemcpyBatchAsync_v2, _ptsz,
          (CUdeviceptr* d, CUdeviceptr* s, size_t* n, size_t count, CUmemcpyAttributes* a,
           size_t* ai, size_t na, CUstream st),
          batch1d, d, s, n, count, a, ai, na, NULL, st)
SIM_TWINS(cuMemcpyBatchAsync, _ptsz,
          (CUdeviceptr* d, CUdeviceptr* s, size_t* n, size_t count, CUmemcpyAttributes* a,
           size_t* ai, size_t na, size_t* fail, CUstream st),
          batch1d, d, s, n, count, a, ai, na, fail, st)

/* ---- Batched 3-D copies (cuMemcpy3DBatchAsync: CUDA 13's form and 12.8's) ---- */

/* One operand of a batched 3-D copy as a side; *esize: an array's element
 * size (0 for a pointer, whose element is the other side's or a byte). */
static CUresult operand_side(const CUmemcpy3DOperand* o, side_t* s, unsigned* esize) {
  memset(s, 0, sizeof(*s));
  if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    sim_array_box_t a;
    SIM_TRY(grape__sim_array_box(o->op.array.array, &a));
    s->type = CU_MEMORYTYPE_ARRAY;
    s->array = o->op.array.array;
    s->x = o->op.array.offset.x;   /* in elements until the op's element size is known */
    s->y = o->op.array.offset.y;
    s->z = o->op.array.offset.z;
    *esize = a.esize;
    return CUDA_SUCCESS;
  }
  if (o->type != CU_MEMCPY_OPERAND_TYPE_POINTER)
    return CUDA_ERROR_INVALID_VALUE;
  s->type = CU_MEMORYTYPE_UNIFIED;   /* any pointer: device, host, managed */
  s->host = (const void*)(uintptr_t)o->op.ptr.ptr;
  s->dev = o->op.ptr.ptr;
  s->pitch = o->op.ptr.rowLength;    /* in elements until then too; 0: packed */
  s->height = o->op.ptr.layerHeight;
  *esize = 0;
  return CUDA_SUCCESS;
}

/* A side in bytes once the op's element size e is known. */
static void operand_bytes(side_t* s, const CUextent3D* ext, unsigned e) {
  if (s->type == CU_MEMORYTYPE_ARRAY) {
    s->x *= e;
    return;
  }
  s->pitch = (s->pitch ? s->pitch : ext->width) * e;
  s->height = s->height ? s->height : ext->height;
}

/* One op as two sides and a box in bytes, checked as CUDA documents: a
 * known operand type, no zero extent, a row length and layer height of 0
 * (packed) or at least the extent's, a valid source access order, known
 * flags, arrays of one element size; the element is the array's (a byte
 * between two pointers). The sides are not yet resolved. */
static CUresult batch_op(const CUDA_MEMCPY3D_BATCH_OP* op, side_t* src, side_t* dst, box_t* b) {
  const CUextent3D* e = &op->extent;
  if (e->width == 0 || e->height == 0 || e->depth == 0 ||
      op->srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
      op->srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY ||
      (op->flags & ~(unsigned)CU_MEMCPY_FLAG_PREFER_OVERLAP_WITH_COMPUTE) != 0)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned se, de;
  SIM_TRY(operand_side(&op->src, src, &se));
  SIM_TRY(operand_side(&op->dst, dst, &de));
  if (se != 0 && de != 0 && se != de)
    return CUDA_ERROR_INVALID_VALUE;
  unsigned esize = se ? se : de ? de : 1;
  const side_t* ptrs[2] = {src, dst};
  for (int i = 0; i < 2; i++)
    if (ptrs[i]->type != CU_MEMORYTYPE_ARRAY &&
        ((ptrs[i]->pitch != 0 && ptrs[i]->pitch < e->width) ||
         (ptrs[i]->height != 0 && ptrs[i]->height < e->height)))
      return CUDA_ERROR_INVALID_VALUE;
  if (e->width > SIZE_MAX / esize)
    return CUDA_ERROR_INVALID_VALUE;
  operand_bytes(src, e, esize);
  operand_bytes(dst, e, esize);
  *b = (box_t){e->width * esize, e->height, e->depth};
  return CUDA_SUCCESS;
}

/* One op checked and its sides resolved: whether it can be submitted. */
static CUresult batch_op_resolve(const CUDA_MEMCPY3D_BATCH_OP* op) {
  side_t src, dst;
  box_t b;
  SIM_TRY(batch_op(op, &src, &dst, &b));
  SIM_TRY(side_resolve(&src, &b));
  return side_resolve(&dst, &b);
}

/* Checked as CUDA documents (numOps copies, flags 0, never the legacy NULL
 * stream, each op as batch_op says), every op resolved before any is
 * submitted, so a bad op leaves the stream untouched. Each op is then one
 * strided copy op on the stream, in the batch's order (CUDA leaves it free;
 * every order honours the stream's); a source to be read during the call is
 * read at the call. fail (CUDA 12.8's form; NULL for 13's): on an error, the
 * index of the op it pertains to, or SIZE_MAX when it pertains to none; on
 * success CUDA says nothing of it, so it is left alone. */
static CUresult batch3d(size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail,
                        unsigned long long flags, CUstream h, int ptds) {
  size_t at = SIZE_MAX;
  CUresult r = grape__sim_check_init();
  if (r == CUDA_SUCCESS && (n == 0 || ops == NULL || flags != 0 || h == CU_STREAM_LEGACY ||
                            (h == NULL && !ptds)))
    r = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++)
    if ((r = batch_op_resolve(&ops[i])) != CUDA_SUCCESS)
      at = i;
  for (size_t i = 0; r == CUDA_SUCCESS && i < n; i++) {
    side_t src, dst;
    box_t b;
    int now = ops[i].srcAccessOrder == CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
    if ((r = batch_op(&ops[i], &src, &dst, &b)) != CUDA_SUCCESS ||
        (r = box_copy_read(&src, &dst, &b, h, 1, now, ptds)) != CUDA_SUCCESS)
      at = i;
  }
  if (r != CUDA_SUCCESS && fail != NULL)
    *fail = at;
  return r;
}

/* CUDA 13's form, and 12.8's with the failing op's index (the unversioned
 * symbols, which cuGetProcAddress returns below version 13000). */
SIM_TWINS(cuMemcpy3DBatchAsync_v2, _ptsz,
          (size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, unsigned long long flags, CUstream st), batch3d,
          n, ops, NULL, flags, st)
SIM_TWINS(cuMemcpy3DBatchAsync, _ptsz,
          (size_t n, CUDA_MEMCPY3D_BATCH_OP* ops, size_t* fail, unsigned long long flags,
           CUstream st),
          batch3d, n, ops, fail, flags, st)

SIM_TWINS(cuMemcpy3DPeer, _ptds, (const CUDA_MEMCPY3D_PEER* p), peer3d, p, NULL, 0)
SIM_TWINS(cuMemcpy3DPeerAsync, _ptsz, (const CUDA_MEMCPY3D_PEER* p, CUstream s), peer3d, p, s, 1)

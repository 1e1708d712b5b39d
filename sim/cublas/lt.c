/* lt.c: the public API of libcublasLt.so.13's stand-in: handles, matmul
 * descriptors, matrix layouts, preferences, the heuristic and cublasLtMatmul,
 * on engine.c.
 *
 * DESIGN: descriptors are semi-opaque in cublasLt.h (the caller may own the
 * memory and call the *Init_internal functions), so each keeps all its state
 * inside the opaque struct's bytes, tagged with a magic number that every
 * call checks. Attributes are read and written with the sizes the header
 * gives them; a wrong size or an unknown attribute is CUBLAS_STATUS_INVALID_VALUE.
 * Attributes the stand-in cannot honour (fp8 scale pointers, auxiliary
 * epilogue outputs, row-major-interleaved orders, plane offsets, vector
 * pointer modes) are kept when set and make cublasLtMatmul answer
 * CUBLAS_STATUS_NOT_SUPPORTED, never a silently different result.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_math.h"
#include "lt_internal.h"
#include "vendor.h"

#define LAYOUT_MAGIC 0x4c4c4159u   /* "YALL" */
#define DESC_MAGIC 0x4353454du
#define PREF_MAGIC 0x46455250u
#define HANDLE_MAGIC 0x544c4353u

struct cublasLtContext {
  simcu_handle_t hd;   /* magic, and the pool's link (vendor.h) */
};

static simcu_handle_pool_t pool = {PTHREAD_MUTEX_INITIALIZER, NULL};

typedef struct lt_layout_s {
  uint32_t magic;
  int32_t type;
  int32_t order;
  int32_t batch;
  uint64_t rows, cols;
  int64_t ld;
  int64_t stride;
  int64_t plane_offset;
} lt_layout_t;
_Static_assert(sizeof(lt_layout_t) <= sizeof(cublasLtMatrixLayoutOpaque_t), "layout fits");

typedef struct lt_desc_s {
  uint32_t magic;
  int32_t compute, scale, pointer_mode, transa, transb, transc, fill;
  uint32_t epilogue;
  int32_t bias_type;       /* -1: D's type */
  int32_t sm_target;
  int32_t fast_accum;
  uint32_t unsupported;    /* attributes set that the stand-in cannot honour */
  const void* bias;
  int64_t bias_bs;
  int64_t alpha_vec_bs;
  int64_t aux_ld, aux_bs;
  int32_t aux_type;
  int32_t scale_modes[6];
  const void* ptrs[9];     /* scale, amax, aux and emulation pointers, as set */
} lt_desc_t;
_Static_assert(sizeof(lt_desc_t) <= sizeof(cublasLtMatmulDescOpaque_t), "descriptor fits");

typedef struct lt_pref_s {
  uint32_t magic;
  uint32_t search;
  uint64_t max_ws;
  uint32_t reduction_mask;
  uint32_t align[4];
  float max_waves;
  uint64_t impl_mask;
} lt_pref_t;
_Static_assert(sizeof(lt_pref_t) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "preference fits");

/* ---- Attribute plumbing ---- */

/* Copies size bytes in or out of field, checking the caller's buffer size. */
static cublasStatus_t attr_set(void* field, size_t size, const void* buf, size_t n) {
  if (buf == NULL || n != size)
    return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(field, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t attr_get(const void* field, size_t size, void* buf, size_t n,
                               size_t* written) {
  if (n == 0 && buf == NULL) {   /* a size query */
    if (written == NULL)
      return CUBLAS_STATUS_INVALID_VALUE;
    *written = size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == NULL || n < size)
    return CUBLAS_STATUS_INVALID_VALUE;
  memcpy(buf, field, size);
  if (written != NULL)
    *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- Library ---- */

SIMCUBLAS_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  if (h == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = simcublas__enter();
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  struct cublasLtContext* c = simcu_handle_new(&pool, sizeof(*c), HANDLE_MAGIC);
  if (c == NULL)
    return CUBLAS_STATUS_ALLOC_FAILED;
  *h = c;
  return CUBLAS_STATUS_SUCCESS;
}

/* An Lt handle, or a cuBLAS handle passed as one (engine.h): both begin
 * with a simcu_handle_t, and an Lt handle holds nothing more. */
static int handle_ok(cublasLtHandle_t h) {
  return h != NULL && (h->hd.magic == HANDLE_MAGIC || h->hd.magic == SIMCUBLAS_BLAS_HANDLE_MAGIC);
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  if (h == NULL || h->hd.magic != HANDLE_MAGIC)   /* a cuBLAS handle is cublasDestroy's */
    return CUBLAS_STATUS_NOT_INITIALIZED;
  simcu_handle_park(&pool, &h->hd);
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT size_t cublasLtGetVersion(void) {
  return CUBLAS_VERSION;
}

SIMCUBLAS_EXPORT size_t cublasLtGetCudartVersion(void) {
  return 13000;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  if (value == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  switch (type) {
  case MAJOR_VERSION:
    *value = CUBLAS_VER_MAJOR;
    return CUBLAS_STATUS_SUCCESS;
  case MINOR_VERSION:
    *value = CUBLAS_VER_MINOR;
    return CUBLAS_STATUS_SUCCESS;
  case PATCH_LEVEL:
    *value = CUBLAS_VER_PATCH;
    return CUBLAS_STATUS_SUCCESS;
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

/* ---- Matrix layouts ---- */

static lt_layout_t* as_layout(cublasLtMatrixLayout_t l) {
  lt_layout_t* x = (lt_layout_t*)l;
  return x != NULL && x->magic == LAYOUT_MAGIC ? x : NULL;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t l,
                                                                  size_t size, cudaDataType type,
                                                                  uint64_t rows, uint64_t cols,
                                                                  int64_t ld) {
  if (l == NULL || size < sizeof(lt_layout_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  lt_layout_t* x = (lt_layout_t*)l;
  memset(x, 0, sizeof(*x));
  x->magic = LAYOUT_MAGIC;
  x->type = type;
  x->order = CUBLASLT_ORDER_COL;
  x->batch = 1;
  x->rows = rows;
  x->cols = cols;
  x->ld = ld;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l,
                                                           cudaDataType type, uint64_t rows,
                                                           uint64_t cols, int64_t ld) {
  if (l == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtMatrixLayout_t x = calloc(1, sizeof(*x));
  if (x == NULL)
    return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatrixLayoutInit_internal(x, sizeof(*x), type, rows, cols, ld);
  *l = x;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  lt_layout_t* x = as_layout(l);
  if (l != NULL && x == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (x != NULL)
    x->magic = 0;
  free(l);
  return CUBLAS_STATUS_SUCCESS;
}

/* The field of a layout attribute and its size; NULL for an unknown one. */
static void* layout_field(lt_layout_t* x, cublasLtMatrixLayoutAttribute_t a, size_t* size) {
  switch (a) {
  case CUBLASLT_MATRIX_LAYOUT_TYPE:
    *size = 4;
    return &x->type;
  case CUBLASLT_MATRIX_LAYOUT_ORDER:
    *size = 4;
    return &x->order;
  case CUBLASLT_MATRIX_LAYOUT_ROWS:
    *size = 8;
    return &x->rows;
  case CUBLASLT_MATRIX_LAYOUT_COLS:
    *size = 8;
    return &x->cols;
  case CUBLASLT_MATRIX_LAYOUT_LD:
    *size = 8;
    return &x->ld;
  case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
    *size = 4;
    return &x->batch;
  case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
    *size = 8;
    return &x->stride;
  case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET:
    *size = 8;
    return &x->plane_offset;
  default:
    return NULL;
  }
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l,
                                                                 cublasLtMatrixLayoutAttribute_t a,
                                                                 const void* buf, size_t n) {
  lt_layout_t* x = as_layout(l);
  size_t size;
  void* f = x != NULL ? layout_field(x, a, &size) : NULL;
  return f != NULL ? attr_set(f, size, buf, n) : CUBLAS_STATUS_INVALID_VALUE;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t l,
                                                                 cublasLtMatrixLayoutAttribute_t a,
                                                                 void* buf, size_t n,
                                                                 size_t* written) {
  lt_layout_t* x = as_layout(l);
  size_t size;
  void* f = x != NULL ? layout_field(x, a, &size) : NULL;
  return f != NULL ? attr_get(f, size, buf, n, written) : CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- Matmul descriptors ---- */

static lt_desc_t* as_desc(cublasLtMatmulDesc_t d) {
  lt_desc_t* x = (lt_desc_t*)d;
  return x != NULL && x->magic == DESC_MAGIC ? x : NULL;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t d, size_t size,
                                                                cublasComputeType_t compute,
                                                                cudaDataType_t scale) {
  if (d == NULL || size < sizeof(lt_desc_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  lt_desc_t* x = (lt_desc_t*)d;
  memset(x, 0, sizeof(*x));
  x->magic = DESC_MAGIC;
  x->compute = compute;
  x->scale = scale;
  x->pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  x->transa = x->transb = x->transc = CUBLAS_OP_N;
  x->fill = CUBLAS_FILL_MODE_FULL;
  x->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  x->bias_type = -1;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d,
                                                         cublasComputeType_t compute,
                                                         cudaDataType_t scale) {
  if (d == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtMatmulDesc_t x = calloc(1, sizeof(*x));
  if (x == NULL)
    return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatmulDescInit_internal(x, sizeof(*x), compute, scale);
  *d = x;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  lt_desc_t* x = as_desc(d);
  if (d != NULL && x == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (x != NULL)
    x->magic = 0;
  free(d);
  return CUBLAS_STATUS_SUCCESS;
}

/* Bits of lt_desc_t.unsupported, by the attributes that set them. */
enum { UNS_SCALES = 1, UNS_AUX = 2, UNS_EMULATION = 4 };

static void* desc_field(lt_desc_t* x, cublasLtMatmulDescAttributes_t a, size_t* size,
                        uint32_t* uns) {
  *uns = 0;
  switch (a) {
  case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
    *size = 4;
    return &x->compute;
  case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
    *size = 4;
    return &x->scale;
  case CUBLASLT_MATMUL_DESC_POINTER_MODE:
    *size = 4;
    return &x->pointer_mode;
  case CUBLASLT_MATMUL_DESC_TRANSA:
    *size = 4;
    return &x->transa;
  case CUBLASLT_MATMUL_DESC_TRANSB:
    *size = 4;
    return &x->transb;
  case CUBLASLT_MATMUL_DESC_TRANSC:
    *size = 4;
    return &x->transc;
  case CUBLASLT_MATMUL_DESC_FILL_MODE:
    *size = 4;
    return &x->fill;
  case CUBLASLT_MATMUL_DESC_EPILOGUE:
    *size = 4;
    return &x->epilogue;
  case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    *size = sizeof(void*);
    return &x->bias;
  case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
    *size = 8;
    return &x->bias_bs;
  case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
    *size = 4;
    return &x->bias_type;
  case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE:
    *size = 8;
    return &x->alpha_vec_bs;
  case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
    *size = 4;
    return &x->sm_target;
  case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
    *size = 1;
    return &x->fast_accum;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
    *size = 8;
    return &x->aux_ld;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
    *size = 8;
    return &x->aux_bs;
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
    *size = 4;
    return &x->aux_type;
  case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
  case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
  case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
  case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
  case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
    *size = sizeof(void*);
    *uns = UNS_SCALES;
    return &x->ptrs[a - CUBLASLT_MATMUL_DESC_A_SCALE_POINTER];
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
    *size = sizeof(void*);
    *uns = UNS_AUX;
    return &x->ptrs[5 + (a == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER
                             ? 0
                             : (a == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER ? 1 : 2))];
  case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
  case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:
  case CUBLASLT_MATMUL_DESC_C_SCALE_MODE:
  case CUBLASLT_MATMUL_DESC_D_SCALE_MODE:
  case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE:
    *size = 4;
    *uns = UNS_SCALES;
    return &x->scale_modes[a - CUBLASLT_MATMUL_DESC_A_SCALE_MODE];
  case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR:
    *size = sizeof(void*);
    *uns = UNS_EMULATION;
    return &x->ptrs[8];
  default:
    return NULL;
  }
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d,
                                                               cublasLtMatmulDescAttributes_t a,
                                                               const void* buf, size_t n) {
  lt_desc_t* x = as_desc(d);
  size_t size;
  uint32_t uns;
  void* f = x != NULL ? desc_field(x, a, &size, &uns) : NULL;
  if (f == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (a == CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET && buf != NULL && n == 4 && *(const int32_t*)buf < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = attr_set(f, size, buf, n);
  if (st == CUBLAS_STATUS_SUCCESS && uns != 0) {
    int any = 0;
    for (size_t i = 0; i < size; i++)
      any |= ((const unsigned char*)buf)[i] != 0;
    if (any)
      x->unsupported |= uns;
  }
  return st;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t d,
                                                               cublasLtMatmulDescAttributes_t a,
                                                               void* buf, size_t n,
                                                               size_t* written) {
  lt_desc_t* x = as_desc(d);
  size_t size;
  uint32_t uns;
  void* f = x != NULL ? desc_field(x, a, &size, &uns) : NULL;
  return f != NULL ? attr_get(f, size, buf, n, written) : CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- Preferences ---- */

static lt_pref_t* as_pref(cublasLtMatmulPreference_t p) {
  lt_pref_t* x = (lt_pref_t*)p;
  return x != NULL && x->magic == PREF_MAGIC ? x : NULL;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t p,
                                                                      size_t size) {
  if (p == NULL || size < sizeof(lt_pref_t))
    return CUBLAS_STATUS_INVALID_VALUE;
  lt_pref_t* x = (lt_pref_t*)p;
  memset(x, 0, sizeof(*x));
  x->magic = PREF_MAGIC;
  x->reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  for (int i = 0; i < 4; i++)
    x->align[i] = 256;
  x->impl_mask = ~0ULL;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  if (p == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasLtMatmulPreference_t x = calloc(1, sizeof(*x));
  if (x == NULL)
    return CUBLAS_STATUS_ALLOC_FAILED;
  cublasLtMatmulPreferenceInit_internal(x, sizeof(*x));
  *p = x;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  lt_pref_t* x = as_pref(p);
  if (p != NULL && x == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (x != NULL)
    x->magic = 0;
  free(p);
  return CUBLAS_STATUS_SUCCESS;
}

static void* pref_field(lt_pref_t* x, cublasLtMatmulPreferenceAttributes_t a, size_t* size) {
  switch (a) {
  case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
    *size = 4;
    return &x->search;
  case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
    *size = 8;
    return &x->max_ws;
  case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
    *size = 4;
    return &x->reduction_mask;
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
  case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
    *size = 4;
    return &x->align[a - CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES];
  case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
    *size = 4;
    return &x->max_waves;
  case CUBLASLT_MATMUL_PREF_IMPL_MASK:
    *size = 8;
    return &x->impl_mask;
  default:
    return NULL;
  }
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void* buf, size_t n) {
  lt_pref_t* x = as_pref(p);
  size_t size;
  void* f = x != NULL ? pref_field(x, a, &size) : NULL;
  return f != NULL ? attr_set(f, size, buf, n) : CUBLAS_STATUS_INVALID_VALUE;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, void* buf, size_t n,
    size_t* written) {
  lt_pref_t* x = as_pref(p);
  size_t size;
  void* f = x != NULL ? pref_field(x, a, &size) : NULL;
  return f != NULL ? attr_get(f, size, buf, n, written) : CUBLAS_STATUS_INVALID_VALUE;
}

/* ---- Matmul ---- */

static cublasStatus_t mat_of(cublasLtMatrixLayout_t l, const void* ptr, simcublas_mat_t* m) {
  const lt_layout_t* x = as_layout(l);
  if (x == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((x->order != CUBLASLT_ORDER_COL && x->order != CUBLASLT_ORDER_ROW) || x->plane_offset != 0)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  if (x->rows > INT64_MAX || x->cols > INT64_MAX)
    return CUBLAS_STATUS_INVALID_VALUE;
  m->ptr = ptr;
  m->type = x->type;
  m->row_major = x->order == CUBLASLT_ORDER_ROW;
  m->rows = (int64_t)x->rows;
  m->cols = (int64_t)x->cols;
  m->ld = x->ld;
  m->batch = x->batch;
  m->batch_stride = x->stride;
  return CUBLAS_STATUS_SUCCESS;
}

/* The call described by the descriptors (scalars and pointers as given). */
static cublasStatus_t gemm_of(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                              cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                              cublasLtMatrixLayout_t ld, simcublas_gemm_t* g) {
  const lt_desc_t* d = as_desc(desc);
  if (d == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  if (d->unsupported != 0 || d->transc != CUBLAS_OP_N ||
      (d->pointer_mode != CUBLASLT_POINTER_MODE_HOST &&
       d->pointer_mode != CUBLASLT_POINTER_MODE_DEVICE))
    return CUBLAS_STATUS_NOT_SUPPORTED;
  memset(g, 0, sizeof(*g));
  cublasStatus_t st;
  if ((st = mat_of(la, NULL, &g->a)) != CUBLAS_STATUS_SUCCESS ||
      (st = mat_of(lb, NULL, &g->b)) != CUBLAS_STATUS_SUCCESS ||
      (st = mat_of(lc, NULL, &g->c)) != CUBLAS_STATUS_SUCCESS ||
      (st = mat_of(ld, NULL, &g->d)) != CUBLAS_STATUS_SUCCESS)
    return st;
  g->trans_a = d->transa;
  g->trans_b = d->transb;
  g->compute = d->compute;
  g->scale_type = d->scale;
  g->device_scalars = d->pointer_mode == CUBLASLT_POINTER_MODE_DEVICE;
  g->epilogue = (int)d->epilogue;
  g->bias = d->bias;
  g->bias_type = d->bias_type >= 0 ? d->bias_type : g->d.type;
  g->bias_batch_stride = d->bias_bs;
  g->sm_target = d->sm_target;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
    cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc, cublasLtMatrixLayout_t ld,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t results[],
    int* returned) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  const lt_pref_t* pr = as_pref(pref);
  if (pr == NULL || requested < 1 || results == NULL || returned == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  simcublas_gemm_t g;
  cublasStatus_t st = gemm_of(desc, la, lb, lc, ld, &g);
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  simcublas_shape_t s;
  if ((st = simcublas__check(&g, &s, 0)) != CUBLAS_STATUS_SUCCESS)
    return st;
  /* The heuristic's choice, then the same kernel without split-K if it split. */
  int n = 0;
  for (int alt = 0; alt < 2 && n < requested; alt++) {
    simcublas_algo_t a;
    size_t ws = 0;
    simcublas__plan(&s, g.sm_target, pr->max_ws, alt, &a, &ws);
    if (alt == 1 && n == 1 && memcmp(results[0].algo.data, &a, sizeof(a)) == 0)
      break;
    cublasLtMatmulHeuristicResult_t* r = &results[n++];
    memset(r, 0, sizeof(*r));
    memcpy(r->algo.data, &a, sizeof(a));
    r->workspaceSize = ws;
    r->state = CUBLAS_STATUS_SUCCESS;
    r->wavesCount = simcublas__waves(&s, &a);
  }
  *returned = n;
  return CUBLAS_STATUS_SUCCESS;
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(
    const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
    size_t n, size_t* written) {
  if (algo == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  simcublas_algo_t a;
  memcpy(&a, algo->data, sizeof(a));
  if (a.magic != SIMCUBLAS_ALGO_MAGIC)
    return CUBLAS_STATUS_INVALID_VALUE;
  uint32_t u32;
  int32_t i32;
  uint16_t u16 = 0;
  switch (attr) {
  case CUBLASLT_ALGO_CONFIG_ID:
    i32 = a.id;
    return attr_get(&i32, 4, buf, n, written);
  case CUBLASLT_ALGO_CONFIG_TILE_ID:
    u32 = a.tile;
    return attr_get(&u32, 4, buf, n, written);
  case CUBLASLT_ALGO_CONFIG_SPLITK_NUM:
    i32 = a.splits;
    return attr_get(&i32, 4, buf, n, written);
  case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME:
    u32 = a.splits > 1 ? CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE : CUBLASLT_REDUCTION_SCHEME_NONE;
    return attr_get(&u32, 4, buf, n, written);
  case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION:
    u32 = a.grid > 0;   /* 1: persistent */
    return attr_get(&u32, 4, buf, n, written);
  case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING:
  case CUBLASLT_ALGO_CONFIG_STAGES_ID:
    u32 = 0;
    return attr_get(&u32, 4, buf, n, written);
  case CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID:
  case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID:
    return attr_get(&u16, 2, buf, n, written);
  default:
    return CUBLAS_STATUS_INVALID_VALUE;
  }
}

SIMCUBLAS_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                               const void* alpha, const void* A,
                                               cublasLtMatrixLayout_t la, const void* B,
                                               cublasLtMatrixLayout_t lb, const void* beta,
                                               const void* C, cublasLtMatrixLayout_t lc, void* D,
                                               cublasLtMatrixLayout_t ld,
                                               const cublasLtMatmulAlgo_t* algo, void* workspace,
                                               size_t workspace_size, cudaStream_t stream) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  simcublas_gemm_t g;
  cublasStatus_t st = gemm_of(desc, la, lb, lc, ld, &g);
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  g.a.ptr = A;
  g.b.ptr = B;
  g.c.ptr = C;
  g.d.ptr = D;
  g.alpha = alpha;
  g.beta = beta;
  g.workspace = workspace;
  g.workspace_size = workspace_size;
  g.algo = algo;
  return simcublasLt_gemm(&g, stream);
}

/* ---- Status strings ---- */

const char* simcublas__status_name(cublasStatus_t s) {
  switch (s) {
#define ST(x) \
  case x:     \
    return #x;
    ST(CUBLAS_STATUS_SUCCESS)
    ST(CUBLAS_STATUS_NOT_INITIALIZED)
    ST(CUBLAS_STATUS_ALLOC_FAILED)
    ST(CUBLAS_STATUS_INVALID_VALUE)
    ST(CUBLAS_STATUS_ARCH_MISMATCH)
    ST(CUBLAS_STATUS_MAPPING_ERROR)
    ST(CUBLAS_STATUS_EXECUTION_FAILED)
    ST(CUBLAS_STATUS_INTERNAL_ERROR)
    ST(CUBLAS_STATUS_NOT_SUPPORTED)
    ST(CUBLAS_STATUS_LICENSE_ERROR)
#undef ST
  default:
    return "<unknown>";
  }
}

const char* simcublas__status_string(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS:
    return "success";
  case CUBLAS_STATUS_NOT_INITIALIZED:
    return "the library was not initialized";
  case CUBLAS_STATUS_ALLOC_FAILED:
    return "the resource allocation failed";
  case CUBLAS_STATUS_INVALID_VALUE:
    return "an invalid numeric value was used as an argument";
  case CUBLAS_STATUS_ARCH_MISMATCH:
    return "an absent device architectural feature is required";
  case CUBLAS_STATUS_MAPPING_ERROR:
    return "an access to GPU memory space failed";
  case CUBLAS_STATUS_EXECUTION_FAILED:
    return "the GPU program failed to execute";
  case CUBLAS_STATUS_INTERNAL_ERROR:
    return "an internal operation failed";
  case CUBLAS_STATUS_NOT_SUPPORTED:
    return "the functionality requested is not supported";
  case CUBLAS_STATUS_LICENSE_ERROR:
    return "error detected trying to check the license";
  default:
    return "unknown error";
  }
}

SIMCUBLAS_EXPORT const char* cublasLtGetStatusName(cublasStatus_t s) {
  return simcublas__status_name(s);
}

SIMCUBLAS_EXPORT const char* cublasLtGetStatusString(cublasStatus_t s) {
  return simcublas__status_string(s);
}

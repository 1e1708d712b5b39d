/* cuBLAS and cuBLASLt GEMM calls: interposed on every route a program
 * reaches them by, so that their ops carry footprints (footprint.h).
 *
 * DESIGN: libgrape.so exports the GEMM family under cuBLAS's names: a
 * program linked against libcublas.so.13 / libcublasLt.so.13 binds its
 * versioned references (cublasGemmEx@libcublas.so.13) to these unversioned
 * definitions, since the dynamic linker lets an unversioned definition in the
 * global scope satisfy a versioned reference, as it does for the runtime's
 * names the shim exports. A program (or framework) that
 * dlopen()s cuBLAS and asks dlsym for a GEMM gets this file's route wrapper
 * (the dlsym override, hooks_driver.c, hands 'cublas' names here), which
 * calls exactly the pointer that dlsym found. Each call builds its footprint
 * from its arguments (legacy API: the column-major operands from m, n, k,
 * the leading dimensions, batch strides and types, the handle's pointer
 * mode; cuBLASLt: the layouts' and the descriptor's attributes, read with
 * the library's own getters at call time), makes it the thread's current
 * call and calls the real function; the library's launches, memsets and
 * copies in it are tagged on the way to the driver. What cannot be bounded
 * (pointer-array batches, planar complex, unknown orders, epilogues with
 * auxiliary outputs, scale and amax pointers, unknown types) gives an
 * opaque footprint: those ops are barriers. GRAPE_CONCURRENCY=off, off mode
 * and nested calls pass straight through. The _64 forms, batched GEMMs of
 * pointer arrays and grouped GEMMs are not interposed: their kernels are
 * barriers like any kernel launched outside a known call. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cublasLt.h>
#include <cublas_api.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cublas.h"
#include "footprint.h"
#include "graph.h"
#include "hooks.h"
#include "state.h"
#include "options.h"
#include "real.h"
#include "streams.h"
#include "util/list.h"

/* In C, cublas_api.h declares no __half forms: they take the same 16 bits. */
typedef uint16_t cb_half;

/* ---- The rows: every interposed name, its library ---- */

#define GRAPE_CUBLAS_ROWS(X)                                 \
  X(cublasGemmEx, 0)                                         \
  X(cublasGemmStridedBatchedEx, 0)                           \
  X(cublasSgemm_v2, 0)                                       \
  X(cublasDgemm_v2, 0)                                       \
  X(cublasHgemm, 0)                                          \
  X(cublasSgemmStridedBatched, 0)                            \
  X(cublasDgemmStridedBatched, 0)                            \
  X(cublasHgemmStridedBatched, 0)                            \
  X(cublasSgemmEx, 0)                                        \
  X(cublasLtMatmul, 1)

enum {
#define ROW_ENUM(name, lt) CB_##name,
  GRAPE_CUBLAS_ROWS(ROW_ENUM)
#undef ROW_ENUM
  CB_COUNT
};

static const char* const row_name[CB_COUNT] = {
#define ROW_NAME(name, lt) #name,
  GRAPE_CUBLAS_ROWS(ROW_NAME)
#undef ROW_NAME
};
static const int row_lt[CB_COUNT] = {
#define ROW_LT(name, lt) lt,
  GRAPE_CUBLAS_ROWS(ROW_LT)
#undef ROW_LT
};

/* Real functions: [0] behind the export, [1] what dlsym found. */
static void* real_fn[2][CB_COUNT];

static const char* lib_of(int lt) {
  return lt ? "libcublasLt.so.13" : "libcublas.so.13";
}

/* The next definition of name, else the one in the loaded library. */
static void* lookup(const char* name, int lt) {
  void* p = grape__real_dlsym(RTLD_NEXT, name);
  if (p == NULL) {
    void* h = dlopen(lib_of(lt), RTLD_LAZY | RTLD_NOLOAD);
    if (h != NULL) {
      p = grape__real_dlsym(h, name);
      dlclose(h);
    }
  }
  return p;
}

static void* real_export(int row) {
  void* p = __atomic_load_n(&real_fn[0][row], __ATOMIC_RELAXED);
  if (__builtin_expect(p == NULL, 0)) {
    p = lookup(row_name[row], row_lt[row]);
    if (p == NULL)
      grape_log_warn("no real %s found; the call fails with CUBLAS_STATUS_NOT_INITIALIZED",
                     row_name[row]);
    __atomic_store_n(&real_fn[0][row], p, __ATOMIC_RELAXED);
  }
  return p;
}

/* ---- When footprints are made ---- */

static int conc_mode = -1;

/* True when this call gets a footprint: the shim is on, concurrency is not
 * off, and the thread is not inside another interposed call. A GEMM called
 * before the shim started (from another library's constructor, before the
 * shim's) passes through: its kernels are then ops without a footprint,
 * barriers like any kernel launched outside a known call. */
static int footprints_on(void) {
  if (!grape__on() || grape__call != NULL)
    return 0;
  int m = __atomic_load_n(&conc_mode, __ATOMIC_RELAXED);
  if (m < 0) {
    m = (int)grape__option_get(grape_option_concurrency);
    __atomic_store_n(&conc_mode, m, __ATOMIC_RELAXED);
  }
  return m != GRAPE_CONC_OFF;
}

/* Library getters the footprints read, resolved once. */
static cublasStatus_t (*get_pointer_mode)(cublasHandle_t, cublasPointerMode_t*);
static cublasStatus_t (*layout_get)(cublasLtMatrixLayout_t, cublasLtMatrixLayoutAttribute_t, void*,
                                    size_t, size_t*);
static cublasStatus_t (*desc_get)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, void*,
                                  size_t, size_t*);

static void getters_once(void) {
  *(void**)&get_pointer_mode = lookup("cublasGetPointerMode_v2", 0);
  *(void**)&layout_get = lookup("cublasLtMatrixLayoutGetAttribute", 1);
  *(void**)&desc_get = lookup("cublasLtMatmulDescGetAttribute", 1);
}

static void getters(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, getters_once);
}

/* A host scalar of the scale type is zero (unknown types: not zero). */
static int host_zero(const void* v, int scale_type) {
  if (v == NULL)
    return 0;
  switch (scale_type) {
  case CUDA_R_32F: {
    float f;
    memcpy(&f, v, sizeof f);
    return f == 0.0f;
  }
  case CUDA_R_64F: {
    double d;
    memcpy(&d, v, sizeof d);
    return d == 0.0;
  }
  case CUDA_R_16F:
  case CUDA_R_16BF: {
    uint16_t h;
    memcpy(&h, v, sizeof h);
    return (h & 0x7fff) == 0;
  }
  case CUDA_R_32I: {
    int32_t i;
    memcpy(&i, v, sizeof i);
    return i == 0;
  }
  default:
    return 0;
  }
}

/* The throughput class of a GEMM (the estimator's weights only). */
static int math_of(int compute, int atype) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
  case CUBLAS_COMPUTE_32F_FAST_16F:
  case CUBLAS_COMPUTE_32F_FAST_16BF:
    return GRAPE_MATH_TENSOR16;
  case CUBLAS_COMPUTE_32F_FAST_TF32:
    return GRAPE_MATH_TF32;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return GRAPE_MATH_SIMT64;
  default:
    return atype == CUDA_R_16F || atype == CUDA_R_16BF || atype == CUDA_R_8F_E4M3 ||
                   atype == CUDA_R_8F_E5M2
               ? GRAPE_MATH_TENSOR16
               : GRAPE_MATH_SIMT32;
  }
}

/* ---- The legacy API: column-major operands ---- */

typedef struct legacy_s {
  cublasHandle_t h;
  int ta, tb;
  int m, n, k;
  const void *alpha, *A, *B, *beta;
  const void* C;
  int atype, btype, ctype, lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
  int compute, scale_type;
} legacy_t;

static void operand(grape_foot_t* f, const void* p, int64_t rows, int64_t cols, int64_t ld,
                    int64_t batch, int64_t stride, int type, int write) {
  uint64_t lo, hi;
  uint32_t esize = grape__dtype_size(type);
  if (grape__matrix_hull((uint64_t)(uintptr_t)p, rows, cols, ld, 0, batch, stride, esize, &lo, &hi) != 0 ||
      (esize == 0 && rows > 0 && cols > 0)) {
    f->why = GRAPE_WHY_CALL;
    return;
  }
  grape__foot_add(f, lo, hi, write);
}

static void legacy_foot(grape_call_t* c, const legacy_t* g) {
  grape_foot_t* f = &c->foot;
  grape__foot_begin(f);
  memset(&c->ws, 0, sizeof(c->ws));
  c->r = NULL;
  c->gen = c->tag = 0;
  getters();
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_DEVICE;   /* when unknown: the conservative one */
  if (get_pointer_mode != NULL && get_pointer_mode(g->h, &mode) != CUBLAS_STATUS_SUCCESS)
    mode = CUBLAS_POINTER_MODE_DEVICE;
  int ta = g->ta != CUBLAS_OP_N, tb = g->tb != CUBLAS_OP_N;
  operand(f, g->A, ta ? g->k : g->m, ta ? g->m : g->k, g->lda, g->batch, g->sa, g->atype, 0);
  operand(f, g->B, tb ? g->n : g->k, tb ? g->k : g->n, g->ldb, g->batch, g->sb, g->btype, 0);
  uint32_t ssize = grape__dtype_size(g->scale_type);
  int device = mode == CUBLAS_POINTER_MODE_DEVICE;
  if (device) {
    uint64_t a = (uint64_t)(uintptr_t)g->alpha, b = (uint64_t)(uintptr_t)g->beta;
    grape__foot_add(f, a, a + (ssize ? ssize : 16), 0);
    grape__foot_add(f, b, b + (ssize ? ssize : 16), 0);
  }
  if (device || !host_zero(g->beta, g->scale_type))
    operand(f, g->C, g->m, g->n, g->ldc, g->batch, g->sc, g->ctype, 0);
  operand(f, g->C, g->m, g->n, g->ldc, g->batch, g->sc, g->ctype, 1);
  f->math = (uint8_t)math_of(g->compute, g->atype);
  double b = g->batch > 0 ? g->batch : 0;
  f->flops = 2.0 * g->m * (double)g->n * g->k * b;
  f->tiles = f->math == GRAPE_MATH_TENSOR16 || f->math == GRAPE_MATH_TF32 ? grape__foot_tiles(g->m, g->n, b) : 0;
  f->bytes = b * ((double)g->m * g->k * grape__dtype_size(g->atype) +
                  (double)g->k * g->n * grape__dtype_size(g->btype) +
                  2.0 * g->m * (double)g->n * grape__dtype_size(g->ctype));
}

/* The scale type cublasGemmEx uses for a compute type. */
static int scale_of(int compute) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    return CUDA_R_16F;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return CUDA_R_64F;
  case CUBLAS_COMPUTE_32I:
  case CUBLAS_COMPUTE_32I_PEDANTIC:
    return CUDA_R_32I;
  default:
    return CUDA_R_32F;
  }
}

/* Calls expr with call c current on this thread. */
#define WITH_CALL(c, st, expr) \
  do {                         \
    grape__call = (c);         \
    (st) = (expr);             \
    grape__call = NULL;        \
  } while (0)

/* ---- cuBLASLt: layouts and descriptor attributes ---- */

/* Reads attribute a of layout l (size bytes) into v; @return 0, or -1. */
static int layout_attr(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a, void* v, size_t size) {
  size_t got = 0;
  return layout_get != NULL && layout_get(l, a, v, size, &got) == CUBLAS_STATUS_SUCCESS && got == size ? 0 : -1;
}

static int desc_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, void* v, size_t size) {
  size_t got = 0;
  return desc_get != NULL && desc_get(d, a, v, size, &got) == CUBLAS_STATUS_SUCCESS && got == size ? 0 : -1;
}

/* The hull of matrix p laid out as l, into f. @return its rows (for a bias). */
static int64_t lt_operand(grape_foot_t* f, const void* p, cublasLtMatrixLayout_t l, int write) {
  uint32_t type = 0, mode = 0;
  int32_t order = CUBLASLT_ORDER_COL, batch = 1;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0, stride = 0, plane = 0;
  if (l == NULL || layout_attr(l, CUBLASLT_MATRIX_LAYOUT_TYPE, &type, 4) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, 4) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, 8) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_COLS, &cols, 8) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_LD, &ld, 8) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, 8) != 0 ||
      layout_attr(l, CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, &plane, 8) != 0 ||
      (order != CUBLASLT_ORDER_COL && order != CUBLASLT_ORDER_ROW) || plane != 0 ||
      rows > INT64_MAX || cols > INT64_MAX) {
    f->why = GRAPE_WHY_CALL;
    return 0;
  }
  /* A library that does not know the batch mode has only strided batches. */
  if (layout_attr(l, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &mode, 4) == 0 && mode != CUBLASLT_BATCH_MODE_STRIDED) {
    f->why = GRAPE_WHY_CALL;
    return 0;
  }
  uint64_t lo, hi;
  uint32_t esize = grape__dtype_size((int)type);
  if ((esize == 0 && rows > 0 && cols > 0) ||
      grape__matrix_hull((uint64_t)(uintptr_t)p, (int64_t)rows, (int64_t)cols, ld,
                         order == CUBLASLT_ORDER_ROW, batch, stride, esize, &lo, &hi) != 0) {
    f->why = GRAPE_WHY_CALL;
    return 0;
  }
  grape__foot_add(f, lo, hi, write);
  return (int64_t)rows;
}

static void lt_foot(grape_call_t* c, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                    cublasLtMatrixLayout_t la, const void* B, cublasLtMatrixLayout_t lb,
                    const void* beta, const void* C, cublasLtMatrixLayout_t lc, void* D,
                    cublasLtMatrixLayout_t ld, void* ws, size_t ws_size) {
  grape_foot_t* f = &c->foot;
  grape__foot_begin(f);
  c->r = NULL;
  c->gen = c->tag = 0;
  c->ws = (grape_span_t){(uint64_t)(uintptr_t)ws, ws != NULL ? (uint64_t)(uintptr_t)ws + ws_size : (uint64_t)(uintptr_t)ws};
  getters();
  int32_t pmode = CUBLASLT_POINTER_MODE_HOST, compute = CUBLAS_COMPUTE_32F, scale = CUDA_R_32F;
  uint32_t epi = CUBLASLT_EPILOGUE_DEFAULT;
  int32_t bias_type = -1;
  const void* bias = NULL;
  int64_t bias_bs = 0;
  if (desc == NULL || desc_attr(desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &pmode, 4) != 0 ||
      desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, 4) != 0 ||
      desc_attr(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale, 4) != 0 ||
      desc_attr(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, 4) != 0 ||
      (pmode != CUBLASLT_POINTER_MODE_HOST && pmode != CUBLASLT_POINTER_MODE_DEVICE)) {
    f->why = GRAPE_WHY_CALL;
    return;
  }
  /* Epilogues whose only extra input is a bias vector; the others write
   * auxiliary outputs or gradients. */
  if (epi != CUBLASLT_EPILOGUE_DEFAULT && epi != CUBLASLT_EPILOGUE_RELU && epi != CUBLASLT_EPILOGUE_BIAS &&
      epi != CUBLASLT_EPILOGUE_RELU_BIAS && epi != CUBLASLT_EPILOGUE_GELU &&
      epi != CUBLASLT_EPILOGUE_GELU_BIAS) {
    f->why = GRAPE_WHY_CALL;
    return;
  }
  /* Scale, amax and auxiliary pointers: other inputs and outputs (fp8). */
  static const cublasLtMatmulDescAttributes_t extra[] = {
    CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER,
    CUBLASLT_MATMUL_DESC_AMAX_D_POINTER,  CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER,
  };
  for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
    void* p = NULL;
    if (desc_attr(desc, extra[i], &p, sizeof(p)) == 0 && p != NULL) {
      f->why = GRAPE_WHY_CALL;
      return;
    }
  }
  lt_operand(f, A, la, 0);
  lt_operand(f, B, lb, 0);
  int device = pmode == CUBLASLT_POINTER_MODE_DEVICE;
  uint32_t ssize = grape__dtype_size(scale);
  if (device) {
    uint64_t a = (uint64_t)(uintptr_t)alpha, b = (uint64_t)(uintptr_t)beta;
    grape__foot_add(f, a, a + (ssize ? ssize : 16), 0);
    grape__foot_add(f, b, b + (ssize ? ssize : 16), 0);
  }
  if (device || !host_zero(beta, scale))
    lt_operand(f, C, lc, 0);
  int64_t rows = lt_operand(f, D, ld, 1);
  if (epi & CUBLASLT_EPILOGUE_BIAS) {
    int32_t batch = 1;
    if (desc_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)) != 0 ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type, 4) != 0 ||
        desc_attr(desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, &bias_bs, 8) != 0 ||
        layout_attr(ld, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4) != 0) {
      f->why = GRAPE_WHY_CALL;
      return;
    }
    /* One value per row of D, of at most 8 bytes (its type, when set). */
    uint32_t es = bias_type >= 0 && grape__dtype_size(bias_type) ? grape__dtype_size(bias_type) : 8;
    uint64_t lo, hi;
    if (grape__matrix_hull((uint64_t)(uintptr_t)bias, rows, 1, rows > 0 ? rows : 1, 0, batch, bias_bs,
                           es, &lo, &hi) != 0) {
      f->why = GRAPE_WHY_CALL;
      return;
    }
    grape__foot_add(f, lo, hi, 0);
  }
  /* Work, for the estimator: m n k from D's rows and columns and A's k. */
  uint64_t m = 0, n = 0, ar = 0, ac = 0;
  int32_t tra = CUBLAS_OP_N, batch = 1;
  uint32_t atype = 0;
  if (layout_attr(ld, CUBLASLT_MATRIX_LAYOUT_ROWS, &m, 8) == 0 &&
      layout_attr(ld, CUBLASLT_MATRIX_LAYOUT_COLS, &n, 8) == 0 &&
      layout_attr(la, CUBLASLT_MATRIX_LAYOUT_ROWS, &ar, 8) == 0 &&
      layout_attr(la, CUBLASLT_MATRIX_LAYOUT_COLS, &ac, 8) == 0 &&
      layout_attr(la, CUBLASLT_MATRIX_LAYOUT_TYPE, &atype, 4) == 0 &&
      layout_attr(ld, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4) == 0) {
    desc_attr(desc, CUBLASLT_MATMUL_DESC_TRANSA, &tra, 4);
    double k = (double)(tra == CUBLAS_OP_N ? ac : ar);
    f->flops = 2.0 * (double)m * (double)n * k * batch;
    f->bytes = batch * ((double)ar * ac + k * n) * grape__dtype_size((int)atype) +
               batch * 2.0 * (double)m * n * 4;
    f->math = (uint8_t)math_of(compute, (int)atype);
    f->tiles = f->math == GRAPE_MATH_TENSOR16 || f->math == GRAPE_MATH_TF32
                   ? grape__foot_tiles((double)m, (double)n, batch) : 0;
  }
}

/* ---- go mode: SM-count targets, set on the call ----
 *
 * DESIGN (GRAPE_CONCURRENCY=go): the cache's policy publishes, on the trie
 * node a stream's region stands on, the SM-count target for the library
 * call whose first op leads on from there (grape_gc_hint). A GEMM call on
 * that stream reads it and, when there is one, makes the call with it:
 * legacy calls with cublasSetSmCountTarget on the handle, restored to the
 * handle's own value after the call; cuBLASLt calls with a copy of the
 * program's matmul descriptor carrying CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET,
 * and, when the program passed an algorithm (chosen for the whole device),
 * the heuristic's first algorithm for the copy, asked again under the
 * target. The program's handle, descriptor and algorithm are never left
 * changed. Another algorithm may round differently: the first time a shape
 * gets a target, the call is made once both ways on the same sampled
 * operands (a private buffer of pseudo-random values, on a private stream,
 * outside grape's recording) and the largest relative difference goes to
 * the report. What applying targets costs the host (graph mode's clock
 * around it) goes to the policy, which weighs it against what the plan gains. */

static cublasStatus_t (*get_stream)(cublasHandle_t, cudaStream_t*);
static cublasStatus_t (*set_stream)(cublasHandle_t, cudaStream_t);
static cublasStatus_t (*get_sm_target)(cublasHandle_t, int*);
static cublasStatus_t (*set_sm_target)(cublasHandle_t, int);
static cublasStatus_t (*set_pointer_mode)(cublasHandle_t, cublasPointerMode_t);
static cublasStatus_t (*gemm_ex)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                 const void*, const void*, cudaDataType, int, const void*,
                                 cudaDataType, int, const void*, void*, cudaDataType, int,
                                 cublasComputeType_t, cublasGemmAlgo_t);
static cublasStatus_t (*desc_create)(cublasLtMatmulDesc_t*, cublasComputeType_t, cudaDataType_t);
static cublasStatus_t (*desc_destroy)(cublasLtMatmulDesc_t);
static cublasStatus_t (*desc_set)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t, const void*, size_t);
static cublasStatus_t (*pref_create)(cublasLtMatmulPreference_t*);
static cublasStatus_t (*pref_destroy)(cublasLtMatmulPreference_t);
static cublasStatus_t (*pref_set)(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                  const void*, size_t);
static cublasStatus_t (*heuristic)(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                   cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                   cublasLtMatrixLayout_t, cublasLtMatmulPreference_t, int,
                                   cublasLtMatmulHeuristicResult_t*, int*);

/* The runtime calls of the sampled check, real ones (real.h). */
static struct {
  cudaError_t (*malloc_)(void**, size_t, cudaStream_t);
  cudaError_t (*free_)(void*, cudaStream_t);
  cudaError_t (*memcpy_)(void*, const void*, size_t, enum cudaMemcpyKind, cudaStream_t);
  cudaError_t (*memset_)(void*, int, size_t, cudaStream_t);
  cudaError_t (*stream_create)(cudaStream_t*, unsigned);
  cudaError_t (*stream_destroy)(cudaStream_t);
  cudaError_t (*stream_sync)(cudaStream_t);
  cudaError_t (*stream_query)(cudaStream_t);
  cudaError_t (*malloc_host)(void**, size_t);
} rt;

static void go_once(void) {
  *(void**)&rt.malloc_ = grape__real_runtime("cudaMallocAsync");
  *(void**)&rt.free_ = grape__real_runtime("cudaFreeAsync");
  *(void**)&rt.memcpy_ = grape__real_runtime("cudaMemcpyAsync");
  *(void**)&rt.memset_ = grape__real_runtime("cudaMemsetAsync");
  *(void**)&rt.stream_create = grape__real_runtime("cudaStreamCreateWithFlags");
  *(void**)&rt.stream_destroy = grape__real_runtime("cudaStreamDestroy");
  *(void**)&rt.stream_sync = grape__real_runtime("cudaStreamSynchronize");
  *(void**)&rt.stream_query = grape__real_runtime("cudaStreamQuery");
  *(void**)&rt.malloc_host = grape__real_runtime("cudaMallocHost");
  *(void**)&get_stream = lookup("cublasGetStream_v2", 0);
  *(void**)&set_stream = lookup("cublasSetStream_v2", 0);
  *(void**)&get_sm_target = lookup("cublasGetSmCountTarget", 0);
  *(void**)&set_sm_target = lookup("cublasSetSmCountTarget", 0);
  *(void**)&set_pointer_mode = lookup("cublasSetPointerMode_v2", 0);
  *(void**)&gemm_ex = lookup("cublasGemmEx", 0);
  *(void**)&desc_create = lookup("cublasLtMatmulDescCreate", 1);
  *(void**)&desc_destroy = lookup("cublasLtMatmulDescDestroy", 1);
  *(void**)&desc_set = lookup("cublasLtMatmulDescSetAttribute", 1);
  *(void**)&pref_create = lookup("cublasLtMatmulPreferenceCreate", 1);
  *(void**)&pref_destroy = lookup("cublasLtMatmulPreferenceDestroy", 1);
  *(void**)&pref_set = lookup("cublasLtMatmulPreferenceSetAttribute", 1);
  *(void**)&heuristic = lookup("cublasLtMatmulAlgoGetHeuristic", 1);
}

static void go_fns(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, go_once);
}

/* The clock a target's host cost is measured on: graph mode's (on the sim
 * its host clock, which the shim's work per target is charged to), so that
 * the plans' host-cost rule does not depend on how fast the machine ran. */
static double target_clock(void) {
  return (double)grape__clock_ns();
}

/* A target restored from time t (its end's work began then; its beginning
 * cost `begun`): what it cost the host around the call joins the plans'. */
static void target_done(double begun, double t) {
  grape__charge_work(SIMCU_WORK_SHIM_TARGET, 1);
  grape_gc_hint_cost(grape__gc_peek(), begun + target_clock() - t, 1);
}

/* The run's sampled checks (report.c): shapes checked, those whose outputs
 * held values, and the largest relative difference seen. */
static pthread_mutex_t go_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t go_checks, go_checks_valued, go_targets;
static double go_max_rel;
typedef struct checked_s {
  int m, n, k, ta, tb, atype, ctype, compute, target;
} checked_t;
static checked_t* go_seen;
static size_t go_nseen, go_cap;

void grape__cublas_go_stats(uint64_t* targets, uint64_t* checks, uint64_t* valued, double* max_rel) {
  pthread_mutex_lock(&go_lock);
  *targets = go_targets;
  *checks = go_checks;
  *valued = go_checks_valued;
  *max_rel = go_max_rel;
  pthread_mutex_unlock(&go_lock);
}

/* True the first time (shape, target) is met: it is to be checked. */
static int go_first(const checked_t* k) {
  int first = 1;
  pthread_mutex_lock(&go_lock);
  go_targets++;
  for (size_t i = 0; i < go_nseen && first; i++)
    first = memcmp(&go_seen[i], k, sizeof(*k)) != 0;
  if (first && go_nseen < 4096) {
    if (go_nseen == go_cap) {
      size_t cap = go_cap ? 2 * go_cap : 16;
      checked_t* v = realloc(go_seen, cap * sizeof(*v));
      if (v == NULL)
        first = 0;
      else {
        go_seen = v;
        go_cap = cap;
      }
    }
    if (first)
      go_seen[go_nseen++] = *k;
  }
  pthread_mutex_unlock(&go_lock);
  return first;
}

/* The target published for stream st's next op (0: none), in go mode. */
static uint32_t go_target_for(cudaStream_t st) {
  if (__atomic_load_n(&conc_mode, __ATOMIC_RELAXED) != GRAPE_CONC_GO)
    return 0;
  grape_stream_t* s = grape__stream_peek(grape__stream_key((const void*)st, 0));
  if (s == NULL)
    return 0;
  spin_lock(&s->lock);
  uint32_t t = grape_gc_hint(__atomic_load_n(&s->region.cursor.node, __ATOMIC_RELAXED));
  spin_unlock(&s->lock);
  return t;
}

static double elem_get(const void* p, size_t i, int type) {
  switch (type) {
  case CUDA_R_32F:
    return ((const float*)p)[i];
  case CUDA_R_64F:
    return ((const double*)p)[i];
  case CUDA_R_16BF: {
    uint32_t u = (uint32_t)((const uint16_t*)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  case CUDA_R_16F: {
    uint16_t h = ((const uint16_t*)p)[i];
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : (e == 31 ? INFINITY : ldexp(m + 1024, e - 25));
    return (h & 0x8000) ? -v : v;
  }
  default:
    return 0;
  }
}

/* Sampled operand values in [-1, 1): a fixed sequence, exact in every type. */
static void elem_fill(void* p, size_t count, int type, uint32_t seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < count; i++) {
    x = x * 1664525u + 1013904223u;
    int v = (int)(x >> 25) - 64;   /* -64 .. 63 */
    float f = (float)v / 64.0f;
    switch (type) {
    case CUDA_R_32F:
      ((float*)p)[i] = f;
      break;
    case CUDA_R_64F:
      ((double*)p)[i] = f;
      break;
    case CUDA_R_16BF: {
      uint32_t u;
      memcpy(&u, &f, 4);
      ((uint16_t*)p)[i] = (uint16_t)(u >> 16);
      break;
    }
    case CUDA_R_16F: {
      /* |v| / 64 with v < 128: exact in fp16 */
      uint16_t h = 0;
      if (v != 0) {
        int a = v < 0 ? -v : v, e = 0;
        while ((a >> e) > 1)
          e++;
        uint32_t m = ((uint32_t)a << (10 - e)) & 1023;
        h = (uint16_t)(((e - 6 + 15) << 10) | m | (v < 0 ? 0x8000 : 0));
      }
      ((uint16_t*)p)[i] = h;
      break;
    }
    default:
      break;
    }
  }
}

#define CHECK_BYTES ((size_t)256 << 10)   /* sampled operand block; D read back: twice this */

/* Fills n elements of esize bytes at device d: a block of sampled values
 * (page-locked host buffer h of CHECK_BYTES) first, the rest with one byte
 * pattern (a memset costs the device less than copies of the block). Queued
 * on st: nothing waits. */
static int fill_dev(void* d, void* h, size_t n, uint32_t esize, int type, uint32_t seed, cudaStream_t st) {
  size_t bytes = n * esize, have = CHECK_BYTES / esize * esize;
  if (have > bytes)
    have = bytes;
  elem_fill(h, have / esize, type, seed);
  if (rt.memcpy_(d, h, have, cudaMemcpyHostToDevice, st) != cudaSuccess)
    return -1;
  if (have < bytes && rt.memset_((char*)d + have, 0x3c, bytes - have, st) != cudaSuccess)
    return -1;
  return 0;
}

/* A sampled check in flight. Its work is queued on a private stream and its
 * results are compared once that stream is done (go_checks_poll), so the
 * program's thread never waits for a busy device: a check that waited cost
 * the showcase its device's pipeline once per shape (go ended 3.0% later
 * than safe under default, 5.6% under fair; without the wait go is the
 * faster). Its host memory is page-locked, so the copies back return at
 * once; the blocks are kept for later checks (freeing page-locked memory may
 * wait for the device) and left to the driver at exit. */
typedef struct pending_s {
  cudaStream_t priv;
  void* dev[4];                 /* A, B, D without and with the target */
  void* host;                   /* page-locked: A's and B's blocks, then D's two samples */
  size_t host_bytes;
  size_t cols;                  /* D's first and last columns read back, each */
  int m, n, k, ldc, ctype, t;
  grape_gc_t* gc;               /* the cache told its device is shared (or NULL) */
  grape_list_t link;            /* on go_pending, go_spare or a poll's own list */
} pending_t;
/* Both under go_lock. go_in_flight counts go_pending's checks: written under
 * go_lock, read without it (atomics) by a call that only asks whether a
 * poll may find anything. */
static grape_list_t go_pending = GRAPE_LIST_INIT(go_pending);   /* checks in flight */
static grape_list_t go_spare = GRAPE_LIST_INIT(go_spare);       /* finished checks, host block kept */
static int go_in_flight;
static pid_t go_pid;            /* the process the checks' streams belong to */

/* A check's host block of at least `bytes` (a kept one, or new), in *p. */
static int host_block(pending_t* p, size_t bytes) {
  pthread_mutex_lock(&go_lock);
  for (grape_list_t* q = grape__list_first(&go_spare); q != &go_spare; q = q->next)
    if (GRAPE_LIST_DATA(q, pending_t, link)->host_bytes >= bytes) {
      pending_t* kept = GRAPE_LIST_DATA(q, pending_t, link);
      grape__list_remove(q);
      p->host = kept->host;
      p->host_bytes = kept->host_bytes;
      free(kept);
      break;
    }
  pthread_mutex_unlock(&go_lock);
  if (p->host == NULL && rt.malloc_host(&p->host, bytes) == cudaSuccess)
    p->host_bytes = bytes;
  return p->host != NULL ? 0 : -1;
}

/* p's host block joins the kept ones, and p goes (its stream is destroyed:
 * its frees run once its work is done). */
static void check_release(pending_t* p) {
  if (p->priv != NULL) {
    for (int i = 0; i < 4; i++)
      if (p->dev[i] != NULL)
        rt.free_(p->dev[i], p->priv);
    rt.stream_destroy(p->priv);
  }
  if (p->host == NULL) {
    free(p);
    return;
  }
  pthread_mutex_lock(&go_lock);
  grape__list_insert_head(&go_spare, &p->link);
  pthread_mutex_unlock(&go_lock);
}

/* The finished check p's samples compared: the largest relative
 * difference joins the report. */
static void check_compare(const pending_t* p) {
  size_t ec = grape__dtype_size(p->ctype), piece = 2 * p->cols * (size_t)p->ldc * ec;
  const char* h1 = (const char*)p->host + 2 * CHECK_BYTES;
  const char* h2 = h1 + piece;
  double worst = 0;
  int valued = 0;
  for (size_t j = 0; j < 2 * p->cols; j++)
    for (int i = 0; i < p->m; i++) {
      size_t at = j * p->ldc + i;
      double a = elem_get(h1, at, p->ctype), b = elem_get(h2, at, p->ctype);
      valued |= a != 0 || b != 0;
      double den = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
      double rel = den > 0 ? fabs(a - b) / den : 0;
      if (!(rel <= worst))
        worst = rel;   /* NaN counts as the worst */
    }
  pthread_mutex_lock(&go_lock);
  go_checks++;
  go_checks_valued += valued;
  if (!(worst <= go_max_rel))
    go_max_rel = worst;
  pthread_mutex_unlock(&go_lock);
  if (worst > 0)
    grape_log_info("go: an SM-count target of %d changes a %dx%dx%d GEMM's results by up to %.3g "
                   "(relative)", p->t, p->m, p->n, p->k, worst);
}

/* The checks in flight whose streams are done (all of them, waiting, with
 * wait set) compared and released. */
static void go_checks_poll(int wait) {
  if (__atomic_load_n(&go_in_flight, __ATOMIC_RELAXED) == 0 || getpid() != go_pid)
    return;
  /* Taken out whole: the driver is asked without the lock held. */
  grape_list_t all = GRAPE_LIST_INIT(all), left = GRAPE_LIST_INIT(left);
  pthread_mutex_lock(&go_lock);
  grape__list_move_all(&go_pending, &all);
  __atomic_store_n(&go_in_flight, 0, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&go_lock);
  int saved_depth = grape__depth, kept = 0;
  grape__depth = saved_depth + 1;   /* every hook passes straight through */
  while (!grape__list_empty(&all)) {
    pending_t* p = GRAPE_LIST_DATA(grape__list_first(&all), pending_t, link);
    grape__list_remove(&p->link);
    cudaError_t e = wait ? rt.stream_sync(p->priv) : rt.stream_query(p->priv);
    if (e == cudaErrorNotReady) {
      grape__list_insert_tail(&left, &p->link);
      kept++;
      continue;
    }
    if (e == cudaSuccess)
      check_compare(p);
    grape_gc_device_shared(p->gc, 0);
    check_release(p);
  }
  grape__depth = saved_depth;
  if (kept > 0) {
    pthread_mutex_lock(&go_lock);
    grape__list_move_all(&left, &go_pending);
    __atomic_store_n(&go_in_flight, go_in_flight + kept, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&go_lock);
  }
}

/* At exit (before the runtime's own exit handlers, registered before this
 * one): the checks still in flight end, so the report has them. */
static void go_checks_drain(void) {
  grape__own_work(1);
  go_checks_poll(1);
  grape__own_work(0);
}

static void go_drain_at_exit(void) {
  go_pid = getpid();
  atexit(go_checks_drain);
}

/* The legacy call g queued once with and once without target t on sampled
 * operands of its shape (one batch entry), outside grape's recording, on a
 * private stream; compared once done (go_checks_poll). */
static void go_check_legacy(const legacy_t* g, int t) {
  go_fns();
  uint32_t ea = grape__dtype_size(g->atype), eb = grape__dtype_size(g->btype),
           ec = grape__dtype_size(g->ctype);
  if (gemm_ex == NULL || set_sm_target == NULL || get_stream == NULL || set_stream == NULL ||
      set_pointer_mode == NULL || rt.malloc_ == NULL || rt.free_ == NULL || rt.memcpy_ == NULL ||
      rt.memset_ == NULL || rt.stream_create == NULL || rt.stream_destroy == NULL ||
      rt.stream_sync == NULL || rt.stream_query == NULL || rt.malloc_host == NULL || ea == 0 ||
      eb == 0 || ec == 0 || g->m <= 0 || g->n <= 0 || g->k <= 0)
    return;
  static pthread_once_t at_exit = PTHREAD_ONCE_INIT;
  pthread_once(&at_exit, go_drain_at_exit);
  int ta = g->ta != CUBLAS_OP_N, tb = g->tb != CUBLAS_OP_N;
  size_t na = (size_t)g->lda * (ta ? g->m : g->k), nb = (size_t)g->ldb * (tb ? g->k : g->n),
         nc = (size_t)g->ldc * g->n;
  /* The sample read back: D's first and last columns, up to CHECK_BYTES
   * each. */
  size_t cols = (size_t)(CHECK_BYTES / ((size_t)g->ldc * ec));
  if (cols < 1)
    cols = 1;
  if (cols * 2 > (size_t)g->n)
    cols = ((size_t)g->n + 1) / 2;
  size_t piece = cols * g->ldc * ec, tail = ((size_t)g->n - cols) * g->ldc * ec;
  pending_t* p = calloc(1, sizeof(*p));
  if (p == NULL)
    return;
  *p = (pending_t){.cols = cols, .m = g->m, .n = g->n, .k = g->k, .ldc = g->ldc, .ctype = g->ctype, .t = t};
  cudaStream_t old_stream = NULL;
  cublasPointerMode_t old_mode = CUBLAS_POINTER_MODE_HOST;
  int old_t = 0, ok = 0;
  int saved_depth = grape__depth;
  grape__depth = saved_depth + 1;   /* every hook passes straight through */
  if (host_block(p, 2 * CHECK_BYTES + 4 * piece) == 0 &&
      rt.stream_create(&p->priv, cudaStreamNonBlocking) == cudaSuccess &&
      rt.malloc_(&p->dev[0], na * ea, p->priv) == cudaSuccess &&
      rt.malloc_(&p->dev[1], nb * eb, p->priv) == cudaSuccess &&
      rt.malloc_(&p->dev[2], nc * ec, p->priv) == cudaSuccess &&
      rt.malloc_(&p->dev[3], nc * ec, p->priv) == cudaSuccess) {
    /* A block of pseudo-random values at each operand's start, a byte
     * pattern after it (an upload of the whole would cost a large
     * operand's transfer). */
    char* h = p->host;
    ok = fill_dev(p->dev[0], h, na, ea, g->atype, 1, p->priv) == 0 &&
         fill_dev(p->dev[1], h + CHECK_BYTES, nb, eb, g->btype, 2, p->priv) == 0;
    /* beta 0: D is written whole; its sampled columns zeroed first, so that a
     * GEMM whose body does not run (the sim's timed-only runs) reads back the
     * same zeros from both, not what the allocator's memory held. */
    for (int i = 2; i < 4 && ok; i++)
      ok = rt.memset_(p->dev[i], 0, piece, p->priv) == cudaSuccess &&
           rt.memset_((char*)p->dev[i] + tail, 0, piece, p->priv) == cudaSuccess;
    get_stream(g->h, &old_stream);
    if (get_pointer_mode != NULL)
      get_pointer_mode(g->h, &old_mode);
    if (get_sm_target != NULL)
      get_sm_target(g->h, &old_t);
    set_stream(g->h, p->priv);
    set_pointer_mode(g->h, CUBLAS_POINTER_MODE_HOST);
    double one64 = 1, zero64 = 0;
    float one32 = 1, zero32 = 0;
    uint16_t one16 = 0x3c00, zero16 = 0;
    int st = g->scale_type;
    const void* one = st == CUDA_R_64F ? (const void*)&one64 : st == CUDA_R_16F ? (const void*)&one16 : &one32;
    const void* zero = st == CUDA_R_64F ? (const void*)&zero64 : st == CUDA_R_16F ? (const void*)&zero16 : &zero32;
    set_sm_target(g->h, old_t);
    cublasStatus_t s1 = gemm_ex(g->h, g->ta, g->tb, g->m, g->n, g->k, one, p->dev[0], g->atype, g->lda, p->dev[1],
                                g->btype, g->ldb, zero, p->dev[2], g->ctype, g->ldc, g->compute, CUBLAS_GEMM_DEFAULT);
    set_sm_target(g->h, t);
    cublasStatus_t s2 = gemm_ex(g->h, g->ta, g->tb, g->m, g->n, g->k, one, p->dev[0], g->atype, g->lda, p->dev[1],
                                g->btype, g->ldb, zero, p->dev[3], g->ctype, g->ldc, g->compute, CUBLAS_GEMM_DEFAULT);
    set_sm_target(g->h, old_t);
    set_pointer_mode(g->h, old_mode);
    set_stream(g->h, old_stream);
    char *h1 = h + 2 * CHECK_BYTES, *h2 = h1 + 2 * piece;
    ok = ok && s1 == CUBLAS_STATUS_SUCCESS && s2 == CUBLAS_STATUS_SUCCESS &&
         rt.memcpy_(h1, p->dev[2], piece, cudaMemcpyDeviceToHost, p->priv) == cudaSuccess &&
         rt.memcpy_(h2, p->dev[3], piece, cudaMemcpyDeviceToHost, p->priv) == cudaSuccess &&
         rt.memcpy_(h1 + piece, (char*)p->dev[2] + tail, piece, cudaMemcpyDeviceToHost, p->priv) == cudaSuccess &&
         rt.memcpy_(h2 + piece, (char*)p->dev[3] + tail, piece, cudaMemcpyDeviceToHost, p->priv) == cudaSuccess;
  }
  if (ok) {
    /* Until it is done, segment launches measure nothing: the check's GEMMs
     * share the device with them (a go plan on trial beside them was
     * measured slower and reverted). */
    p->gc = grape__gc_peek();
    grape_gc_device_shared(p->gc, 1);
    pthread_mutex_lock(&go_lock);
    grape__list_insert_head(&go_pending, &p->link);
    __atomic_store_n(&go_in_flight, go_in_flight + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&go_lock);
  } else {
    check_release(p);
  }
  grape__depth = saved_depth;
}

/* Before a legacy call: its target, when one is published for its stream,
 * set on the handle (its own value kept in *saved). @return the target or 0. */
static int legacy_target_begin(const legacy_t* g, int* saved, double* t0) {
  if (__atomic_load_n(&conc_mode, __ATOMIC_RELAXED) != GRAPE_CONC_GO)
    return 0;
  *t0 = target_clock();
  go_fns();
  if (__atomic_load_n(&go_in_flight, __ATOMIC_RELAXED) != 0) {
    double c0 = target_clock();
    grape__own_work(1);
    go_checks_poll(0);
    grape__own_work(0);
    *t0 += target_clock() - c0;   /* the checks', not the call's */
  }
  cudaStream_t st = NULL;
  if (get_stream == NULL || get_sm_target == NULL || set_sm_target == NULL ||
      get_stream(g->h, &st) != CUBLAS_STATUS_SUCCESS)
    return 0;
  int t = (int)go_target_for(st);
  if (t <= 0)
    return 0;
  checked_t key = {g->m, g->n, g->k, g->ta, g->tb, g->atype, g->ctype, g->compute, t};
  if (go_first(&key)) {
    double c0 = target_clock();
    grape__own_work(1);
    go_check_legacy(g, t);
    grape__own_work(0);
    *t0 += target_clock() - c0;   /* once per shape: not the per-call cost */
  }
  if (get_sm_target(g->h, saved) != CUBLAS_STATUS_SUCCESS ||
      set_sm_target(g->h, t) != CUBLAS_STATUS_SUCCESS)
    return 0;
  *t0 = target_clock() - *t0;   /* what the beginning cost (the call itself is not the target's) */
  return t;
}

static void legacy_target_end(const legacy_t* g, int saved, double begun) {
  double t = target_clock();
  set_sm_target(g->h, saved);
  target_done(begun, t);
}

/* A copy of desc with every attribute the library gives (NULL: none). */
static cublasLtMatmulDesc_t desc_copy(cublasLtMatmulDesc_t desc) {
  int32_t compute = 0, scale = 0;
  cublasLtMatmulDesc_t d = NULL;
  if (desc_create == NULL || desc_set == NULL || desc_get == NULL ||
      desc_attr(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, 4) != 0 ||
      desc_attr(desc, CUBLASLT_MATMUL_DESC_SCALE_TYPE, &scale, 4) != 0 ||
      desc_create(&d, (cublasComputeType_t)compute, (cudaDataType_t)scale) != CUBLAS_STATUS_SUCCESS)
    return NULL;
  for (int a = 0; a <= 64; a++) {
    uint8_t buf[64];
    size_t need = 0;
    if (desc_get(desc, (cublasLtMatmulDescAttributes_t)a, NULL, 0, &need) != CUBLAS_STATUS_SUCCESS ||
        need == 0 || need > sizeof(buf))
      continue;
    size_t got = 0;
    if (desc_get(desc, (cublasLtMatmulDescAttributes_t)a, buf, need, &got) != CUBLAS_STATUS_SUCCESS)
      continue;
    if (desc_set(d, (cublasLtMatmulDescAttributes_t)a, buf, got) != CUBLAS_STATUS_SUCCESS) {
      desc_destroy(d);
      return NULL;
    }
  }
  return d;
}

/* A cuBLASLt call's target: a copy of desc carrying it (*copy) and, when the
 * program passed an algorithm, the heuristic's first one for the copy
 * (*algo). @return the target or 0 (then nothing was made). */
static int lt_target_begin(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t la,
                           cublasLtMatrixLayout_t lb, cublasLtMatrixLayout_t lc,
                           cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t* algo,
                           size_t ws_size, cudaStream_t stream, cublasLtMatmulDesc_t* copy,
                           cublasLtMatmulAlgo_t* requeried, double* t0) {
  if (__atomic_load_n(&conc_mode, __ATOMIC_RELAXED) != GRAPE_CONC_GO)
    return 0;
  *t0 = target_clock();
  int t = (int)go_target_for(stream);
  if (t <= 0)
    return 0;
  go_fns();
  if ((*copy = desc_copy(desc)) == NULL)
    return 0;
  int32_t t32 = t;
  if (desc_set(*copy, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &t32, sizeof(t32)) != CUBLAS_STATUS_SUCCESS)
    goto fail;
  if (algo != NULL) {
    cublasLtMatmulPreference_t pref = NULL;
    cublasLtMatmulHeuristicResult_t res;
    int count = 0;
    uint64_t ws = ws_size;
    int ok = pref_create != NULL && heuristic != NULL && pref_create(&pref) == CUBLAS_STATUS_SUCCESS &&
             pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)) == CUBLAS_STATUS_SUCCESS &&
             heuristic(h, *copy, la, lb, lc, ld, pref, 1, &res, &count) == CUBLAS_STATUS_SUCCESS &&
             count > 0 && res.state == CUBLAS_STATUS_SUCCESS;
    if (pref != NULL)
      pref_destroy(pref);
    if (!ok)
      goto fail;
    grape__charge_work(SIMCU_WORK_SHIM_REQUERY, 1);   /* the library's time, on the target's clock */
    *requeried = res.algo;
  }
  pthread_mutex_lock(&go_lock);
  go_targets++;
  pthread_mutex_unlock(&go_lock);
  *t0 = target_clock() - *t0;   /* what the beginning cost (the call itself is not the target's) */
  return t;
fail:
  desc_destroy(*copy);
  *copy = NULL;
  return 0;
}

static void lt_target_end(cublasLtMatmulDesc_t copy, double begun) {
  double t = target_clock();
  desc_destroy(copy);
  target_done(begun, t);
}

/* ---- The entry points ---- */

/* Each interposed function is written once as a body taking the real
 * function, and gets an export and a dlsym route wrapper around it. */
#define CB_ENTRY(name, params, args)                                                   \
  typedef cublasStatus_t(*pfn_##name) params;                                          \
  static cublasStatus_t body_##name(pfn_##name real, GRAPE_UNPAREN params);            \
  GRAPE_EXPORT cublasStatus_t name params {                                            \
    pfn_##name real = (pfn_##name)real_export(CB_##name);                              \
    return real != NULL ? body_##name(real, GRAPE_UNPAREN args)                        \
                        : CUBLAS_STATUS_NOT_INITIALIZED;                               \
  }                                                                                    \
  static cublasStatus_t dl_##name params {                                             \
    pfn_##name real = (pfn_##name)__atomic_load_n(&real_fn[1][CB_##name], __ATOMIC_RELAXED); \
    return body_##name(real, GRAPE_UNPAREN args);                                      \
  }                                                                                    \
  static cublasStatus_t body_##name(pfn_##name real, GRAPE_UNPAREN params)

#define GRAPE_UNPAREN(...) __VA_ARGS__

/* One legacy call: the real one with g's footprint current. */
#define LEGACY_CALL(gexpr, call_expr)      \
  do {                                     \
    if (!footprints_on())                  \
      return call_expr;                    \
    grape_call_t c_;                       \
    legacy_t g_ = gexpr;                   \
    legacy_foot(&c_, &g_);                 \
    int saved_ = 0;                        \
    double t0_ = 0;                        \
    int tgt_ = legacy_target_begin(&g_, &saved_, &t0_); \
    cublasStatus_t st_;                    \
    WITH_CALL(&c_, st_, call_expr);        \
    if (tgt_ > 0)                          \
      legacy_target_end(&g_, saved_, t0_); \
    return st_;                            \
  } while (0)

CB_ENTRY(cublasGemmEx,
         (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const void* alpha, const void* A, cudaDataType at, int lda, const void* B,
          cudaDataType bt, int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
          cublasComputeType_t compute, cublasGemmAlgo_t algo),
         (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo)) {
  LEGACY_CALL(((legacy_t){h, ta, tb, m, n, k, alpha, A, B, beta, C, at, bt, ct, lda, ldb, ldc,
                          0, 0, 0, 1, compute, scale_of(compute)}),
              real(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc, compute, algo));
}

CB_ENTRY(cublasGemmStridedBatchedEx,
         (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const void* alpha, const void* A, cudaDataType at, int lda, long long sa, const void* B,
          cudaDataType bt, int ldb, long long sb, const void* beta, void* C, cudaDataType ct,
          int ldc, long long sc, int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo),
         (h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc, batch,
          compute, algo)) {
  LEGACY_CALL(((legacy_t){h, ta, tb, m, n, k, alpha, A, B, beta, C, at, bt, ct, lda, ldb, ldc,
                          sa, sb, sc, batch, compute, scale_of(compute)}),
              real(h, ta, tb, m, n, k, alpha, A, at, lda, sa, B, bt, ldb, sb, beta, C, ct, ldc, sc,
                   batch, compute, algo));
}

/* The typed forms: one element type and the compute type it implies. */
#define TYPED_GEMM(name, T, TYPE, COMPUTE)                                                     \
  CB_ENTRY(name,                                                                               \
           (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
            const T* alpha, const T* A, int lda, const T* B, int ldb, const T* beta, T* C,     \
            int ldc),                                                                          \
           (h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc)) {                        \
    LEGACY_CALL(((legacy_t){h, ta, tb, m, n, k, alpha, A, B, beta, C, TYPE, TYPE, TYPE, lda,   \
                            ldb, ldc, 0, 0, 0, 1, COMPUTE, scale_of(COMPUTE)}),                \
                real(h, ta, tb, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc));                \
  }
#define TYPED_STRIDED(name, T, TYPE, COMPUTE)                                                  \
  CB_ENTRY(name,                                                                               \
           (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, \
            const T* alpha, const T* A, int lda, long long sa, const T* B, int ldb,            \
            long long sb, const T* beta, T* C, int ldc, long long sc, int batch),              \
           (h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, batch)) {     \
    LEGACY_CALL(((legacy_t){h, ta, tb, m, n, k, alpha, A, B, beta, C, TYPE, TYPE, TYPE, lda,   \
                            ldb, ldc, sa, sb, sc, batch, COMPUTE, scale_of(COMPUTE)}),         \
                real(h, ta, tb, m, n, k, alpha, A, lda, sa, B, ldb, sb, beta, C, ldc, sc,      \
                     batch));                                                                  \
  }

TYPED_GEMM(cublasSgemm_v2, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_GEMM(cublasDgemm_v2, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_GEMM(cublasHgemm, cb_half, CUDA_R_16F, CUBLAS_COMPUTE_16F)
TYPED_STRIDED(cublasSgemmStridedBatched, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_STRIDED(cublasDgemmStridedBatched, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_STRIDED(cublasHgemmStridedBatched, cb_half, CUDA_R_16F, CUBLAS_COMPUTE_16F)

CB_ENTRY(cublasSgemmEx,
         (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
          const float* alpha, const void* A, cudaDataType at, int lda, const void* B,
          cudaDataType bt, int ldb, const float* beta, void* C, cudaDataType ct, int ldc),
         (h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc)) {
  LEGACY_CALL(((legacy_t){h, ta, tb, m, n, k, alpha, A, B, beta, C, at, bt, ct, lda, ldb, ldc, 0,
                          0, 0, 1, CUBLAS_COMPUTE_32F, CUDA_R_32F}),
              real(h, ta, tb, m, n, k, alpha, A, at, lda, B, bt, ldb, beta, C, ct, ldc));
}

CB_ENTRY(cublasLtMatmul,
         (cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
          cublasLtMatrixLayout_t la, const void* B, cublasLtMatrixLayout_t lb, const void* beta,
          const void* C, cublasLtMatrixLayout_t lc, void* D, cublasLtMatrixLayout_t ld,
          const cublasLtMatmulAlgo_t* algo, void* ws, size_t ws_size, cudaStream_t stream),
         (h, desc, alpha, A, la, B, lb, beta, C, lc, D, ld, algo, ws, ws_size, stream)) {
  if (!footprints_on())
    return real(h, desc, alpha, A, la, B, lb, beta, C, lc, D, ld, algo, ws, ws_size, stream);
  grape_call_t c;
  lt_foot(&c, desc, alpha, A, la, B, lb, beta, C, lc, D, ld, ws, ws_size);
  cublasLtMatmulDesc_t copy = NULL;
  cublasLtMatmulAlgo_t requeried;
  double t0 = 0;
  int tgt = lt_target_begin(h, desc, la, lb, lc, ld, algo, ws_size, stream, &copy, &requeried, &t0);
  cublasStatus_t st;
  if (tgt > 0) {
    WITH_CALL(&c, st, real(h, copy, alpha, A, la, B, lb, beta, C, lc, D, ld,
                           algo != NULL ? &requeried : NULL, ws, ws_size, stream));
    lt_target_end(copy, t0);
  } else {
    WITH_CALL(&c, st, real(h, desc, alpha, A, la, B, lb, beta, C, lc, D, ld, algo, ws, ws_size, stream));
  }
  return st;
}

/* ---- The dlsym route ---- */

static void* const export_of[CB_COUNT] = {
#define ROW_EXPORT(name, lt) (void*)name,
  GRAPE_CUBLAS_ROWS(ROW_EXPORT)
#undef ROW_EXPORT
};
static void* const dlsym_of[CB_COUNT] = {
#define ROW_DLSYM(name, lt) (void*)dl_##name,
  GRAPE_CUBLAS_ROWS(ROW_DLSYM)
#undef ROW_DLSYM
};

void* grape__cublas_dlsym(void* handle, const char* symbol, void* p) {
  int row = -1;
  for (int i = 0; i < CB_COUNT && row < 0; i++)
    if (strcmp(symbol, row_name[i]) == 0)
      row = i;
  if (row < 0 || p == NULL)
    return p;
  if (p == export_of[row]) {
    /* The global scope found the shim's export first: it stands for the
     * real function, which must then exist. */
    (void)handle;
    return real_export(row) != NULL ? p : NULL;
  }
  if (p == dlsym_of[row] || !grape__on())   /* the dlsym override started the shim */
    return p;
  void* expected = NULL;
  if (!__atomic_compare_exchange_n(&real_fn[1][row], &expected, p, 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED) &&
      expected != p)
    return p;   /* a second library of the same name: never two behind one wrapper */
  return dlsym_of[row];
}

int grape__cublas_is_own(const void* p) {
  for (int i = 0; i < CB_COUNT; i++)
    if (p == export_of[i] || p == dlsym_of[i])
      return 1;
  return 0;
}

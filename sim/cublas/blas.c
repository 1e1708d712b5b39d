/* blas.c: libcublas.so.13's stand-in: handles (stream, workspace, pointer
 * mode, math mode, SM-count target) and the GEMM family of the legacy API
 * (cublasGemmEx, cublas{S,D,H}gemm, their strided-batched forms,
 * cublasSgemmEx), on the engine of libcublasLt.so.13's stand-in.
 *
 * DESIGN: as NVIDIA's libcublas, this library needs libcublasLt.so.13 and
 * runs its GEMMs there, through a private entry (simcublasLt_gemm, engine.h)
 * rather than the public cublasLtMatmul, so a shim sees one library call per
 * GEMM, on whichever route it interposes. It reaches the driver itself the
 * way the CUDA runtime linked into cuBLAS does: dlopen("libcuda.so.1"), then
 * every entry point through cuGetProcAddress_v2, at cublasCreate, to make
 * sure the calling thread has a context. Arguments are checked as cuBLAS
 * documents (a NULL or destroyed handle: NOT_INITIALIZED; negative sizes or
 * too small leading dimensions: INVALID_VALUE); a split-K plan needs a
 * workspace given with cublasSetWorkspace, which every stream the handle is
 * used on shares, as cuBLAS warns.
 */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cublas_api.h>
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "vendor.h"

#define EXPORT __attribute__((visibility("default")))
#define HANDLE_MAGIC SIMCUBLAS_BLAS_HANDLE_MAGIC

/* cublas_api.h declares the __half forms for C++ only (__half is a C++
 * class); in C they take the same 16-bit values. */
typedef uint16_t sc_half;

struct cublasContext {
  simcu_handle_t hd;                 /* magic, and the pool's link (vendor.h) */
  cudaStream_t stream;
  void* workspace;
  size_t workspace_size;
  cublasPointerMode_t pointer_mode;
  cublasMath_t math;
  cublasAtomicsMode_t atomics;
  int sm_target;
};

static simcu_vendor_drv_t cu;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int driver_ok;

static void bind(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL)
    return;
  CUresult (*gpa)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  *(void**)&gpa = dlsym(h, "cuGetProcAddress_v2");
  if (gpa == NULL)
    return;
  static const struct {
    const char* name;
    int version;
    size_t off;
  } rows[] = {
    {"cuInit", 2000, offsetof(simcu_vendor_drv_t, Init)},
    {"cuCtxGetCurrent", 4000, offsetof(simcu_vendor_drv_t, CtxGetCurrent)},
    {"cuCtxSetCurrent", 4000, offsetof(simcu_vendor_drv_t, CtxSetCurrent)},
    {"cuDevicePrimaryCtxRetain", 7000, offsetof(simcu_vendor_drv_t, DevicePrimaryCtxRetain)},
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    void* p = NULL;
    if (gpa(rows[i].name, &p, rows[i].version, CU_GET_PROC_ADDRESS_DEFAULT, NULL) != CUDA_SUCCESS ||
        p == NULL)
      return;
    memcpy((char*)&cu + rows[i].off, &p, sizeof(p));
  }
  driver_ok = 1;
}

/* The calling thread has a context (the primary one if it had none). */
static cublasStatus_t ready(void) {
  pthread_once(&once, bind);
  CUcontext c;
  if (!driver_ok || simcu_vendor_start(&cu, &c) != CUDA_SUCCESS)
    return CUBLAS_STATUS_NOT_INITIALIZED;
  return CUBLAS_STATUS_SUCCESS;
}

static int handle_ok(cublasHandle_t h) {
  return h != NULL && h->hd.magic == HANDLE_MAGIC;
}

static simcu_handle_pool_t pool = {PTHREAD_MUTEX_INITIALIZER, NULL};

/* ---- Handles ---- */

EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* out) {
  if (out == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  cublasStatus_t st = ready();
  if (st != CUBLAS_STATUS_SUCCESS)
    return st;
  struct cublasContext* h = simcu_handle_new(&pool, sizeof(*h), HANDLE_MAGIC);
  if (h == NULL)
    return CUBLAS_STATUS_ALLOC_FAILED;
  h->pointer_mode = CUBLAS_POINTER_MODE_HOST;
  h->math = CUBLAS_DEFAULT_MATH;
  h->atomics = CUBLAS_ATOMICS_NOT_ALLOWED;
  *out = h;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t h) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  simcu_handle_park(&pool, &h->hd);
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetVersion_v2(cublasHandle_t h, int* v) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (v == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *v = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetProperty(libraryPropertyType type, int* value) {
  return cublasLtGetProperty(type, value);
}

EXPORT size_t cublasGetCudartVersion(void) {
  return 13000;
}

EXPORT const char* cublasGetStatusName(cublasStatus_t s) {
  return cublasLtGetStatusName(s);
}

EXPORT const char* cublasGetStatusString(cublasStatus_t s) {
  return cublasLtGetStatusString(s);
}

EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetStream_v2(cublasHandle_t h, cudaStream_t* s) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (s == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *s = h->stream;
  return CUBLAS_STATUS_SUCCESS;
}

/* Kept by the handle and shared by every stream it is used on. */
EXPORT cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t h, void* ws, size_t size) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (ws == NULL && size > 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->workspace = ws;
  h->workspace_size = ws != NULL ? size : 0;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t* m) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *m = h->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t h, cublasPointerMode_t m) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m != CUBLAS_POINTER_MODE_HOST && m != CUBLAS_POINTER_MODE_DEVICE)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->pointer_mode = m;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetMathMode(cublasHandle_t h, cublasMath_t* m) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *m = h->math;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetMathMode(cublasHandle_t h, cublasMath_t m) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  unsigned base = (unsigned)m & 0xfu, flags = (unsigned)m & ~0xfu;
  if (base > CUBLAS_TF32_TENSOR_OP_MATH ||
      (flags & ~(unsigned)CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) != 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->math = m;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetAtomicsMode(cublasHandle_t h, cublasAtomicsMode_t* m) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *m = h->atomics;
  return CUBLAS_STATUS_SUCCESS;
}

/* Kept; the stand-in's kernels use no atomics either way. */
EXPORT cublasStatus_t cublasSetAtomicsMode(cublasHandle_t h, cublasAtomicsMode_t m) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m != CUBLAS_ATOMICS_NOT_ALLOWED && m != CUBLAS_ATOMICS_ALLOWED)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->atomics = m;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasGetSmCountTarget(cublasHandle_t h, int* n) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n == NULL)
    return CUBLAS_STATUS_INVALID_VALUE;
  *n = h->sm_target;
  return CUBLAS_STATUS_SUCCESS;
}

EXPORT cublasStatus_t cublasSetSmCountTarget(cublasHandle_t h, int n) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  h->sm_target = n;
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- GEMMs ---- */

/* One column-major GEMM call of the legacy API, batch entries stride
 * elements apart. */
typedef struct legacy_s {
  cublasOperation_t ta, tb;
  int m, n, k;
  const void *alpha, *A, *B, *beta;
  void* C;
  int atype, btype, ctype, lda, ldb, ldc;
  long long sa, sb, sc;
  int batch;
  int compute;
  int ptr_array;   /* A, B, C: device arrays of batch pointers (the *gemmBatched forms) */
} legacy_t;

static int scale_of(int compute) {
  switch (compute) {
  case CUBLAS_COMPUTE_16F:
  case CUBLAS_COMPUTE_16F_PEDANTIC:
    return CUDA_R_16F;
  case CUBLAS_COMPUTE_64F:
  case CUBLAS_COMPUTE_64F_PEDANTIC:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

static int max1(int x) {
  return x > 1 ? x : 1;
}

static cublasStatus_t legacy_gemm(cublasHandle_t h, const legacy_t* c) {
  if (!handle_ok(h))
    return CUBLAS_STATUS_NOT_INITIALIZED;
  if ((c->ta != CUBLAS_OP_N && c->ta != CUBLAS_OP_T && c->ta != CUBLAS_OP_C) ||
      (c->tb != CUBLAS_OP_N && c->tb != CUBLAS_OP_T && c->tb != CUBLAS_OP_C) || c->m < 0 ||
      c->n < 0 || c->k < 0 || c->batch < 0)
    return CUBLAS_STATUS_INVALID_VALUE;
  int ta = c->ta != CUBLAS_OP_N, tb = c->tb != CUBLAS_OP_N;
  if (c->lda < max1(ta ? c->k : c->m) || c->ldb < max1(tb ? c->n : c->k) || c->ldc < max1(c->m))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (c->m == 0 || c->n == 0 || c->batch == 0)
    return CUBLAS_STATUS_SUCCESS;
  simcublas_gemm_t g;
  memset(&g, 0, sizeof(g));
  g.trans_a = c->ta;
  g.trans_b = c->tb;
  g.a = (simcublas_mat_t){c->A, c->atype, 0, ta ? c->k : c->m, ta ? c->m : c->k, c->lda, c->batch,
                          c->sa};
  g.b = (simcublas_mat_t){c->B, c->btype, 0, tb ? c->n : c->k, tb ? c->k : c->n, c->ldb, c->batch,
                          c->sb};
  g.c = (simcublas_mat_t){c->C, c->ctype, 0, c->m, c->n, c->ldc, c->batch, c->sc};
  g.d = g.c;
  g.ptr_array = c->ptr_array;
  g.compute = c->compute;
  g.scale_type = scale_of(c->compute);
  /* The handle's math mode: TF32 allowed, or (deprecated) fp32 as half. */
  unsigned math = (unsigned)h->math & 0xfu;
  g.tf32 = math == CUBLAS_TF32_TENSOR_OP_MATH;
  if (c->compute == CUBLAS_COMPUTE_32F && c->atype == CUDA_R_32F) {
    if (math == CUBLAS_PEDANTIC_MATH)
      g.compute = CUBLAS_COMPUTE_32F_PEDANTIC;
    else if (math == CUBLAS_TENSOR_OP_MATH)
      g.compute = CUBLAS_COMPUTE_32F_FAST_16F;
  }
  g.alpha = c->alpha;
  g.beta = c->beta;
  g.device_scalars = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  g.epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  g.sm_target = h->sm_target;
  g.workspace = h->workspace;
  g.workspace_size = h->workspace_size;
  return simcublasLt_gemm(&g, h->stream);
}

static int algo_ok(cublasGemmAlgo_t a) {
  return (a >= CUBLAS_GEMM_DEFAULT && a <= CUBLAS_GEMM_ALGO23) ||
         (a >= CUBLAS_GEMM_DEFAULT_TENSOR_OP && a <= CUBLAS_GEMM_ALGO15_TENSOR_OP);
}

EXPORT cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void* alpha, const void* A,
                                   cudaDataType at, int lda, const void* B, cudaDataType bt,
                                   int ldb, const void* beta, void* C, cudaDataType ct, int ldc,
                                   cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (!algo_ok(algo))
    return handle_ok(h) ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_INITIALIZED;
  legacy_t c = {ta, tb, m, n, k, alpha, A, B, beta, C, at, bt, ct, lda, ldb, ldc, 0, 0, 0, 1,
                compute, 0};
  return legacy_gemm(h, &c);
}

EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType at, int lda, long long sa, const void* B,
    cudaDataType bt, int ldb, long long sb, const void* beta, void* C, cudaDataType ct, int ldc,
    long long sc, int batch, cublasComputeType_t compute, cublasGemmAlgo_t algo) {
  if (!algo_ok(algo))
    return handle_ok(h) ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_INITIALIZED;
  legacy_t c = {ta, tb, m, n, k, alpha, A, B, beta, C, at, bt, ct, lda, ldb, ldc, sa, sb, sc,
                batch, compute, 0};
  return legacy_gemm(h, &c);
}

/* The typed forms: one element type, the compute type it implies. */
#define TYPED_GEMM(name, T, TYPE, COMPUTE)                                               \
  EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, \
                             int m, int n, int k, const T* alpha, const T* A, int lda,     \
                             const T* B, int ldb, const T* beta, T* C, int ldc) {          \
    legacy_t c = {ta,   tb,  m,   n,   k,   alpha, A, B, beta, C, TYPE,                    \
                  TYPE, TYPE, lda, ldb, ldc, 0,     0, 0, 1,    COMPUTE, 0};               \
    return legacy_gemm(h, &c);                                                             \
  }
#define TYPED_STRIDED(name, T, TYPE, COMPUTE)                                                \
  EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,     \
                             int m, int n, int k, const T* alpha, const T* A, int lda,         \
                             long long sa, const T* B, int ldb, long long sb, const T* beta,   \
                             T* C, int ldc, long long sc, int batch) {                         \
    legacy_t c = {ta,   tb,  m,   n,   k,   alpha, A,  B,  beta,  C, TYPE,                     \
                  TYPE, TYPE, lda, ldb, ldc, sa,    sb, sc, batch, COMPUTE, 0};                \
    return legacy_gemm(h, &c);                                                                 \
  }

TYPED_GEMM(cublasSgemm_v2, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_GEMM(cublasDgemm_v2, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_GEMM(cublasHgemm, sc_half, CUDA_R_16F, CUBLAS_COMPUTE_16F)
TYPED_STRIDED(cublasSgemmStridedBatched, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_STRIDED(cublasDgemmStridedBatched, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_STRIDED(cublasHgemmStridedBatched, sc_half, CUDA_R_16F, CUBLAS_COMPUTE_16F)

/* Batches of pointer arrays: Aarray, Barray and Carray are device arrays of
 * batch pointers, which the kernels read when they run (in stream order, as
 * on a GPU: an earlier kernel may still be writing them at the call). */
EXPORT cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void* alpha, const void* const A[], cudaDataType at,
                                          int lda, const void* const B[], cudaDataType bt, int ldb,
                                          const void* beta, void* const C[], cudaDataType ct,
                                          int ldc, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t algo) {
  if (!algo_ok(algo))
    return handle_ok(h) ? CUBLAS_STATUS_INVALID_VALUE : CUBLAS_STATUS_NOT_INITIALIZED;
  legacy_t c = {ta, tb, m, n, k, alpha, A, B, beta, (void*)C, at, bt, ct, lda, ldb, ldc, 0, 0, 0,
                batch, compute, 1};
  return legacy_gemm(h, &c);
}

#define TYPED_BATCHED(name, T, TYPE, COMPUTE)                                                \
  EXPORT cublasStatus_t name(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,     \
                             int m, int n, int k, const T* alpha, const T* const A[], int lda, \
                             const T* const B[], int ldb, const T* beta, T* const C[], int ldc, \
                             int batch) {                                                      \
    legacy_t c = {ta,   tb,  m,   n,   k,   alpha, A, B, beta,  (void*)C, TYPE,                \
                  TYPE, TYPE, lda, ldb, ldc, 0,     0, 0, batch, COMPUTE,  1};                 \
    return legacy_gemm(h, &c);                                                                 \
  }

TYPED_BATCHED(cublasSgemmBatched, float, CUDA_R_32F, CUBLAS_COMPUTE_32F)
TYPED_BATCHED(cublasDgemmBatched, double, CUDA_R_64F, CUBLAS_COMPUTE_64F)
TYPED_BATCHED(cublasHgemmBatched, sc_half, CUDA_R_16F, CUBLAS_COMPUTE_16F)

/* Float scalars and compute; A, B and C of the types given. */
EXPORT cublasStatus_t cublasSgemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
                                    int m, int n, int k, const float* alpha, const void* A,
                                    cudaDataType at, int lda, const void* B, cudaDataType bt,
                                    int ldb, const float* beta, void* C, cudaDataType ct,
                                    int ldc) {
  legacy_t c = {ta, tb, m, n, k, alpha, A, B, beta, C, at, bt, ct, lda, ldb, ldc, 0, 0, 0, 1,
                CUBLAS_COMPUTE_32F, 0};
  return legacy_gemm(h, &c);
}

/* Tests of the sim's cuBLAS stand-ins (sim/cublas/): every GEMM entry point
 * against a plain-C reference written here (fused multiply-adds in k order,
 * rounding by the C library and _Float16, not by the stand-ins' code), bit
 * for bit; the heuristic (persistent kernels, the SM-count target, split-K
 * and its workspace); descriptors, errors and what is not supported; and the
 * device model's time for cuBLAS kernels (a persistent GEMM beside a
 * co-runner, and with the SM-count target).
 *
 * The program is linked against NVIDIA's libcublas.so.13 and
 * libcublasLt.so.13 when the toolkit has them (so the stand-ins must export
 * the same names in the same version nodes) and runs with the stand-ins on
 * LD_LIBRARY_PATH; without the toolkit's libraries it links the stand-ins. */
#include <criterion/criterion.h>
#include <cublasLt.h>
#include <cublas_api.h>
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cost.h"
#include "drv_setup.h"

/* cublas_api.h declares these for C++ only (__half is a C++ class). */
cublasStatus_t cublasHgemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                           const uint16_t*, const uint16_t*, int, const uint16_t*, int,
                           const uint16_t*, uint16_t*, int);
cublasStatus_t cublasHgemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                         int, int, const uint16_t*, const uint16_t*, int, long long,
                                         const uint16_t*, int, long long, const uint16_t*,
                                         uint16_t*, int, long long, int);
cublasStatus_t cublasHgemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                  int, const uint16_t*, const uint16_t* const[], int,
                                  const uint16_t* const[], int, const uint16_t*, uint16_t* const[],
                                  int, int);

/* Exported by NVIDIA's libcublas.so.13 without a header; cuSOLVER imports it. */
cublasStatus_t cublasSetEnvironmentMode(int mode);

#define CB(call) cr_assert_eq((call), CUBLAS_STATUS_SUCCESS, "%s", #call)

enum {
#define ROW_DEFAULT(id, name, dflt) D_##id = dflt,
  SIM_COST_ROWS(ROW_DEFAULT)
#undef ROW_DEFAULT
};

static const simcu_private_t* sim;

/* What a test made, released after it, so leak checks see only the library's. */
typedef struct owned_s {
  void* p;
  void (*drop)(void*);
} owned_t;
static owned_t owned[256];
static int nowned;

static void* own(void* p, void (*drop)(void*)) {
  cr_assert_lt(nowned, 256);
  owned[nowned++] = (owned_t){p, drop};
  return p;
}

static void drop_layout(void* p) {
  cublasLtMatrixLayoutDestroy(p);
}
static void drop_desc(void* p) {
  cublasLtMatmulDescDestroy(p);
}
static void drop_lt(void* p) {
  cublasLtDestroy(p);
}

static void release(void) {
  while (nowned > 0) {
    nowned--;
    owned[nowned].drop(owned[nowned].p);
  }
}

TestSuite(sim_cublas, .fini = release);

/* A matmul descriptor that lives until the test ends. */
static cublasLtMatmulDesc_t desc(cublasComputeType_t compute, cudaDataType_t scale) {
  cublasLtMatmulDesc_t d;
  CB(cublasLtMatmulDescCreate(&d, compute, scale));
  return own(d, drop_desc);
}

static void start(void) {
  OK(sim_test_start(NULL, NULL, NULL, NULL));
  const void* t = NULL;
  CUuuid id = {SIMCU_PRIVATE_UUID};
  OK(cuGetExportTable(&t, &id));
  sim = t;
}

/* ---- The reference ---- */

/* Element types as cudaDataType. */
static size_t esize(int t) {
  return t == CUDA_R_64F ? 8 : (t == CUDA_R_32F ? 4 : 2);
}

static float bf16_round(float f) {   /* 8 significant bits, ties to even */
  if (f == 0.0f || !isfinite(f))
    return f;
  int e;
  float m = frexpf(f, &e);
  return ldexpf(rintf(m * 256.0f) / 256.0f, e);
}

static float tf32_round(float f) {   /* 11 significant bits, ties away from zero */
  if (f == 0.0f || !isfinite(f))
    return f;
  int e;
  float m = frexpf(f, &e);
  return ldexpf(roundf(m * 2048.0f) / 2048.0f, e);
}

static float half_round(float f) {
  return (float)(_Float16)f;
}

static double get(const void* p, size_t i, int t) {
  switch (t) {
  case CUDA_R_64F:
    return ((const double*)p)[i];
  case CUDA_R_32F:
    return ((const float*)p)[i];
  case CUDA_R_16F: {
    _Float16 h;
    memcpy(&h, (const char*)p + 2 * i, 2);
    return (double)h;
  }
  default: {   /* bfloat16: the high half of a float */
    uint32_t u = (uint32_t)((const uint16_t*)p)[i] << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
  }
  }
}

static void put(void* p, size_t i, int t, double v) {
  switch (t) {
  case CUDA_R_64F:
    ((double*)p)[i] = v;
    break;
  case CUDA_R_32F:
    ((float*)p)[i] = (float)v;
    break;
  case CUDA_R_16F: {
    _Float16 h = (_Float16)(float)v;
    memcpy((char*)p + 2 * i, &h, 2);
    break;
  }
  default: {
    float f = bf16_round((float)v);
    uint32_t u;
    memcpy(&u, &f, 4);
    ((uint16_t*)p)[i] = (uint16_t)(u >> 16);
  }
  }
}

enum { IN_AS_IS, IN_TF32, IN_F16, IN_BF16, ACC_HALF, ACC_DOUBLE };

/* A column-major GEMM (lda etc. in elements) of batch entries; k split in
 * `splits` equal shares (the last takes the rest), the shares' chains added
 * in order. relu/bias as cuBLASLt's epilogue (bias per row). */
typedef struct ref_s {
  int ta, tb, m, n, k, batch, splits, mode, relu;
  int at, bt, ct;
  double alpha, beta;
  const void *A, *B, *C, *bias;
  int lda, ldb, ldc;
  long long sa, sb, sc;
  int bias_type;
} ref_t;

static float in_f(double v, int mode) {
  float f = (float)v;
  return mode == IN_TF32 ? tf32_round(f)
         : mode == IN_F16 ? half_round(f)
         : mode == IN_BF16 ? bf16_round(f) : f;
}

static void reference(const ref_t* r, void* D) {
  for (int b = 0; b < r->batch; b++)
    for (int j = 0; j < r->n; j++)
      for (int i = 0; i < r->m; i++) {
        double acc = 0.0;
        float facc = 0.0f;
        int share = r->k / r->splits;
        for (int s = 0; s < r->splits; s++) {
          int k0 = s * share, k1 = s == r->splits - 1 ? r->k : k0 + share;
          double pd = 0.0;
          float pf = 0.0f;
          for (int q = k0; q < k1; q++) {
            size_t ai = b * r->sa + (r->ta ? (size_t)i * r->lda + q : (size_t)q * r->lda + i);
            size_t bi = b * r->sb + (r->tb ? (size_t)q * r->ldb + j : (size_t)j * r->ldb + q);
            double x = get(r->A, ai, r->at), y = get(r->B, bi, r->bt);
            if (r->mode == ACC_DOUBLE) {
              pd = fma(x, y, pd);
            } else {
              pf = fmaf(in_f(x, r->mode), in_f(y, r->mode), pf);
              if (r->mode == ACC_HALF)
                pf = half_round(pf);
            }
          }
          if (s == 0) {
            acc = pd;
            facc = pf;
          } else {
            acc = acc + pd;
            facc = facc + pf;
            if (r->mode == ACC_HALF)
              facc = half_round(facc);
          }
        }
        size_t ci = b * r->sc + (size_t)j * r->ldc + i;
        if (r->mode == ACC_DOUBLE) {
          double c = r->beta == 0.0 ? 0.0 : r->beta * get(r->C, ci, r->ct);
          double v = fma(r->alpha, acc, c);
          if (r->bias)
            v = v + get(r->bias, i, r->bias_type);
          if (r->relu && !(v > 0.0))
            v = 0.0;
          put(D, ci, r->ct, v);
        } else {
          float fa = (float)r->alpha, fb = (float)r->beta;
          float c = fb == 0.0f ? 0.0f : fb * (float)get(r->C, ci, r->ct);
          float v = fmaf(fa, facc, c);
          if (r->bias)
            v = v + (float)get(r->bias, i, r->bias_type);
          if (r->relu && !(v > 0.0f))
            v = 0.0f;
          put(D, ci, r->ct, v);
        }
      }
}

/* ---- Data ---- */

static uint64_t seed = 12345;
static double rnd(void) {   /* small values with short mantissas and some not */
  seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  int v = (int)((seed >> 33) % 2001) - 1000;
  return v / 256.0 + ((seed >> 20) & 1 ? 1.0 / 3.0 : 0.0);
}

/* n elements of type t on the host and on the device (same contents). */
typedef struct buf_s {
  void* h;
  CUdeviceptr d;
  size_t bytes;
} buf_t;

static buf_t make(size_t n, int t, int fill) {
  buf_t b;
  b.bytes = n * esize(t);
  b.h = own(calloc(1, b.bytes ? b.bytes : 1), free);
  for (size_t i = 0; i < n && fill; i++)
    put(b.h, i, t, rnd());
  OK(cuMemAlloc(&b.d, b.bytes ? b.bytes : 1));
  OK(cuMemcpyHtoD(b.d, b.h, b.bytes));
  return b;
}

static void same_bits(buf_t* b, const void* want, const char* what) {
  void* got = malloc(b->bytes);
  OK(cuCtxSynchronize());
  OK(cuMemcpyDtoH(got, b->d, b->bytes));
  size_t first = b->bytes;
  for (size_t i = 0; i < b->bytes; i++)
    if (((unsigned char*)got)[i] != ((const unsigned char*)want)[i]) {
      first = i;
      break;
    }
  cr_assert_eq(first, b->bytes, "%s: first difference at byte %zu of %zu", what, first, b->bytes);
  free(got);
}

/* A legacy-API case: computes with cublasGemmStridedBatchedEx-like
 * arguments through `api`, checks against the reference. */
enum { API_GEMMEX, API_STRIDED_EX, API_SGEMM, API_DGEMM, API_HGEMM, API_S_STRIDED, API_D_STRIDED,
       API_H_STRIDED, API_SGEMMEX, API_S_BATCHED, API_D_BATCHED, API_H_BATCHED, API_BATCHED_EX };

/* The device arrays of batch pointers of a pointer-array call: entry b at
 * element b * stride of the operand's buffer. They hold entry 0's pointer
 * for every b until the handle's stream reaches a copy of the right ones,
 * which waits for *gate: a stand-in that read the arrays at the call, not
 * when its kernel runs, would compute every entry from entry 0. */
typedef struct ptr_arrays_s {
  CUdeviceptr a, b, c;
} ptr_arrays_t;

static volatile uint32_t* gate;

static CUdeviceptr gated_array(CUstream s, CUdeviceptr base, long long stride, int t, int batch) {
  void** want = own(calloc((size_t)batch, sizeof(void*)), free);
  void** stale = own(calloc((size_t)batch, sizeof(void*)), free);
  for (int b = 0; b < batch; b++) {
    want[b] = (void*)(uintptr_t)(base + (CUdeviceptr)(b * stride * (long long)esize(t)));
    stale[b] = (void*)(uintptr_t)base;
  }
  CUdeviceptr d;
  OK(cuMemAlloc(&d, (size_t)batch * sizeof(void*)));
  OK(cuMemcpyHtoD(d, stale, (size_t)batch * sizeof(void*)));
  OK(cuStreamWaitValue32(s, (CUdeviceptr)(uintptr_t)gate, 1, CU_STREAM_WAIT_VALUE_GEQ));
  OK(cuMemcpyHtoDAsync(d, want, (size_t)batch * sizeof(void*), s));
  return d;
}

static ptr_arrays_t gated_arrays(cublasHandle_t h, const ref_t* r, CUdeviceptr A, CUdeviceptr B,
                                 CUdeviceptr C) {
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CB(cublasSetStream_v2(h, (cudaStream_t)s));
  if (gate == NULL)
    OK(cuMemAllocHost((void**)&gate, sizeof(*gate)));
  *gate = 0;
  return (ptr_arrays_t){gated_array(s, A, r->sa, r->at, r->batch),
                        gated_array(s, B, r->sb, r->bt, r->batch),
                        gated_array(s, C, r->sc, r->ct, r->batch)};
}

static void legacy_case(cublasHandle_t h, int api, ref_t r, int compute, const char* what) {
  int arows = r.ta ? r.k : r.m, acols = r.ta ? r.m : r.k;
  int brows = r.tb ? r.n : r.k, bcols = r.tb ? r.k : r.n;
  r.lda = arows + 3;
  r.ldb = brows + 1;
  r.ldc = r.m + 2;
  r.sa = (long long)r.lda * acols + 5;
  r.sb = (long long)r.ldb * bcols;
  r.sc = (long long)r.ldc * r.n + 7;
  buf_t A = make((size_t)r.sa * r.batch, r.at, 1), B = make((size_t)r.sb * r.batch, r.bt, 1);
  buf_t C = make((size_t)r.sc * r.batch, r.ct, 1);
  r.A = A.h;
  r.B = B.h;
  r.C = C.h;
  void* want = malloc(C.bytes);
  memcpy(want, C.h, C.bytes);
  reference(&r, want);
  unsigned char al[8], be[8];   /* the scalars in the scale type */
  int st = r.mode == ACC_DOUBLE ? CUDA_R_64F : (r.mode == ACC_HALF ? CUDA_R_16F : CUDA_R_32F);
  put(al, 0, st, r.alpha);
  put(be, 0, st, r.beta);
  cublasOperation_t ta = r.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = r.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  void *dA = (void*)A.d, *dB = (void*)B.d, *dC = (void*)C.d;
  ptr_arrays_t pa = {0, 0, 0};
  if (api >= API_S_BATCHED)
    pa = gated_arrays(h, &r, A.d, B.d, C.d);
  const void *const *aA = (const void* const*)(uintptr_t)pa.a,
             *const *aB = (const void* const*)(uintptr_t)pa.b;
  void* const* aC = (void* const*)(uintptr_t)pa.c;
  switch (api) {
  case API_GEMMEX:
    CB(cublasGemmEx(h, ta, tb, r.m, r.n, r.k, al, dA, r.at, r.lda, dB, r.bt, r.ldb, be, dC, r.ct,
                    r.ldc, compute, CUBLAS_GEMM_DEFAULT));
    break;
  case API_STRIDED_EX:
    CB(cublasGemmStridedBatchedEx(h, ta, tb, r.m, r.n, r.k, al, dA, r.at, r.lda, r.sa, dB, r.bt,
                                  r.ldb, r.sb, be, dC, r.ct, r.ldc, r.sc, r.batch, compute,
                                  CUBLAS_GEMM_DEFAULT_TENSOR_OP));
    break;
  case API_SGEMM:
    CB(cublasSgemm_v2(h, ta, tb, r.m, r.n, r.k, (float*)al, dA, r.lda, dB, r.ldb, (float*)be, dC,
                      r.ldc));
    break;
  case API_DGEMM:
    CB(cublasDgemm_v2(h, ta, tb, r.m, r.n, r.k, (double*)al, dA, r.lda, dB, r.ldb, (double*)be,
                      dC, r.ldc));
    break;
  case API_HGEMM:
    CB(cublasHgemm(h, ta, tb, r.m, r.n, r.k, (uint16_t*)al, dA, r.lda, dB, r.ldb, (uint16_t*)be,
                   dC, r.ldc));
    break;
  case API_S_STRIDED:
    CB(cublasSgemmStridedBatched(h, ta, tb, r.m, r.n, r.k, (float*)al, dA, r.lda, r.sa, dB,
                                 r.ldb, r.sb, (float*)be, dC, r.ldc, r.sc, r.batch));
    break;
  case API_D_STRIDED:
    CB(cublasDgemmStridedBatched(h, ta, tb, r.m, r.n, r.k, (double*)al, dA, r.lda, r.sa, dB,
                                 r.ldb, r.sb, (double*)be, dC, r.ldc, r.sc, r.batch));
    break;
  case API_H_STRIDED:
    CB(cublasHgemmStridedBatched(h, ta, tb, r.m, r.n, r.k, (uint16_t*)al, dA, r.lda, r.sa, dB,
                                 r.ldb, r.sb, (uint16_t*)be, dC, r.ldc, r.sc, r.batch));
    break;
  case API_SGEMMEX:
    CB(cublasSgemmEx(h, ta, tb, r.m, r.n, r.k, (float*)al, dA, r.at, r.lda, dB, r.bt, r.ldb,
                     (float*)be, dC, r.ct, r.ldc));
    break;
  case API_S_BATCHED:
    CB(cublasSgemmBatched(h, ta, tb, r.m, r.n, r.k, (float*)al, (const float* const*)aA, r.lda,
                          (const float* const*)aB, r.ldb, (float*)be, (float* const*)aC, r.ldc,
                          r.batch));
    break;
  case API_D_BATCHED:
    CB(cublasDgemmBatched(h, ta, tb, r.m, r.n, r.k, (double*)al, (const double* const*)aA, r.lda,
                          (const double* const*)aB, r.ldb, (double*)be, (double* const*)aC, r.ldc,
                          r.batch));
    break;
  case API_H_BATCHED:
    CB(cublasHgemmBatched(h, ta, tb, r.m, r.n, r.k, (uint16_t*)al, (const uint16_t* const*)aA,
                          r.lda, (const uint16_t* const*)aB, r.ldb, (uint16_t*)be,
                          (uint16_t* const*)aC, r.ldc, r.batch));
    break;
  case API_BATCHED_EX:
    CB(cublasGemmBatchedEx(h, ta, tb, r.m, r.n, r.k, al, aA, r.at, r.lda, aB, r.bt, r.ldb, be, aC,
                           r.ct, r.ldc, r.batch, compute, CUBLAS_GEMM_DEFAULT));
    break;
  }
  if (api >= API_S_BATCHED)
    *gate = 1;   /* the stream may now copy the right pointers, then compute */
  same_bits(&C, want, what);
  free(want);
}

static ref_t shape(int ta, int tb, int m, int n, int k, int batch, int t, int mode) {
  ref_t r = {.ta = ta, .tb = tb, .m = m, .n = n, .k = k, .batch = batch, .splits = 1,
             .mode = mode, .at = t, .bt = t, .ct = t, .alpha = 1.5, .beta = -0.75};
  return r;
}

/* ---- The legacy API ---- */

Test(sim_cublas, sgemm_dgemm_hgemm_match_the_reference_for_every_transpose) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  for (int t = 0; t < 4; t++) {
    int ta = t & 1, tb = t >> 1;
    legacy_case(h, API_SGEMM, shape(ta, tb, 37, 29, 41, 1, CUDA_R_32F, IN_AS_IS), 0, "sgemm");
    legacy_case(h, API_DGEMM, shape(ta, tb, 33, 17, 45, 1, CUDA_R_64F, ACC_DOUBLE), 0, "dgemm");
    legacy_case(h, API_HGEMM, shape(ta, tb, 31, 70, 23, 1, CUDA_R_16F, ACC_HALF), 0, "hgemm");
  }
  CB(cublasDestroy_v2(h));
}

Test(sim_cublas, gemm_ex_mixed_types_match_the_reference) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  ref_t r = shape(0, 1, 150, 300, 70, 1, CUDA_R_16BF, IN_AS_IS);   /* persistent: 4 x 2 tiles */
  r.ct = CUDA_R_32F;
  legacy_case(h, API_GEMMEX, r, CUBLAS_COMPUTE_32F, "bf16 in, f32 out");
  r = shape(1, 0, 64, 64, 96, 1, CUDA_R_16F, IN_AS_IS);
  legacy_case(h, API_GEMMEX, r, CUBLAS_COMPUTE_32F, "f16 in and out, f32 compute");
  r = shape(0, 0, 40, 20, 50, 1, CUDA_R_32F, IN_BF16);
  legacy_case(h, API_GEMMEX, r, CUBLAS_COMPUTE_32F_FAST_16BF, "f32 as bf16");
  r = shape(0, 0, 40, 20, 50, 1, CUDA_R_32F, IN_F16);
  legacy_case(h, API_GEMMEX, r, CUBLAS_COMPUTE_32F_FAST_16F, "f32 as f16");
  r = shape(0, 0, 40, 20, 50, 1, CUDA_R_32F, IN_TF32);
  legacy_case(h, API_GEMMEX, r, CUBLAS_COMPUTE_32F_FAST_TF32, "f32 as tf32");
  r = shape(1, 1, 21, 22, 23, 1, CUDA_R_16F, IN_AS_IS);
  r.ct = CUDA_R_32F;
  legacy_case(h, API_SGEMMEX, r, 0, "sgemmex f16 in, f32 out");
  CB(cublasDestroy_v2(h));
}

Test(sim_cublas, the_math_mode_decides_tf32_for_fp32) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  cublasMath_t m;
  CB(cublasGetMathMode(h, &m));
  cr_assert_eq(m, CUBLAS_DEFAULT_MATH);
  legacy_case(h, API_SGEMM, shape(0, 0, 30, 30, 30, 1, CUDA_R_32F, IN_AS_IS), 0, "default math");
  CB(cublasSetMathMode(h, CUBLAS_TF32_TENSOR_OP_MATH));
  legacy_case(h, API_SGEMM, shape(0, 0, 30, 30, 30, 1, CUDA_R_32F, IN_TF32), 0, "tf32 math");
  CB(cublasSetMathMode(h, CUBLAS_PEDANTIC_MATH));
  legacy_case(h, API_SGEMM, shape(0, 0, 30, 30, 30, 1, CUDA_R_32F, IN_AS_IS), 0, "pedantic");
  cr_assert_eq(cublasSetMathMode(h, (cublasMath_t)7), CUBLAS_STATUS_INVALID_VALUE);
  CB(cublasDestroy_v2(h));
}

Test(sim_cublas, strided_batched_forms_match_the_reference) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  legacy_case(h, API_S_STRIDED, shape(1, 0, 19, 23, 17, 5, CUDA_R_32F, IN_AS_IS), 0, "s strided");
  legacy_case(h, API_D_STRIDED, shape(0, 1, 19, 23, 17, 3, CUDA_R_64F, ACC_DOUBLE), 0, "d strided");
  legacy_case(h, API_H_STRIDED, shape(0, 0, 19, 23, 17, 4, CUDA_R_16F, ACC_HALF), 0, "h strided");
  ref_t r = shape(0, 0, 70, 65, 33, 6, CUDA_R_16BF, IN_AS_IS);
  legacy_case(h, API_STRIDED_EX, r, CUBLAS_COMPUTE_32F, "bf16 strided ex");
  CB(cublasDestroy_v2(h));
}

Test(sim_cublas, pointer_array_batches_match_the_reference_reading_the_arrays_in_stream_order) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  legacy_case(h, API_S_BATCHED, shape(1, 0, 19, 23, 17, 5, CUDA_R_32F, IN_AS_IS), 0, "s batched");
  legacy_case(h, API_D_BATCHED, shape(0, 1, 19, 23, 17, 3, CUDA_R_64F, ACC_DOUBLE), 0, "d batched");
  legacy_case(h, API_H_BATCHED, shape(1, 1, 19, 23, 17, 4, CUDA_R_16F, ACC_HALF), 0, "h batched");
  ref_t r = shape(0, 0, 70, 65, 33, 6, CUDA_R_16BF, IN_AS_IS);
  r.ct = CUDA_R_32F;
  legacy_case(h, API_BATCHED_EX, r, CUBLAS_COMPUTE_32F, "bf16 in, f32 out, batched ex");
  /* Arguments are checked as for the strided forms. */
  float one = 1.0f;
  cr_assert_eq(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, NULL, 2, NULL, 4,
                                  &one, NULL, 4, 1),
               CUBLAS_STATUS_INVALID_VALUE);
  cr_assert_eq(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 4, 4, &one, NULL, 4, NULL, 4,
                                  &one, NULL, 4, -1),
               CUBLAS_STATUS_INVALID_VALUE);
  CB(cublasDestroy_v2(h));
}

Test(sim_cublas, beta_zero_never_reads_c_and_device_scalars_are_read_on_the_device) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  int m = 8, n = 8, k = 8;
  buf_t A = make(64, CUDA_R_32F, 1), B = make(64, CUDA_R_32F, 1), C = make(64, CUDA_R_32F, 0);
  float nan = NAN, want[64];
  for (int i = 0; i < 64; i++)
    ((float*)C.h)[i] = nan;
  OK(cuMemcpyHtoD(C.d, C.h, C.bytes));
  ref_t r = shape(0, 0, m, n, k, 1, CUDA_R_32F, IN_AS_IS);
  r.A = A.h, r.B = B.h, r.C = C.h, r.lda = r.ldb = r.ldc = 8, r.beta = 0.0, r.alpha = 2.0;
  reference(&r, want);
  float two = 2.0f, zero = 0.0f;
  CB(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &two, (float*)A.d, 8, (float*)B.d, 8,
                    &zero, (float*)C.d, 8));
  same_bits(&C, want, "beta 0 over NaN");
  /* Device pointer mode: the scalars are read when the kernel runs. */
  CUdeviceptr ds;
  OK(cuMemAlloc(&ds, 8));
  float s[2] = {-1.25f, 0.0f};
  OK(cuMemcpyHtoD(ds, s, 8));
  CB(cublasSetPointerMode_v2(h, CUBLAS_POINTER_MODE_DEVICE));
  r.alpha = -1.25;
  reference(&r, want);
  CB(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, (float*)ds, (float*)A.d, 8,
                    (float*)B.d, 8, (float*)(ds + 4), (float*)C.d, 8));
  same_bits(&C, want, "device scalars");
  CB(cublasDestroy_v2(h));
}

Test(sim_cublas, the_legacy_api_checks_its_arguments) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  float one = 1.0f, x[4] = {0};
  float* p = (float*)(uintptr_t)0x1000;   /* never dereferenced: the checks come first */
  cr_assert_eq(cublasSgemm_v2(NULL, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, 2, p, 2, &one, p, 2),
               CUBLAS_STATUS_NOT_INITIALIZED);
  cr_assert_eq(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, -1, 2, 2, &one, p, 2, p, 2, &one, p, 2),
               CUBLAS_STATUS_INVALID_VALUE);
  cr_assert_eq(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 2, 2, &one, p, 3, p, 2, &one, p, 4),
               CUBLAS_STATUS_INVALID_VALUE, "lda < m");
  cr_assert_eq(cublasSgemm_v2(h, CUBLAS_OP_T, CUBLAS_OP_N, 4, 2, 3, &one, p, 2, p, 3, &one, p, 4),
               CUBLAS_STATUS_INVALID_VALUE, "lda < k for op(A) = A^T");
  cr_assert_eq(cublasSgemm_v2(h, (cublasOperation_t)9, CUBLAS_OP_N, 2, 2, 2, &one, p, 2, p, 2,
                              &one, p, 2),
               CUBLAS_STATUS_INVALID_VALUE);
  cr_assert_eq(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, CUDA_R_8I, 2, p,
                            CUDA_R_8I, 2, &one, p, CUDA_R_32I, 2, CUBLAS_COMPUTE_32I,
                            CUBLAS_GEMM_DEFAULT),
               CUBLAS_STATUS_NOT_SUPPORTED);
  cr_assert_eq(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, CUDA_R_32F, 2, p,
                            CUDA_R_32F, 2, &one, p, CUDA_R_32F, 2, CUBLAS_COMPUTE_32F,
                            (cublasGemmAlgo_t)57),
               CUBLAS_STATUS_INVALID_VALUE, "no such algo");
  cr_assert_eq(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 2, 2, 2, &one, p, CUDA_R_16F, 2, p,
                            CUDA_R_16F, 2, &one, p, CUDA_R_64F, 2, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT),
               CUBLAS_STATUS_NOT_SUPPORTED, "f16 in, f64 out");
  /* Nothing to do is success, and touches nothing. */
  CB(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 0, 2, 2, &one, x, 1, x, 2, &one, x, 1));
  cr_assert_eq(cublasSetSmCountTarget(h, -1), CUBLAS_STATUS_INVALID_VALUE);
  cr_assert_eq(cublasSetWorkspace_v2(h, NULL, 64), CUBLAS_STATUS_INVALID_VALUE);
  CB(cublasDestroy_v2(h));
  cr_assert_eq(cublasDestroy_v2(h), CUBLAS_STATUS_NOT_INITIALIZED, "a destroyed handle");
  cr_assert_str_eq(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED), "CUBLAS_STATUS_NOT_SUPPORTED");
  int v = 0;
  CB(cublasGetProperty(MAJOR_VERSION, &v));
  cr_assert_eq(v, CUBLAS_VER_MAJOR);
}

/* ---- cuBLASLt ---- */

typedef struct lt_s {
  cublasLtHandle_t h;
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t a, b, c;
  cublasLtMatmulPreference_t pref;
} lt_t;

static cublasLtMatrixLayout_t layout(int type, int rows, int cols, int ld, int row_major,
                                     int batch, long long stride) {
  cublasLtMatrixLayout_t l;
  CB(cublasLtMatrixLayoutCreate(&l, type, rows, cols, ld));
  own(l, drop_layout);
  int32_t order = row_major ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL;
  CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, sizeof(order)));
  int32_t bc = batch;
  int64_t st = stride;
  CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof(bc)));
  CB(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &st,
                                      sizeof(st)));
  return l;
}

Test(sim_cublas, lt_matmul_row_major_with_bias_and_relu_matches_the_reference) {
  start();
  cublasLtHandle_t h;
  CB(cublasLtCreate(&h));
  int m = 50, n = 40, k = 30;
  cublasLtMatmulDesc_t op = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int32_t t = CUBLAS_OP_T;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &t, sizeof(t)));
  uint32_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof(epi)));
  buf_t bias = make(m, CUDA_R_16BF, 1);
  void* bp = (void*)bias.d;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof(bp)));
  /* A row-major m x k, B (stored n x k, used transposed) row-major, C and D column-major. */
  buf_t A = make((size_t)m * k, CUDA_R_16BF, 1), B = make((size_t)n * k, CUDA_R_16BF, 1);
  buf_t D = make((size_t)m * n, CUDA_R_16BF, 1);
  cublasLtMatrixLayout_t la = layout(CUDA_R_16BF, m, k, k, 1, 1, 0);
  cublasLtMatrixLayout_t lb = layout(CUDA_R_16BF, n, k, k, 1, 1, 0);
  cublasLtMatrixLayout_t lc = layout(CUDA_R_16BF, m, n, m, 0, 1, 0);
  float alpha = 0.5f, beta = 1.0f;
  /* The reference in column-major terms: row-major A (m x k, ld k) is A^T
   * column-major with ld k; row-major B (n x k) is column-major k x n. */
  ref_t r = {.ta = 1, .tb = 0, .m = m, .n = n, .k = k, .batch = 1, .splits = 1, .mode = IN_AS_IS,
             .relu = 1, .at = CUDA_R_16BF, .bt = CUDA_R_16BF, .ct = CUDA_R_16BF, .alpha = alpha,
             .beta = beta, .A = A.h, .B = B.h, .C = D.h, .bias = bias.h, .lda = k, .ldb = k,
             .ldc = m, .bias_type = CUDA_R_16BF};
  void* want = malloc(D.bytes);
  memcpy(want, D.h, D.bytes);
  reference(&r, want);
  CB(cublasLtMatmul(h, op, &alpha, (void*)A.d, la, (void*)B.d, lb, &beta, (void*)D.d, lc,
                    (void*)D.d, lc, NULL, NULL, 0, NULL));
  same_bits(&D, want, "lt, row-major, bias + relu, in place");
  free(want);
  CB(cublasLtDestroy(h));
}

/* The heuristic for an m x n x k bf16 GEMM (all column-major). */
static cublasLtMatmulHeuristicResult_t heuristic(cublasLtHandle_t h, int m, int n, int k,
                                                 int sm_target, uint64_t max_ws, int* count) {
  cublasLtMatmulDesc_t op = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int32_t sm = sm_target;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm, sizeof(sm)));
  cublasLtMatrixLayout_t la = layout(CUDA_R_16BF, m, k, m, 0, 1, 0);
  cublasLtMatrixLayout_t lb = layout(CUDA_R_16BF, k, n, k, 0, 1, 0);
  cublasLtMatrixLayout_t lc = layout(CUDA_R_32F, m, n, m, 0, 1, 0);
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_ws,
                                          sizeof(max_ws)));
  cublasLtMatmulHeuristicResult_t res[4];
  CB(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, lc, lc, pref, 4, res, count));
  CB(cublasLtMatmulPreferenceDestroy(pref));
  cr_assert_geq(*count, 1);
  cr_assert_eq(res[0].state, CUBLAS_STATUS_SUCCESS);
  return res[0];
}

static uint32_t config(const cublasLtMatmulAlgo_t* a, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t v = 0;
  size_t w = 0;
  CB(cublasLtMatmulAlgoConfigGetAttribute(a, attr, &v, sizeof(v), &w));
  cr_assert_eq(w, 4);
  return v;
}

Test(sim_cublas, the_heuristic_goes_persistent_and_follows_the_sm_count_target) {
  start();
  cublasLtHandle_t h;
  CB(cublasLtCreate(&h));
  int n;
  /* 32 x 16 tiles of 128 x 256: persistent, one block per SM. */
  cublasLtMatmulHeuristicResult_t r = heuristic(h, 4096, 4096, 4096, 0, 0, &n);
  cr_assert_eq(config(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID), CUBLASLT_MATMUL_TILE_128x256);
  cr_assert_eq(config(&r.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION), 1, "persistent");
  cr_assert_float_eq(r.wavesCount, 1.0f, 1e-6);
  /* With 118 SMs targeted: 118 blocks. */
  r = heuristic(h, 4096, 4096, 4096, 118, 0, &n);
  cr_assert_float_eq(r.wavesCount, 118.0f / 132.0f, 1e-6);
  /* Few tiles: one block per tile, not persistent. */
  r = heuristic(h, 256, 256, 512, 0, 0, &n);
  cr_assert_eq(config(&r.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION), 0);
  cr_assert_float_eq(r.wavesCount, 2.0f / 132.0f, 1e-6);
  CB(cublasLtDestroy(h));
}

Test(sim_cublas, split_k_needs_a_workspace_and_sums_its_splits_in_order) {
  start();
  cublasLtHandle_t h;
  CB(cublasLtCreate(&h));
  int m = 64, n = 64, k = 4096, count;
  /* No workspace allowed: no split. */
  cublasLtMatmulHeuristicResult_t r = heuristic(h, m, n, k, 0, 0, &count);
  cr_assert_eq(config(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM), 1);
  cr_assert_eq(r.workspaceSize, 0);
  r = heuristic(h, m, n, k, 0, 1 << 20, &count);
  int splits = (int)config(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  cr_assert_eq(splits, 4, "one tile, k = 4096: four splits of 1024");
  cr_assert_eq(r.workspaceSize, (size_t)splits * m * n * 4);
  cr_assert_eq(count, 2, "then the same without split-K");
  /* Run it: the reference adds the four partial sums in order. */
  cublasLtMatmulDesc_t op = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  buf_t A = make((size_t)m * k, CUDA_R_16BF, 1), B = make((size_t)k * n, CUDA_R_16BF, 1);
  buf_t C = make((size_t)m * n, CUDA_R_32F, 1);
  cublasLtMatrixLayout_t la = layout(CUDA_R_16BF, m, k, m, 0, 1, 0);
  cublasLtMatrixLayout_t lb = layout(CUDA_R_16BF, k, n, k, 0, 1, 0);
  cublasLtMatrixLayout_t lc = layout(CUDA_R_32F, m, n, m, 0, 1, 0);
  ref_t ref = {.m = m, .n = n, .k = k, .batch = 1, .splits = splits, .mode = IN_AS_IS,
               .at = CUDA_R_16BF, .bt = CUDA_R_16BF, .ct = CUDA_R_32F, .alpha = 1.0, .beta = 1.0,
               .A = A.h, .B = B.h, .C = C.h, .lda = m, .ldb = k, .ldc = m};
  void* want = malloc(C.bytes);
  memcpy(want, C.h, C.bytes);
  reference(&ref, want);
  float one = 1.0f;
  CUdeviceptr ws;
  OK(cuMemAlloc(&ws, r.workspaceSize));
  cr_assert_eq(cublasLtMatmul(h, op, &one, (void*)A.d, la, (void*)B.d, lb, &one, (void*)C.d, lc,
                              (void*)C.d, lc, &r.algo, (void*)ws, r.workspaceSize - 4, NULL),
               CUBLAS_STATUS_INVALID_VALUE, "a workspace too small for the algo");
  CB(cublasLtMatmul(h, op, &one, (void*)A.d, la, (void*)B.d, lb, &one, (void*)C.d, lc,
                    (void*)C.d, lc, &r.algo, (void*)ws, r.workspaceSize, NULL));
  same_bits(&C, want, "split-K");
  /* Without a split the order differs: these inputs round differently. */
  ref.splits = 1;
  void* chain = malloc(C.bytes);
  memcpy(chain, C.h, C.bytes);
  reference(&ref, chain);
  cr_assert_neq(memcmp(chain, want, C.bytes), 0, "the data must tell the two orders apart");
  free(chain);
  free(want);
  CB(cublasLtDestroy(h));
}

Test(sim_cublas, lt_descriptors_check_sizes_and_refuse_what_they_cannot_do) {
  start();
  cublasLtHandle_t h;
  CB(cublasLtCreate(&h));
  cublasLtMatmulDesc_t op = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int64_t wrong = 1;
  cr_assert_eq(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &wrong,
                                              sizeof(wrong)),
               CUBLAS_STATUS_INVALID_VALUE, "TRANSA is 4 bytes");
  size_t need = 0;
  CB(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, NULL, 0, &need));
  cr_assert_eq(need, 4);
  int32_t sm = 66, got = 0;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sm, sizeof(sm)));
  CB(cublasLtMatmulDescGetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &got, sizeof(got),
                                    &need));
  cr_assert_eq(got, 66);
  /* A caller-owned descriptor, as cublasLtMatmulDescInit makes one. */
  cublasLtMatmulDescOpaque_t mine;
  CB(cublasLtMatmulDescInit(&mine, CUBLAS_COMPUTE_64F, CUDA_R_64F));
  int32_t c = 0;
  CB(cublasLtMatmulDescGetAttribute(&mine, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &c, sizeof(c),
                                    &need));
  cr_assert_eq(c, CUBLAS_COMPUTE_64F);
  /* fp8 scale pointers are kept, but the matmul says it cannot honour them. */
  void* scale = (void*)(uintptr_t)0x1234;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scale,
                                    sizeof(scale)));
  buf_t X = make(64, CUDA_R_32F, 1);
  cublasLtMatrixLayout_t l = layout(CUDA_R_32F, 8, 8, 8, 0, 1, 0);
  float one = 1.0f;
  cr_assert_eq(cublasLtMatmul(h, op, &one, (void*)X.d, l, (void*)X.d, l, &one, (void*)X.d, l,
                              (void*)X.d, l, NULL, NULL, 0, NULL),
               CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtMatmulDesc_t op2 = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayout_t bad = layout(CUDA_R_32F, 8, 9, 8, 0, 1, 0);   /* 8 x 9 */
  cr_assert_eq(cublasLtMatmul(h, op2, &one, (void*)X.d, l, (void*)X.d, l, &one, (void*)X.d, bad,
                              (void*)X.d, bad, NULL, NULL, 0, NULL),
               CUBLAS_STATUS_INVALID_VALUE, "C is not m x n");
  int32_t col32 = CUBLASLT_ORDER_COL32;
  CB(cublasLtMatrixLayoutSetAttribute(bad, CUBLASLT_MATRIX_LAYOUT_ORDER, &col32, sizeof(col32)));
  cr_assert_eq(cublasLtMatmul(h, op2, &one, (void*)X.d, l, (void*)X.d, l, &one, (void*)X.d, bad,
                              (void*)X.d, bad, NULL, NULL, 0, NULL),
               CUBLAS_STATUS_NOT_SUPPORTED, "interleaved orders");
  cr_assert_eq(cublasLtMatmul(NULL, op2, &one, (void*)X.d, l, (void*)X.d, l, &one, (void*)X.d, l,
                              (void*)X.d, l, NULL, NULL, 0, NULL),
               CUBLAS_STATUS_NOT_INITIALIZED);
  CB(cublasLtDestroy(h));
}

/* ---- Time on the device model ---- */

/* One bf16 4096^3 GEMM on stream s through cuBLASLt, SM target sm. */
static void big_gemm(cublasLtHandle_t h, CUstream s, int sm, CUdeviceptr buf) {
  cublasLtMatmulDesc_t op = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  int32_t t = sm;
  CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &t, sizeof(t)));
  cublasLtMatrixLayout_t l = layout(CUDA_R_16BF, 4096, 4096, 4096, 0, 1, 0);
  float one = 1.0f, zero = 0.0f;
  CB(cublasLtMatmul(h, op, &one, (void*)buf, l, (void*)buf, l, &zero, (void*)buf, l, (void*)buf,
                    l, NULL, NULL, 0, s));
}

/* A co-runner on 14 SMs: 28 tiles of a long fp64 GEMM (2 blocks per SM). */
static void co_runner(cublasHandle_t h, CUstream s, CUdeviceptr buf) {
  double one = 1.0, zero = 0.0;
  CB(cublasSetStream_v2(h, s));
  CB(cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 128, 128 * 28, 2048, &one, (double*)buf, 128,
                    (double*)buf, 2048, &zero, (double*)buf, 128));
}

/* The time of the big GEMM: alone, beside the co-runner, and beside it with
 * the SM target of the SMs left. Bodies are skipped: only time is asked. */
Test(sim_cublas, a_persistent_gemm_loses_a_wave_beside_a_co_runner_unless_targeted) {
  setenv("SIMCU_TIME_ONLY", "1", 1);
  start();
  cublasLtHandle_t lt;
  cublasHandle_t h;
  CB(cublasLtCreate(&lt));
  own(lt, drop_lt);
  CB(cublasCreate_v2(&h));
  CUdeviceptr buf;
  OK(cuMemAlloc(&buf, (size_t)4096 * 4096 * 8));
  CUstream s1, s2;
  OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  CUevent a, b;
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  double t[3];
  for (int i = 0; i < 3; i++) {
    OK(cuCtxSynchronize());
    if (i > 0)
      co_runner(h, s2, buf);
    OK(cuEventRecord(a, s1));
    big_gemm(lt, s1, i == 2 ? 132 - 14 : 0, buf);
    OK(cuEventRecord(b, s1));
    OK(cuEventSynchronize(b));
    float ms = 0;
    OK(cuEventElapsedTime(&ms, a, b));
    t[i] = ms;
  }
  cr_assert(t[1] / t[0] >= 1.8 && t[1] / t[0] <= 2.1, "beside a co-runner: %.2fx (%.3f / %.3f ms)",
            t[1] / t[0], t[1], t[0]);
  cr_assert(t[2] / t[0] <= 1.25, "with the SM-count target: %.2fx", t[2] / t[0]);
  /* Calibration: 2 * 4096^3 flops alone at ~780 TFLOP/s (pytorch#100850: 720-772). */
  double tflops = 2.0 * 4096.0 * 4096.0 * 4096.0 / (t[0] * 1e-3) / 1e12;
  cr_assert(tflops > 700 && tflops < 800, "alone: %.0f TFLOP/s", tflops);
  CB(cublasDestroy_v2(h));
}

/* Calibration (docs/sim.md): fp32 SIMT, TF32 and fp64 4096^3 GEMMs alone, in
 * TFLOP/s of their kernel time; published H100 cuBLAS: 51.9 fp32, 402 TF32. */
Test(sim_cublas, fp32_tf32_and_fp64_gemms_take_their_calibrated_times) {
  setenv("SIMCU_TIME_ONLY", "1", 1);
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  CUdeviceptr buf;
  OK(cuMemAlloc(&buf, (size_t)4096 * 4096 * 8));
  CUevent a, b;
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  const double lo[3] = {48, 370, 48}, hi[3] = {53, 410, 53};
  for (int mode = 0; mode < 3; mode++) {
    CB(cublasSetMathMode(h, mode == 1 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    OK(cuCtxSynchronize());
    OK(cuEventRecord(a, NULL));
    float one = 1.0f, zero = 0.0f;
    double d1 = 1.0, d0 = 0.0;
    if (mode < 2)
      CB(cublasSgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4096, 4096, 4096, &one, (float*)buf, 4096,
                        (float*)buf, 4096, &zero, (float*)buf, 4096));
    else
      CB(cublasDgemm_v2(h, CUBLAS_OP_N, CUBLAS_OP_N, 4096, 4096, 4096, &d1, (double*)buf, 4096,
                        (double*)buf, 4096, &d0, (double*)buf, 4096));
    OK(cuEventRecord(b, NULL));
    OK(cuEventSynchronize(b));
    float ms = 0;
    OK(cuEventElapsedTime(&ms, a, b));
    /* Less the launch's host cost and device overhead (not the kernel's). */
    double us = ms * 1e3 - (D_LAUNCH + D_DEVICE_KERNEL) / 1e3;
    double tflops = 2.0 * 4096.0 * 4096.0 * 4096.0 / (us * 1e-6) / 1e12;
    cr_assert(tflops >= lo[mode] && tflops <= hi[mode], "mode %d: %.1f TFLOP/s", mode, tflops);
  }
  CB(cublasDestroy_v2(h));
}

/* ---- What frameworks call besides the GEMM family (issue 24) ---- */

Test(sim_cublas, lt_calls_accept_a_cublas_handle_as_torch_passes_it) {
  start();
  cublasHandle_t blas;
  CB(cublasCreate_v2(&blas));
  cublasLtHandle_t h = (cublasLtHandle_t)blas;   /* what PyTorch does for addmm with bias */
  int m = 24, n = 16, k = 8;
  cublasLtMatmulDesc_t op = desc(CUBLAS_COMPUTE_32F, CUDA_R_32F);
  buf_t A = make((size_t)m * k, CUDA_R_32F, 1), B = make((size_t)k * n, CUDA_R_32F, 1);
  buf_t D = make((size_t)m * n, CUDA_R_32F, 1);
  cublasLtMatrixLayout_t la = layout(CUDA_R_32F, m, k, m, 0, 1, 0);
  cublasLtMatrixLayout_t lb = layout(CUDA_R_32F, k, n, k, 0, 1, 0);
  cublasLtMatrixLayout_t ld = layout(CUDA_R_32F, m, n, m, 0, 1, 0);
  float alpha = 2.0f, beta = 0.5f;
  ref_t r = {.m = m, .n = n, .k = k, .batch = 1, .splits = 1, .mode = IN_AS_IS,
             .at = CUDA_R_32F, .bt = CUDA_R_32F, .ct = CUDA_R_32F, .alpha = alpha, .beta = beta,
             .A = A.h, .B = B.h, .C = D.h, .lda = m, .ldb = k, .ldc = m};
  void* want = malloc(D.bytes);
  memcpy(want, D.h, D.bytes);
  reference(&r, want);
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  cublasLtMatmulHeuristicResult_t res;
  int got = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(h, op, la, lb, ld, ld, pref, 1, &res, &got));
  cr_assert_eq(got, 1);
  CB(cublasLtMatmulPreferenceDestroy(pref));
  CB(cublasLtMatmul(h, op, &alpha, (void*)A.d, la, (void*)B.d, lb, &beta, (void*)D.d, ld,
                    (void*)D.d, ld, &res.algo, NULL, 0, NULL));
  same_bits(&D, want, "lt matmul under a cublas handle");
  free(want);
  /* It stays cuBLAS's to destroy. */
  cr_assert_eq(cublasLtDestroy(h), CUBLAS_STATUS_NOT_INITIALIZED);
  CB(cublasDestroy_v2(blas));
  cr_assert_eq(cublasLtMatmul(h, op, &alpha, (void*)A.d, la, (void*)B.d, lb, &beta, (void*)D.d,
                              ld, (void*)D.d, ld, NULL, NULL, 0, NULL),
               CUBLAS_STATUS_NOT_INITIALIZED);
}

Test(sim_cublas, functions_not_simulated_answer_not_supported) {
  start();
  cublasHandle_t h;
  CB(cublasCreate_v2(&h));
  float x = 1.0f, y = 0.0f;
  /* A level-2 routine, a _64 variant of a simulated GEMM, an Lt transform. */
  cr_assert_eq(cublasSgemv_v2(h, CUBLAS_OP_N, 1, 1, &x, &x, 1, &x, 1, &y, &y, 1),
               CUBLAS_STATUS_NOT_SUPPORTED);
  cr_assert_eq(cublasSgemm_v2_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &x, &x, 1, &x, 1, &y, &y, 1),
               CUBLAS_STATUS_NOT_SUPPORTED);
  cr_assert_eq(cublasSgemmBatched_64(h, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &x, NULL, 1, NULL, 1,
                                     &y, NULL, 1, 1),
               CUBLAS_STATUS_NOT_SUPPORTED);
  /* Undocumented, imported by cuSOLVER (sim/cublas/undocumented.c). */
  cr_assert_eq(cublasSetEnvironmentMode(0), CUBLAS_STATUS_NOT_SUPPORTED);
  cublasLtHandle_t lt;
  CB(cublasLtCreate(&lt));
  cr_assert_eq(cublasLtMatrixTransform(lt, NULL, &x, NULL, NULL, &y, NULL, NULL, NULL, NULL, 0),
               CUBLAS_STATUS_NOT_SUPPORTED);
  CB(cublasLtDestroy(lt));
  CB(cublasDestroy_v2(h));
}

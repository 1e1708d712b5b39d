/* gemm_math.h: the arithmetic of the sim's cuBLAS kernels (gemm_kernels.cu),
 * shared by the CUDA kernels, their CPU bodies (gemm_sim.c) and the plain-C
 * references of the tests, so that all three round alike.
 *
 * DESIGN: one parameter block describes a GEMM D = epilogue(alpha op(A) op(B)
 * + beta C) of any supported types: every matrix is addressed through a row
 * stride, a column stride and a batch stride (in elements), so column- and
 * row-major layouts and transposes need no separate code. An element of D is
 * one fused multiply-add chain over k in index order, in the compute type
 * (fmaf, or fma for doubles); with split-K, each split's chain goes to the
 * workspace and a second kernel adds the splits in order. Half and bfloat16
 * values are converted in software (round to nearest even), so a GPU and a
 * CPU give the same bits. What this does not reproduce: NVIDIA's tensor-core
 * products and summation orders, so results equal real cuBLAS's only where
 * every order gives the same bits (for example, integer-valued data).
 */
#ifndef SIMCUBLAS_GEMM_MATH_H
#define SIMCUBLAS_GEMM_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define SC_HD __host__ __device__ static inline
#else
#define SC_HD static inline
#endif

/* Element types: the cudaDataType values. */
enum { SC_F32 = 0, SC_F64 = 1, SC_F16 = 2, SC_BF16 = 14 };

/* How the products are formed (the compute type and math mode decide). */
enum {
  SC_ACC_F32 = 0,       /* float accumulation, inputs as they are */
  SC_ACC_F32_TF32 = 1,  /* float accumulation, inputs rounded to TF32 */
  SC_ACC_F32_F16 = 2,   /* float accumulation, inputs rounded to half */
  SC_ACC_F32_BF16 = 3,  /* float accumulation, inputs rounded to bfloat16 */
  SC_ACC_F16 = 4,       /* accumulation rounded to half after every step */
  SC_ACC_F64 = 5,       /* double */
};

/* Kernel families and their speed in the device model (gemm_sim.c). */
enum { SC_KIND_TENSOR16 = 0, SC_KIND_TF32 = 1, SC_KIND_SIMT32 = 2, SC_KIND_SIMT64 = 3 };

/* Epilogue bits (cublasLtEpilogue_t's RELU and BIAS bits). */
enum { SC_EPI_RELU = 2, SC_EPI_BIAS = 4 };

/* op(A)(i,p) is at A[b * a_bs + i * a_rs + p * a_cs]; op(B)(p,j), C(i,j)
 * and D(i,j) likewise. One block of the kernel: output tiles (tile_m x
 * tile_n of one batch entry), each split's share of k. */
typedef struct simcublas_params_s {
  const void* A;
  const void* B;
  const void* C;
  void* D;
  const void* alpha_ptr;   /* device pointers (pointer mode device), or NULL */
  const void* beta_ptr;
  const void* bias;        /* one per row of D, or NULL */
  void* workspace;         /* split-K partial sums */
  int64_t a_rs, a_cs, a_bs;
  int64_t b_rs, b_cs, b_bs;
  int64_t c_rs, c_cs, c_bs;
  int64_t d_rs, d_cs, d_bs;
  int64_t bias_bs;
  double alpha, beta;      /* host values (pointer mode host) */
  int32_t m, n, k, batch;
  int32_t type_a, type_b, type_c, type_d, type_scale, type_bias;
  int32_t acc;             /* SC_ACC_* */
  int32_t kind;            /* SC_KIND_* */
  int32_t epilogue;        /* SC_EPI_* bits */
  int32_t tile_m, tile_n, tiles_m, tiles_n;
  int32_t splits;          /* >1: partial sums to the workspace, then the reduce kernel */
  int32_t persistent;      /* blocks loop over tiles */
  int32_t occupancy;       /* blocks of the kernel that share one SM (its launch makes it so) */
  int32_t ptr_array;       /* A, B, C, D are device arrays of one pointer per batch entry
                            * (cublas?gemmBatched), read when the kernel runs; *_bs are 0 */
} simcublas_params_t;

/* ---- Conversions (round to nearest even; NaN stays NaN) ---- */

SC_HD float sc_bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

SC_HD uint32_t sc_f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
}

SC_HD float sc_bf16_to_f(uint16_t h) {
  return sc_bits_f((uint32_t)h << 16);
}

SC_HD uint16_t sc_f_to_bf16(float f) {
  uint32_t u = sc_f_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

SC_HD float sc_f16_to_f(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f)
    return sc_bits_f(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    if (m == 0)
      return sc_bits_f(sign);
    float v = (float)m * 5.9604644775390625e-8f;   /* m * 2^-24, exact */
    return sign ? -v : v;
  }
  return sc_bits_f(sign | ((e + 112u) << 23) | (m << 13));
}

SC_HD uint16_t sc_f_to_f16(float f) {
  uint32_t u = sc_f_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u)
    return (uint16_t)(sign | 0x7e00u);
  if (a >= 0x477ff000u)   /* rounds to 65520 or more: infinity */
    return (uint16_t)(sign | 0x7c00u);
  if (a < 0x38800000u) {  /* below 2^-14: subnormal, in units of 2^-24 */
    float v = sc_bits_f(a) * 16777216.0f;   /* exact: a power-of-two scale */
    float r = rintf(v);                      /* ties to even in the default mode */
    return (uint16_t)(sign | (uint32_t)r);
  }
  uint32_t e = (a >> 23) - 112u, m = a & 0x7fffffu;
  uint32_t h = (e << 10) | (m >> 13), rest = m & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    h++;   /* may carry into the exponent: still right */
  return (uint16_t)(sign | h);
}

/* TF32: 10 mantissa bits, round to nearest with ties away from zero (as
 * cvt.rna.tf32.f32 does). */
SC_HD float sc_round_tf32(float f) {
  uint32_t u = sc_f_bits(f);
  if ((u & 0x7f800000u) == 0x7f800000u)
    return f;
  return sc_bits_f((u + 0x1000u) & 0xffffe000u);
}

/* ---- Loads and stores ---- */

SC_HD double sc_load(const void* p, int64_t i, int type) {
  switch (type) {
  case SC_F64:
    return ((const double*)p)[i];
  case SC_F16:
    return (double)sc_f16_to_f(((const uint16_t*)p)[i]);
  case SC_BF16:
    return (double)sc_bf16_to_f(((const uint16_t*)p)[i]);
  default:
    return (double)((const float*)p)[i];
  }
}

/* Stores a float result (every compute type but double). */
SC_HD void sc_store_f(void* p, int64_t i, int type, float v) {
  switch (type) {
  case SC_F16:
    ((uint16_t*)p)[i] = sc_f_to_f16(v);
    break;
  case SC_BF16:
    ((uint16_t*)p)[i] = sc_f_to_bf16(v);
    break;
  default:
    ((float*)p)[i] = v;
    break;
  }
}

SC_HD float sc_round_f16(float v) {
  return sc_f16_to_f(sc_f_to_f16(v));
}

/* An input as the accumulation mode sees it. */
SC_HD float sc_in(double v, int acc) {
  float f = (float)v;   /* exact: inputs are float, half or bfloat16 here */
  switch (acc) {
  case SC_ACC_F32_TF32:
    return sc_round_tf32(f);
  case SC_ACC_F32_F16:
    return sc_round_f16(f);
  case SC_ACC_F32_BF16:
    return sc_bf16_to_f(sc_f_to_bf16(f));
  default:
    return f;
  }
}

/* ---- One element ---- */

/* Batch entry b's matrix of operand m: m itself (strided batches: the
 * caller adds b * bs elements) or, for a pointer-array batch, the b-th
 * pointer of the device array m. */
SC_HD const void* sc_entry(const simcublas_params_t* p, const void* m, int64_t b) {
  return p->ptr_array ? ((const void* const*)m)[b] : m;
}

/* The chain over p in [k0, k1) for D(i, j) of batch entry b, as a double
 * holding the compute type's value exactly. */
SC_HD double sc_dot(const simcublas_params_t* p, int64_t b, int64_t i, int64_t j, int k0, int k1) {
  const int64_t ab = b * p->a_bs + i * p->a_rs, bb = b * p->b_bs + j * p->b_cs;
  const void* A = sc_entry(p, p->A, b);
  const void* B = sc_entry(p, p->B, b);
  if (p->acc == SC_ACC_F64) {
    double acc = 0.0;
    for (int q = k0; q < k1; q++)
      acc = fma(sc_load(A, ab + q * p->a_cs, p->type_a), sc_load(B, bb + q * p->b_rs, p->type_b),
                acc);
    return acc;
  }
  float acc = 0.0f;
  if (p->acc == SC_ACC_F32 && p->type_a == SC_BF16 && p->type_b == SC_BF16) {
    /* The common case, without a type switch per product (the same arithmetic). */
    const uint16_t *a = (const uint16_t*)A + ab, *bv = (const uint16_t*)B + bb;
    for (int q = k0; q < k1; q++)
      acc = fmaf(sc_bf16_to_f(a[q * p->a_cs]), sc_bf16_to_f(bv[q * p->b_rs]), acc);
    return (double)acc;
  }
  for (int q = k0; q < k1; q++) {
    float x = sc_in(sc_load(A, ab + q * p->a_cs, p->type_a), p->acc);
    float y = sc_in(sc_load(B, bb + q * p->b_rs, p->type_b), p->acc);
    acc = fmaf(x, y, acc);
    if (p->acc == SC_ACC_F16)
      acc = sc_round_f16(acc);
  }
  return (double)acc;
}

/* A scalar: the host value, or read from the device pointer in the scale type. */
SC_HD double sc_scalar(const void* ptr, double host, int type) {
  return ptr != NULL ? sc_load(ptr, 0, type) : host;
}

/* D(i, j) = epilogue(alpha * acc + beta * C(i, j)), stored in D's type. */
SC_HD void sc_finish(const simcublas_params_t* p, int64_t b, int64_t i, int64_t j, double acc) {
  double alpha = sc_scalar(p->alpha_ptr, p->alpha, p->type_scale);
  double beta = sc_scalar(p->beta_ptr, p->beta, p->type_scale);
  int64_t d = b * p->d_bs + i * p->d_rs + j * p->d_cs;
  const void* C = sc_entry(p, p->C, b);
  void* D = (void*)sc_entry(p, p->D, b);
  if (p->acc == SC_ACC_F64) {
    double c = beta == 0.0 ? 0.0 : beta * sc_load(C, b * p->c_bs + i * p->c_rs + j * p->c_cs, p->type_c);
    double v = fma(alpha, acc, c);
    if (p->epilogue & SC_EPI_BIAS)
      v = v + sc_load(p->bias, b * p->bias_bs + i, p->type_bias);
    if ((p->epilogue & SC_EPI_RELU) && !(v > 0.0))
      v = 0.0;
    ((double*)D)[d] = v;
    return;
  }
  float fa = (float)alpha, fb = (float)beta;
  float c = fb == 0.0f ? 0.0f
                       : fb * (float)sc_load(C, b * p->c_bs + i * p->c_rs + j * p->c_cs, p->type_c);
  float v = fmaf(fa, (float)acc, c);
  if (p->epilogue & SC_EPI_BIAS)
    v = v + (float)sc_load(p->bias, b * p->bias_bs + i, p->type_bias);
  if ((p->epilogue & SC_EPI_RELU) && !(v > 0.0f))
    v = 0.0f;
  sc_store_f(D, d, p->type_d, v);
}

/* Split s's partial sum of element (b, i, j), in the workspace. */
SC_HD int64_t sc_part(const simcublas_params_t* p, int s, int64_t b, int64_t i, int64_t j) {
  return (((int64_t)s * p->batch + b) * p->n + j) * p->m + i;
}

/* The k range of split s: equal shares, the last takes the rest. */
SC_HD void sc_split_range(const simcublas_params_t* p, int s, int* k0, int* k1) {
  int share = p->k / p->splits;
  *k0 = s * share;
  *k1 = s == p->splits - 1 ? p->k : *k0 + share;
}

/* Elements first, first + step, ... of tile t (of tiles_m x tiles_n x
 * batch, m fastest), split s. */
SC_HD void sc_tile(const simcublas_params_t* p, int64_t t, int s, int first, int step) {
  int64_t per = (int64_t)p->tiles_m * p->tiles_n;
  int64_t b = t / per, r = t % per;
  int64_t i0 = (r % p->tiles_m) * p->tile_m, j0 = (r / p->tiles_m) * p->tile_n;
  int k0, k1;
  sc_split_range(p, s, &k0, &k1);
  for (int e = first; e < p->tile_m * p->tile_n; e += step) {
    int64_t i = i0 + e % p->tile_m, j = j0 + e / p->tile_m;
    if (i >= p->m || j >= p->n)
      continue;
    double acc = sc_dot(p, b, i, j, k0, k1);
    if (p->splits > 1) {
      if (p->acc == SC_ACC_F64)
        ((double*)p->workspace)[sc_part(p, s, b, i, j)] = acc;
      else
        ((float*)p->workspace)[sc_part(p, s, b, i, j)] = (float)acc;
    } else {
      sc_finish(p, b, i, j, acc);
    }
  }
}

/* One block of a GEMM kernel: its tile (or, persistent, every grid-th tile). */
SC_HD void sc_gemm_block(const simcublas_params_t* p, int64_t block, int64_t grid, int split, int first,
                         int step) {
  int64_t total = (int64_t)p->tiles_m * p->tiles_n * p->batch;
  if (!p->persistent) {
    if (block < total)
      sc_tile(p, block, split, first, step);
    return;
  }
  for (int64_t t = block; t < total; t += grid)
    sc_tile(p, t, split, first, step);
}

/* Element e of the reduce kernel: the splits added in order, then finished. */
SC_HD void sc_reduce_at(const simcublas_params_t* p, int64_t e) {
  int64_t mn = (int64_t)p->m * p->n;
  if (e >= mn * p->batch)
    return;
  int64_t b = e / mn, r = e % mn, i = r % p->m, j = r / p->m;
  if (p->acc == SC_ACC_F64) {
    const double* w = (const double*)p->workspace;
    double acc = w[sc_part(p, 0, b, i, j)];
    for (int s = 1; s < p->splits; s++)
      acc = acc + w[sc_part(p, s, b, i, j)];
    sc_finish(p, b, i, j, acc);
    return;
  }
  const float* w = (const float*)p->workspace;
  float acc = w[sc_part(p, 0, b, i, j)];
  for (int s = 1; s < p->splits; s++) {
    acc = acc + w[sc_part(p, s, b, i, j)];
    if (p->acc == SC_ACC_F16)
      acc = sc_round_f16(acc);
  }
  sc_finish(p, b, i, j, (double)acc);
}

#endif

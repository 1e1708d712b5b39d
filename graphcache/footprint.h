/* Footprints: the memory an op reads and writes, as byte intervals.
 *
 * DESIGN: independence of two ops is proven only from *contractual* effects
 * (../shared/design/CONCURRENCY.md §B.1): a library call whose arguments say
 * what it reads and writes (the shim records one footprint per GEMM call and
 * attaches every kernel the call launched to it), a memset (its destination),
 * a device-to-device copy (source and destination). Every other op is opaque:
 * a barrier that nothing moves across. Two non-opaque ops i < j are dependent
 * iff W_i meets R_j or W_j, or R_i meets W_j (byte intervals, half-open). A
 * footprint is a small fixed array of spans (reads first, then writes), so
 * that a check of two ops is a few compares and needs no allocation; a call
 * whose effects need more spans is opaque. The work fields (flops, bytes,
 * math) feed the concurrency estimator (dag.h); they never decide
 * correctness. */
#ifndef GRAPE_GRAPHCACHE_FOOTPRINT_H
#define GRAPE_GRAPHCACHE_FOOTPRINT_H

#include <stdint.h>

/* [lo, hi): bytes of device memory. */
typedef struct grape_span_s {
  uint64_t lo, hi;
} grape_span_t;

#define GRAPE_FOOT_SPANS 12

/* Why an op is a barrier (opaque), for the report. */
typedef enum grape_why_e {
  GRAPE_WHY_EXACT = 0,      /* not a barrier: its footprint is known */
  GRAPE_WHY_KERNEL,         /* a kernel launched outside any library call with a contract */
  GRAPE_WHY_CALL,           /* a library call whose effects could not be bounded (an
                               attribute or layout not understood, too many spans) */
  GRAPE_WHY_COOPERATIVE,    /* a cooperative launch */
  GRAPE_WHY_COLLECTIVE,     /* a collective or spin kernel (never held, never in a graph) */
  GRAPE_WHY_COUNT
} grape_why_t;

/* The throughput class of a GEMM's kernels (the estimator's rates). */
typedef enum grape_math_e {
  GRAPE_MATH_NONE = 0,      /* not a GEMM */
  GRAPE_MATH_TENSOR16,      /* fp16/bf16 inputs on tensor cores */
  GRAPE_MATH_TF32,
  GRAPE_MATH_SIMT32,
  GRAPE_MATH_SIMT64,
} grape_math_t;

typedef struct grape_foot_s {
  uint8_t nr, nw;           /* spans read s[0, nr), written s[nr, nr + nw) */
  uint8_t math;             /* grape_math_t of a GEMM call */
  uint8_t why;              /* GRAPE_WHY_EXACT, or why the call is opaque */
  uint32_t kernels;         /* kernels of the call seen so far in this region */
  double flops;             /* the call's work: 2 m n k batch */
  double bytes;             /* the traffic of its operands */
  uint32_t tiles;           /* its output tiles at the estimator's assumed tensor-op tile
                               (grape__foot_tiles; 0: not known) */
  grape_span_t s[GRAPE_FOOT_SPANS];
} grape_foot_t;

/* The output tiles of an m x n (x batch) GEMM at the tile the estimator
 * assumes a Hopper tensor-op kernel takes: 128 x 256, 64 for an m or n of at
 * most 64, 128 for an n of at most 128 (an assumption after cuBLAS's
 * heuristic on Hopper, docs/concurrency.md; what a persistent kernel's
 * blocks share out, so that fewer blocks may take no longer). */
static inline uint32_t grape__foot_tiles(double m, double n, double batch) {
  double tm = m <= 64 ? 64 : 128, tn = n <= 64 ? 64 : (n <= 128 ? 128 : 256);
  double t = __builtin_ceil(m / tm) * __builtin_ceil(n / tn) * batch;
  return t > 0 && t < 4e9 ? (uint32_t)t : 0;
}

/* Region op tags (grape_region_t.grp): 0 none; k (1 <= k < GRAPE_GRP_SPECIAL)
 * the footprint foot[k - 1]; the values from GRAPE_GRP_SPECIAL on name a
 * reason the op is a barrier. */
#define GRAPE_GRP_SPECIAL 0xffffff00u
#define GRAPE_GRP_COLLECTIVE (GRAPE_GRP_SPECIAL + GRAPE_WHY_COLLECTIVE)

static inline int grape__span_meet(const grape_span_t* a, const grape_span_t* b) {
  return a->lo < b->hi && b->lo < a->hi;
}

/* True when some span of a[0, na) meets some span of b[0, nb). */
static inline int grape__spans_meet(const grape_span_t* a, uint32_t na, const grape_span_t* b,
                                    uint32_t nb) {
  for (uint32_t i = 0; i < na; i++)
    for (uint32_t j = 0; j < nb; j++)
      if (grape__span_meet(&a[i], &b[j]))
        return 1;
  return 0;
}

#endif

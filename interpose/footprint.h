/* Footprints of library calls: what a cuBLAS/cuBLASLt GEMM reads and writes,
 * from its arguments, and the tag every op it launches carries.
 *
 * DESIGN: the interposed call (cublas.c) builds its footprint (graphcache/
 * footprint.h) before calling the real library and makes it this thread's
 * *current call* for the length of the real call. Every op the library
 * submits in it (launches, async memsets and copies reach the shim's hooks on
 * the same thread, before the call returns) is tagged with the call: the
 * launch path costs one thread-local load and a store (grape__call_tag) when
 * no call is current. The first op of a call in a chunk appends the
 * footprint to the region once; every tagged kernel's parameter words are
 * scanned for pointers the arguments did not declare (a workspace, a buffer
 * of the library's own): each such word adds the whole allocation it points
 * into (or the call's declared workspace span) to what the call writes, so
 * nothing the kernel can reach through a plain parameter word escapes the
 * footprint. Pointers hidden in descriptors (TMA tensor maps) are not seen:
 * the operands they describe come from the arguments, and attributes that
 * add other outputs (auxiliary epilogue outputs, scale and amax pointers)
 * make the call opaque. A nested call (the library calling another
 * interposed entry) joins the outermost. */
#ifndef GRAPE_INTERPOSE_FOOTPRINT_H
#define GRAPE_INTERPOSE_FOOTPRINT_H

#include <stdint.h>

#include "graphcache/region.h"

typedef struct grape_call_s {
  grape_foot_t foot;             /* what the call reads and writes (grows with the scan) */
  grape_span_t ws;               /* its declared workspace (hi == lo: none) */
  const grape_region_t* r;       /* the region its footprint was last appended to */
  uint32_t gen;                  /* r->ops.gen then */
  uint32_t tag;                  /* its tag there */
} grape_call_t;

/* The library call this thread is inside, or NULL. */
/* Thread-local: set and cleared by the thread's own library call (cublas.c) around it. */
extern __thread grape_call_t* grape__call __attribute__((tls_model("initial-exec")));

/* The tag of op i of r, just recorded (s locked), inside a call. */
uint32_t grape__call_tag_slow(grape_region_t* r, uint32_t i);

/* The tag of the op i just recorded in r: 0 outside library calls. */
static inline __attribute__((always_inline)) uint32_t grape__call_tag(grape_region_t* r, uint32_t i) {
  if (__builtin_expect(grape__call == NULL, 1))
    return 0;
  return grape__call_tag_slow(r, i);
}

/* ---- Building a footprint ---- */

/* Starts foot as an exact, empty footprint. */
void grape__foot_begin(grape_foot_t* f);

/* Adds [lo, hi) to what f reads (write: 0) or writes (1). A footprint out of
 * spans becomes opaque (GRAPE_WHY_CALL). Empty spans are skipped. */
void grape__foot_add(grape_foot_t* f, uint64_t lo, uint64_t hi, int write);

/* Bytes of one element of cudaDataType t, or 0 when unknown (or smaller
 * than a byte). */
uint32_t grape__dtype_size(int t);

/* The hull of a matrix as stored: rows x cols, leading dimension ld
 * (elements), row-major or column-major, batch entries `stride` elements
 * apart, elements of esize bytes, at ptr: into *lo, *hi. @return 0, or -1
 * when it overflows (the caller makes the call opaque). */
int grape__matrix_hull(uint64_t ptr, int64_t rows, int64_t cols, int64_t ld, int row_major,
                       int64_t batch, int64_t stride, uint32_t esize, uint64_t* lo, uint64_t* hi);

#endif

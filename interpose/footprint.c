/* Footprints of library calls and the tags of their ops (see footprint.h). */
#include "footprint.h"

#include <string.h>

#include "allocmap.h"

__thread grape_call_t* grape__call __attribute__((tls_model("initial-exec")));

void grape__foot_begin(grape_foot_t* f) {
  memset(f, 0, sizeof(*f));
  f->why = GRAPE_WHY_EXACT;
}

static int covered(const grape_foot_t* f, uint64_t lo, uint64_t hi) {
  for (uint32_t i = 0; i < (uint32_t)f->nr + f->nw; i++)
    if (f->s[i].lo <= lo && hi <= f->s[i].hi)
      return 1;
  return 0;
}

void grape__foot_add(grape_foot_t* f, uint64_t lo, uint64_t hi, int write) {
  if (hi <= lo || f->why != GRAPE_WHY_EXACT)
    return;
  if ((uint32_t)f->nr + f->nw >= GRAPE_FOOT_SPANS) {
    f->why = GRAPE_WHY_CALL;
    return;
  }
  if (write) {
    f->s[f->nr + f->nw] = (grape_span_t){lo, hi};
    f->nw++;
    return;
  }
  /* Reads stay before the writes: move the first write to the end. */
  if (f->nw > 0)
    f->s[f->nr + f->nw] = f->s[f->nr];
  f->s[f->nr] = (grape_span_t){lo, hi};
  f->nr++;
}

uint32_t grape__dtype_size(int t) {
  switch (t) {
  case 3: case 8: case 28: case 29: case 30:   /* 8-bit ints, fp8 */
    return 1;
  case 2: case 14: case 20: case 22: case 7: case 9:   /* half, bf16, 16-bit ints, complex 8-bit */
    return 2;
  case 0: case 10: case 12: case 6: case 15: case 21: case 23:   /* float, 32-bit ints, complex 16-bit */
    return 4;
  case 1: case 4: case 24: case 26: case 11: case 13:   /* double, complex float, 64-bit ints */
    return 8;
  case 5: case 25: case 27:   /* complex double, complex 64-bit ints */
    return 16;
  default:
    return 0;   /* sub-byte types and unknown ones */
  }
}

int grape__matrix_hull(uint64_t ptr, int64_t rows, int64_t cols, int64_t ld, int row_major,
                       int64_t batch, int64_t stride, uint32_t esize, uint64_t* lo, uint64_t* hi) {
  *lo = *hi = ptr;
  if (rows <= 0 || cols <= 0 || batch <= 0)
    return 0;   /* nothing of it is touched */
  int64_t inner = row_major ? cols : rows, outer = row_major ? rows : cols;
  if (ld < 1 || esize == 0)
    return -1;
  __int128 last = (__int128)(outer - 1) * ld + inner;   /* elements of one entry's hull */
  __int128 b0 = 0, b1 = 0;                               /* batch offsets, elements */
  if (batch > 1) {
    __int128 off = (__int128)(batch - 1) * stride;
    if (off < 0)
      b0 = off;
    else
      b1 = off;
  }
  __int128 l = (__int128)ptr + b0 * esize, h = (__int128)ptr + (b1 + last) * esize;
  if (l < 0 || h > (__int128)UINT64_MAX)
    return -1;
  *lo = (uint64_t)l;
  *hi = (uint64_t)h;
  return 0;
}

/* ---- Tags ---- */

/* The footprint of the current call in region r (appended on its first op
 * there), or NULL when it cannot be (out of memory). */
static grape_foot_t* region_foot(grape_call_t* c, grape_region_t* r) {
  if (c->r != r || c->gen != r->ops.gen || c->tag == 0 || c->tag > r->ops.nfoot) {
    c->r = r;
    c->gen = r->ops.gen;
    c->foot.kernels = 0;
    c->tag = grape__region_add_foot(r, &c->foot);
    if (c->tag == 0)
      return NULL;
  }
  return &r->ops.foot[c->tag - 1];
}

/* Adds [lo, hi) written to the call's footprint, in the region's copy and in
 * the call's own (for later chunks). */
static void add_written(grape_call_t* c, grape_foot_t* f, uint64_t lo, uint64_t hi) {
  if (covered(f, lo, hi))
    return;
  grape__foot_add(f, lo, hi, 1);
  grape__foot_add(&c->foot, lo, hi, 1);
}

/* Parameter words of a kernel of the call that point into memory its
 * arguments did not declare: that memory is written. */
static void scan_params(grape_call_t* c, grape_foot_t* f, const uint8_t* p, size_t n) {
  uint64_t mask[8];
  if (n > 8 * 64 * 8) {
    f->why = c->foot.why = GRAPE_WHY_CALL;   /* larger than the scan covers */
    return;
  }
  if (grape__alloc_pointer_words(p, n, mask) == 0)
    return;
  for (size_t w = 0; w < n / 8; w++) {
    if (!((mask[w / 64] >> (w % 64)) & 1))
      continue;
    uint64_t a;
    memcpy(&a, p + 8 * w, 8);
    if (covered(f, a, a + 1))
      continue;
    if (c->ws.hi > c->ws.lo && c->ws.lo <= a && a < c->ws.hi) {
      add_written(c, f, c->ws.lo, c->ws.hi);
      continue;
    }
    grape_alloc_t al;
    if (grape__alloc_find(a, &al) == 0)
      add_written(c, f, al.start, al.start + al.size);
  }
}

uint32_t grape__call_tag_slow(grape_region_t* r, uint32_t i) {
  grape_call_t* c = grape__call;
  grape_foot_t* f = region_foot(c, r);
  if (f == NULL)
    return 0;
  const uint8_t* p = r->ops.params + r->ops.poff[i];
  if (r->ops.keys[i].kind == GRAPE_OP_KERNEL) {
    f->kernels++;
    scan_params(c, f, p, r->ops.keys[i].param_bytes);
  } else if (r->ops.keys[i].kind == GRAPE_OP_MEMSET) {
    grape_memset_params_t m;
    memcpy(&m, p, sizeof(m));
    add_written(c, f, m.dst, m.dst + m.count * m.esize);
  } else if (r->ops.keys[i].kind == GRAPE_OP_MEMCPY) {
    grape_memcpy_params_t m;
    memcpy(&m, p, sizeof(m));
    if (!covered(f, m.src, m.src + m.bytes)) {
      grape__foot_add(f, m.src, m.src + m.bytes, 0);
      grape__foot_add(&c->foot, m.src, m.src + m.bytes, 0);
    }
    add_written(c, f, m.dst, m.dst + m.bytes);
  }
  return c->tag;
}

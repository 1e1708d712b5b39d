/* Footprints of library calls (interpose/footprint.c): hulls, spans, and the
 * tags of the ops a call launches, with the scan of their parameter words. */
#include <criterion/criterion.h>
#include <string.h>

#include "allocmap.h"
#include "footprint.h"

TestSuite(footprint);

Test(footprint, hulls_of_stored_matrices) {
  uint64_t lo, hi;
  /* Column-major 3 x 4, ld 5, floats: 3 columns of 5 and 3 more. */
  cr_assert_eq(grape__matrix_hull(1000, 3, 4, 5, 0, 1, 0, 4, &lo, &hi), 0);
  cr_expect_eq(lo, 1000);
  cr_expect_eq(hi, 1000 + (3 * 5 + 3) * 4);
  /* Row-major: rows are the outer dimension. */
  cr_assert_eq(grape__matrix_hull(1000, 3, 4, 6, 1, 1, 0, 2, &lo, &hi), 0);
  cr_expect_eq(hi, 1000 + (2 * 6 + 4) * 2);
  /* Batches 100 elements apart, and a negative stride. */
  cr_assert_eq(grape__matrix_hull(1000, 2, 2, 2, 0, 3, 100, 1, &lo, &hi), 0);
  cr_expect_eq(lo, 1000);
  cr_expect_eq(hi, 1000 + 200 + 4);
  cr_assert_eq(grape__matrix_hull(1000, 2, 2, 2, 0, 3, -100, 1, &lo, &hi), 0);
  cr_expect_eq(lo, 1000 - 200);
  cr_expect_eq(hi, 1000 + 4);
  /* Nothing touched, a bad ld, an overflow. */
  cr_assert_eq(grape__matrix_hull(1000, 0, 4, 5, 0, 1, 0, 4, &lo, &hi), 0);
  cr_expect_eq(lo, hi);
  cr_expect_neq(grape__matrix_hull(1000, 3, 4, 0, 0, 1, 0, 4, &lo, &hi), 0);
  cr_expect_neq(grape__matrix_hull(UINT64_MAX - 8, 3, 4, 5, 0, 1, 0, 4, &lo, &hi), 0);
  cr_expect_eq(grape__dtype_size(14), 2);   /* CUDA_R_16BF */
  cr_expect_eq(grape__dtype_size(33), 0);   /* fp4: not whole bytes */
}

Test(footprint, reads_stay_before_writes_and_too_many_spans_make_it_opaque) {
  grape_foot_t f;
  grape__foot_begin(&f);
  grape__foot_add(&f, 100, 200, 1);
  grape__foot_add(&f, 0, 50, 0);
  grape__foot_add(&f, 300, 300, 0);   /* empty: skipped */
  cr_expect_eq(f.nr, 1);
  cr_expect_eq(f.nw, 1);
  cr_expect_eq(f.s[0].lo, 0);
  cr_expect_eq(f.s[1].lo, 100);
  for (int i = 0; i < GRAPE_FOOT_SPANS; i++)
    grape__foot_add(&f, 1000 + 10 * i, 1005 + 10 * i, i % 2);
  cr_expect_eq(f.why, GRAPE_WHY_CALL);
}

/* A region with one kernel op whose parameter block is p. */
static void push_kernel(grape_region_t* r, const void* p, uint32_t n) {
  grape_op_key_t k = {.kind = GRAPE_OP_KERNEL, .param_bytes = n, .func = 7};
  grape_op_dims_t d = {{1, 1, 1}, {1, 1, 1}, 0, 0};
  cr_assert_eq(grape__region_reserve(r, n), 0);
  grape__region_push(r, &k, &d, (void*)1, p, n);
}

Test(footprint, a_call_tags_its_ops_once_per_region_and_writes_what_its_kernels_reach) {
  grape__alloc_add(0x7f0000000000, 0x1000, GRAPE_ALLOC_DEVICE);   /* A */
  grape__alloc_add(0x7f0000010000, 0x1000, GRAPE_ALLOC_DEVICE);   /* D */
  grape__alloc_add(0x7f0000020000, 0x8000, GRAPE_ALLOC_DEVICE);   /* the library's own buffer */
  grape_call_t c;
  memset(&c, 0, sizeof(c));
  grape__foot_begin(&c.foot);
  grape__foot_add(&c.foot, 0x7f0000000000, 0x7f0000000100, 0);
  grape__foot_add(&c.foot, 0x7f0000010000, 0x7f0000010100, 1);
  grape_region_t r;
  memset(&r, 0, sizeof(r));
  uint64_t params[4] = {0x7f0000000000, 0x7f0000010000, 0x7f0000020040, 12345};
  grape__call = &c;
  push_kernel(&r, params, sizeof(params));
  r.ops.grp[0] = grape__call_tag(&r, 0);
  push_kernel(&r, params, sizeof(params));
  r.ops.grp[1] = grape__call_tag(&r, 1);
  grape__call = NULL;
  push_kernel(&r, params, sizeof(params));
  r.ops.grp[2] = grape__call_tag(&r, 2);
  cr_expect_eq(r.ops.nfoot, 1);
  cr_expect_eq(r.ops.grp[0], 1);
  cr_expect_eq(r.ops.grp[1], 1);
  cr_expect_eq(r.ops.grp[2], 0);   /* outside the call */
  const grape_foot_t* f = &r.ops.foot[0];
  cr_expect_eq(f->kernels, 2);
  cr_expect_eq(f->nr, 1);
  cr_expect_eq(f->nw, 2);   /* D, and the whole buffer word 2 points into */
  cr_expect_eq(f->s[2].lo, 0x7f0000020000);
  cr_expect_eq(f->s[2].hi, 0x7f0000028000);
  /* The next chunk appends the call's footprint again, with what it learnt. */
  grape__region_clear(&r);
  grape__call = &c;
  push_kernel(&r, params, sizeof(params));
  r.ops.grp[0] = grape__call_tag(&r, 0);
  grape__call = NULL;
  cr_expect_eq(r.ops.grp[0], 1);
  cr_expect_eq(r.ops.foot[0].nw, 2);
  grape__region_free(&r);
}

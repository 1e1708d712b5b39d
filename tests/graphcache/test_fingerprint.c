/* Graph keys and path fingerprints (graphcache/fingerprint.c).
 * Golden values: after a deliberate change of the key or dims layout,
 * regenerate them with
 *   build/tests/graphcache/test_graphcache_fingerprint --verbose --filter 'fingerprint/golden*'
 * which prints the current values when they differ (and say so in the commit). */
#include <criterion/criterion.h>
#include <string.h>

#include "graphcache/fingerprint.h"
#include "graphcache/region.h"

#define GOLDEN_NAME "0f4c202cd261dc05"
#define GOLDEN_KEYS "ca025ef4c5f964ac"
#define GOLDEN_PATH "0461bef905d28cd2"

static grape_op_key_t key(uint64_t func) {
  grape_op_key_t k;
  memset(&k, 0, sizeof(k));
  k.kind = GRAPE_OP_KERNEL;
  k.func = func;
  k.param_bytes = 24;
  return k;
}

static grape_op_dims_t dims(uint32_t grid) {
  grape_op_dims_t d;
  memset(&d, 0, sizeof(d));
  d.grid[0] = grid;
  d.grid[1] = d.grid[2] = 1;
  d.block[0] = 128;
  d.block[1] = d.block[2] = 1;
  return d;
}

/* What a graph key is made of (parameter values are not: see below). */
Test(fingerprint, keys_follow_kernels_and_sizes_not_dimensions) {
  grape_op_key_t a[2] = {key(1), key(2)}, b[2] = {key(1), key(2)};
  cr_expect_eq(grape__fp_keys(a, 2), grape__fp_keys(b, 2));
  b[1].param_bytes = 32;
  cr_expect_neq(grape__fp_keys(a, 2), grape__fp_keys(b, 2), "parameter block size");
  b[1] = key(3);
  cr_expect_neq(grape__fp_keys(a, 2), grape__fp_keys(b, 2), "kernel");
  b[1] = key(2);
  b[1].attrs = 9;
  cr_expect_neq(grape__fp_keys(a, 2), grape__fp_keys(b, 2), "launch attributes");
}

/* Two launches of one kernel with one shape and different parameter values,
 * recorded as the shim records them: the values are kept (a replay binds
 * them), and neither the graph key nor the path fingerprint sees them. */
Test(fingerprint, parameter_values_reach_neither_key_nor_path) {
  grape_region_t a = {0}, b = {0};
  uint64_t va[3] = {0x1000, 7, 3}, vb[3] = {0x2000, 8, 3};
  grape_op_key_t k = key(1);
  grape_op_dims_t d = dims(2);
  cr_assert_eq(grape__region_reserve(&a, sizeof(va)), 0);
  cr_assert_eq(grape__region_reserve(&b, sizeof(vb)), 0);
  grape__region_push(&a, &k, &d, NULL, va, sizeof(va));
  grape__region_push(&b, &k, &d, NULL, vb, sizeof(vb));
  cr_assert_neq(memcmp(a.ops.params, b.ops.params, sizeof(va)), 0, "the values were not recorded");
  uint64_t ka = grape__fp_keys(a.ops.keys, a.ops.n), kb = grape__fp_keys(b.ops.keys, b.ops.n);
  cr_expect_eq(ka, kb, "a parameter value changed the graph key");
  cr_expect_eq(grape__fp_path(ka, a.ops.dims, a.ops.n), grape__fp_path(kb, b.ops.dims, b.ops.n),
               "a parameter value changed the path");
  grape__region_free(&a);
  grape__region_free(&b);
}

Test(fingerprint, paths_follow_dimensions_under_one_key) {
  grape_op_key_t k[2] = {key(1), key(2)};
  grape_op_dims_t d2[2] = {dims(2), dims(2)}, d4[2] = {dims(2), dims(4)};
  uint64_t kf = grape__fp_keys(k, 2);
  cr_expect_neq(grape__fp_path(kf, d2, 2), grape__fp_path(kf, d4, 2), "grid");
  d4[1] = dims(2);
  d4[1].shmem = 16;
  cr_expect_neq(grape__fp_path(kf, d2, 2), grape__fp_path(kf, d4, 2), "shared memory");
  d4[1] = dims(2);
  cr_expect_eq(grape__fp_path(kf, d2, 2), grape__fp_path(kf, d4, 2));
  grape_op_key_t other[2] = {key(1), key(5)};
  cr_expect_neq(grape__fp_path(kf, d2, 2), grape__fp_path(grape__fp_keys(other, 2), d2, 2),
                "same dims under another key");
}

Test(fingerprint, order_and_length_matter) {
  grape_op_key_t ab[2] = {key(1), key(2)}, ba[2] = {key(2), key(1)};
  cr_expect_neq(grape__fp_keys(ab, 2), grape__fp_keys(ba, 2));
  cr_expect_neq(grape__fp_keys(ab, 1), grape__fp_keys(ab, 2));
}

Test(fingerprint, golden_vectors) {
  grape_op_key_t k[2] = {key(grape__fp_name("_Z5k_abcPfid")), key(grape__fp_name("_Z6k_nonev"))};
  grape_op_dims_t d[2] = {dims(2), dims(1)};
  char hex[17];
  grape__fp_hex(grape__fp_name("_Z5k_abcPfid"), hex);
  cr_expect_str_eq(hex, GOLDEN_NAME);
  uint64_t kf = grape__fp_keys(k, 2);
  grape__fp_hex(kf, hex);
  cr_expect_str_eq(hex, GOLDEN_KEYS);
  grape__fp_hex(grape__fp_path(kf, d, 2), hex);
  cr_expect_str_eq(hex, GOLDEN_PATH);
}

Test(fingerprint, canonical_hex_is_big_endian) {
  char hex[17];
  grape__fp_hex(UINT64_C(0x0123456789abcdef), hex);
  cr_expect_str_eq(hex, "0123456789abcdef");
}

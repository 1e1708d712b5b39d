/* Op signatures and path fingerprints (graphcache/fingerprint.c).
 * Golden values: regenerate by printing grape__fp_hex of the sequences below
 * after a deliberate change of the signature layout (and say so in the log). */
#include <criterion/criterion.h>
#include <string.h>

#include "graphcache/fingerprint.h"

#define GOLDEN_NAME "0f4c202cd261dc05"
#define GOLDEN_PATH "618d3759e1ee97ef"

static grape_op_sig_t op(uint64_t func, uint32_t grid) {
  grape_op_sig_t s;
  memset(&s, 0, sizeof(s));
  s.kind = GRAPE_OP_KERNEL;
  s.func = func;
  s.grid[0] = grid;
  s.grid[1] = s.grid[2] = 1;
  s.block[0] = 128;
  s.block[1] = s.block[2] = 1;
  s.param_bytes = 24;
  return s;
}

Test(fingerprint, values_do_not_matter_shapes_do) {
  grape_op_sig_t a[2] = {op(1, 2), op(2, 2)};
  grape_op_sig_t b[2] = {op(1, 2), op(2, 2)};
  cr_expect_eq(grape__fp_ops(a, 2), grape__fp_ops(b, 2));
  b[1].shmem = 16;
  cr_expect_neq(grape__fp_ops(a, 2), grape__fp_ops(b, 2));
}

Test(fingerprint, order_and_shape_matter) {
  grape_op_sig_t ab[2] = {op(1, 2), op(2, 2)};
  grape_op_sig_t ba[2] = {op(2, 2), op(1, 2)};
  grape_op_sig_t ab4[2] = {op(1, 2), op(2, 4)};
  cr_expect_neq(grape__fp_ops(ab, 2), grape__fp_ops(ba, 2));
  cr_expect_neq(grape__fp_ops(ab, 2), grape__fp_ops(ab4, 2));
  cr_expect_neq(grape__fp_ops(ab, 1), grape__fp_ops(ab, 2));
}

Test(fingerprint, golden_vectors) {
  grape_op_sig_t ops[2] = {op(grape__fp_name("_Z5k_abcPfid"), 2), op(grape__fp_name("_Z6k_nonev"), 1)};
  char hex[17];
  grape__fp_hex(grape__fp_name("_Z5k_abcPfid"), hex);
  cr_expect_str_eq(hex, GOLDEN_NAME);
  grape__fp_hex(grape__fp_ops(ops, 2), hex);
  cr_expect_str_eq(hex, GOLDEN_PATH);
}

Test(fingerprint, canonical_hex_is_big_endian) {
  char hex[17];
  grape__fp_hex(UINT64_C(0x0123456789abcdef), hex);
  cr_expect_str_eq(hex, "0123456789abcdef");
}

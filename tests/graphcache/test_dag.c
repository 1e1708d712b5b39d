/* The dependence DAG, plans, the estimator and per-replay verification
 * (graphcache/dag.c). Regions are built by hand: GEMM-like kernels tagged
 * with footprints, memsets and copies with their own, and untagged kernels
 * (barriers). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "graphcache/dag.h"

static grape_region_t r;

static void reset(void) {
  grape__region_free(&r);
}

TestSuite(dag, .init = reset, .fini = reset);

/* A kernel op of `blocks` blocks of 128 threads; tag 0 (a barrier) or a
 * footprint's. */
static void kernel(uint32_t blocks, uint32_t tag) {
  grape_op_key_t k = {.kind = GRAPE_OP_KERNEL, .param_bytes = 8, .func = 1};
  grape_op_dims_t d = {{blocks, 1, 1}, {128, 1, 1}, 0, 0};
  uint64_t p = 0;
  cr_assert_eq(grape__region_reserve(&r, 64), 0);
  grape__region_push(&r, &k, &d, (void*)1, &p, 8);
  r.ops.grp[r.ops.n - 1] = tag;
}

/* A GEMM call reading [rlo, rhi) and writing [wlo, whi): its footprint and
 * one kernel of `blocks` blocks. */
static void gemm(uint64_t rlo, uint64_t rhi, uint64_t wlo, uint64_t whi, uint32_t blocks) {
  grape_foot_t f;
  memset(&f, 0, sizeof(f));
  f.nr = f.nw = 1;
  f.s[0] = (grape_span_t){rlo, rhi};
  f.s[1] = (grape_span_t){wlo, whi};
  f.math = GRAPE_MATH_TENSOR16;
  f.flops = 2.0 * 4096 * 4096 * 64;
  uint32_t tag = grape__region_add_foot(&r, &f);
  cr_assert_neq(tag, 0);
  kernel(blocks, tag);
}

static void memset_op(uint64_t dst, uint64_t bytes) {
  grape_op_key_t k = {.kind = GRAPE_OP_MEMSET, .param_bytes = sizeof(grape_memset_params_t), .func = 4};
  grape_op_dims_t d = {{(uint32_t)bytes, 0, 0}, {0, 0, 0}, 0, 0};
  grape_memset_params_t m = {dst, 0, 4, bytes / 4};
  cr_assert_eq(grape__region_reserve(&r, sizeof(m)), 0);
  grape__region_push(&r, &k, &d, NULL, &m, sizeof(m));
}

static void view(grape_dag_op_t* ops) {
  grape__dag_ops(&r, 0, r.ops.n, ops);
  grape__dag_model(ops, r.ops.n, 132, 0);
}

/* Predecessors of op j in plan p, as a bit mask. */
static uint64_t preds(const grape_plan_t* p, uint32_t j) {
  uint64_t m = 0;
  for (uint32_t e = p->pred_off[j]; e < p->pred_off[j + 1]; e++)
    m |= 1ull << p->pred[e];
  return m;
}

Test(dag, the_dependence_rule_on_byte_intervals) {
  gemm(0, 100, 1000, 1100, 1);      /* 0: reads A, writes X */
  gemm(0, 100, 2000, 2100, 1);      /* 1: reads A, writes Y: independent of 0 */
  gemm(1050, 1060, 3000, 3100, 1);  /* 2: reads inside X: after 0 */
  gemm(5000, 5100, 0, 1, 1);        /* 3: writes A's first byte: after 0 and 1 (WAR) */
  memset_op(2096, 8);               /* 4: writes Y's last 4 bytes and 4 more: after 1 */
  memset_op(2100, 8);               /* 5: writes just past Y: independent of 1 */
  grape_dag_op_t ops[6];
  view(ops);
  cr_expect_not(grape__dag_dependent(&ops[0], &ops[1]));
  cr_expect(grape__dag_dependent(&ops[0], &ops[2]));
  cr_expect_not(grape__dag_dependent(&ops[1], &ops[2]));
  cr_expect(grape__dag_dependent(&ops[0], &ops[3]));
  cr_expect(grape__dag_dependent(&ops[1], &ops[3]));
  cr_expect(grape__dag_dependent(&ops[1], &ops[4]));
  cr_expect_not(grape__dag_dependent(&ops[1], &ops[5]));
  cr_expect(grape__dag_dependent(&ops[4], &ops[5]));   /* WAW on [2100, 2104) */
}

Test(dag, branches_are_the_transitive_reduction_and_barriers_order_everything) {
  gemm(0, 100, 1000, 1100, 1);       /* 0 */
  gemm(0, 100, 2000, 2100, 1);       /* 1 */
  gemm(1000, 1100, 3000, 3100, 1);   /* 2: after 0 */
  kernel(4, 0);                      /* 3: a barrier */
  gemm(0, 100, 4000, 4100, 1);       /* 4: after 3 only (3 implies the rest) */
  grape_dag_op_t ops[5];
  view(ops);
  cr_expect(ops[3].barrier);
  cr_expect_eq(ops[3].why, GRAPE_WHY_KERNEL);
  grape_plan_t p;
  cr_assert_eq(grape__plan_make(ops, 5, GRAPE_PLAN_BRANCHES, 0, &p), 0);
  cr_expect_eq(preds(&p, 0), 0);
  cr_expect_eq(preds(&p, 1), 0);
  cr_expect_eq(preds(&p, 2), 1u << 0);
  cr_expect_eq(preds(&p, 3), (1u << 1) | (1u << 2));   /* the sinks before it, not 0 */
  cr_expect_eq(preds(&p, 4), 1u << 3);
  /* Unordered: (0,1) and (1,2); nothing across the barrier. */
  cr_expect_eq(p.npairs, 2);
  cr_expect_eq(p.width, 2);
  grape__plan_free(&p);
  cr_assert_eq(grape__plan_make(ops, 5, GRAPE_PLAN_CHAIN, 0, &p), 0);
  cr_expect_eq(p.npairs, 0);
  for (uint32_t j = 1; j < 5; j++)
    cr_expect_eq(preds(&p, j), 1ull << (j - 1));
  grape__plan_free(&p);
}

Test(dag, lanes_put_the_longest_first_and_keep_every_dependence) {
  /* Four independent GEMMs of 1, 4, 2 and 3 us between barriers. */
  kernel(1, 0);
  gemm(0, 100, 1000, 1100, 132);
  gemm(0, 100, 2000, 2100, 4 * 132);
  gemm(0, 100, 3000, 3100, 2 * 132);
  gemm(0, 100, 4000, 4100, 3 * 132);
  kernel(1, 0);
  grape_dag_op_t ops[6];
  view(ops);
  static const double work[6] = {100, 1000, 4000, 2000, 3000, 100};
  for (int i = 0; i < 6; i++)
    ops[i].work_ns = work[i];
  grape_plan_t p;
  cr_assert_eq(grape__plan_make(ops, 6, GRAPE_PLAN_LANES, 2, &p), 0);
  /* LPT: 2 (4 waves) and 4 (3 waves) start the lanes; 3 follows 4, 1 follows 2. */
  cr_expect_eq(preds(&p, 2), 1u << 0);
  cr_expect_eq(preds(&p, 4), 1u << 0);
  cr_expect_eq(preds(&p, 3), 1u << 4);
  cr_expect_eq(preds(&p, 1), 1u << 2);
  cr_expect_eq(preds(&p, 5), (1u << 1) | (1u << 3));
  cr_expect_eq(p.npairs, 4);   /* across the two lanes */
  /* The topological order adds every node after its predecessors. */
  int seen[6] = {0};
  for (uint32_t k = 0; k < 6; k++) {
    uint32_t j = p.order[k];
    for (uint32_t e = p.pred_off[j]; e < p.pred_off[j + 1]; e++)
      cr_expect(seen[p.pred[e]]);
    seen[j] = 1;
  }
  grape__plan_free(&p);
}

Test(dag, four_quarter_device_gemms_as_branches_take_a_quarter_of_the_chain) {
  for (int i = 0; i < 4; i++)
    gemm(0, 100, 1000 * (i + 1), 1000 * (i + 1) + 100, 33);
  grape_dag_op_t ops[4];
  view(ops);
  for (int i = 0; i < 4; i++) {
    ops[i].lat_ns = 0;   /* blocks only: the calendar's arithmetic */
    ops[i].work_ns = 1000;
  }
  grape_plan_t chain, br;
  cr_assert_eq(grape__plan_make(ops, 4, GRAPE_PLAN_CHAIN, 0, &chain), 0);
  cr_assert_eq(grape__plan_make(ops, 4, GRAPE_PLAN_BRANCHES, 0, &br), 0);
  cr_expect_float_eq(grape__plan_estimate(&chain, ops, 132), 4000, 1e-9);
  cr_expect_float_eq(grape__plan_estimate(&br, ops, 132), 1000, 1e-9);
  /* The same with full-device GEMMs: no gain. */
  for (int i = 0; i < 4; i++)
    ops[i].blocks = 132;
  cr_expect_float_eq(grape__plan_estimate(&br, ops, 132), 4000, 1e-9);
  /* A persistent GEMM (one block per SM) beside a 14-SM kernel loses a
   * wave: branches gain nothing over the chain. */
  ops[0].blocks = 14;
  ops[1].blocks = 132;
  grape_plan_t two;
  grape_dag_op_t pair[2] = {ops[0], ops[1]};
  cr_assert_eq(grape__plan_make(pair, 2, GRAPE_PLAN_BRANCHES, 0, &two), 0);
  cr_expect_float_eq(grape__plan_estimate(&two, pair, 132), 2000, 1e-9);
  grape__plan_free(&two);
  grape__plan_free(&chain);
  grape__plan_free(&br);
}

Test(dag, the_model_scales_to_the_measured_chain) {
  gemm(0, 100, 1000, 1100, 2);
  kernel(8, 0);
  grape_dag_op_t ops[2];
  grape__dag_ops(&r, 0, 2, ops);
  grape__dag_model(ops, 2, 132, 0);
  double w0 = ops[0].work_ns, w1 = ops[1].work_ns;
  cr_expect_gt(w0, 0);
  cr_expect_float_eq(w1, 8 * 128 / 16.0, 1e-9);
  grape__dag_model(ops, 2, 132, 2 * ops[0].lat_ns + 3 * (w0 + w1));
  cr_expect_float_eq(ops[0].work_ns, 3 * w0, 1e-6);
  cr_expect_float_eq(ops[1].work_ns, 3 * w1, 1e-6);
}

Test(dag, a_plan_is_refused_where_a_replay_aliases) {
  gemm(0, 100, 1000, 1100, 1);
  gemm(0, 100, 2000, 2100, 1);
  grape_dag_op_t ops[2];
  view(ops);
  grape_plan_t p;
  cr_assert_eq(grape__plan_make(ops, 2, GRAPE_PLAN_BRANCHES, 0, &p), 0);
  cr_expect_eq(p.npairs, 1);
  cr_expect(grape__plan_valid(&p, &r, 0));
  /* The same ops on a later replay, the second now writing the first's output. */
  r.ops.foot[1].s[1] = (grape_span_t){1050, 1150};
  cr_expect_not(grape__plan_valid(&p, &r, 0));
  /* ... or one of them no longer footprinted (a kernel of no library call). */
  r.ops.foot[1].s[1] = (grape_span_t){2000, 2100};
  r.ops.grp[1] = 0;
  cr_expect_not(grape__plan_valid(&p, &r, 0));
  grape_plan_t q;
  r.ops.grp[1] = 2;
  cr_assert_eq(grape__plan_copy(&p, &q), 0);
  cr_expect(grape__plan_valid(&q, &r, 0));
  grape__plan_free(&q);
  grape__plan_free(&p);
}

Test(dag, the_summary_counts_barriers_by_reason) {
  gemm(0, 100, 1000, 1100, 1);
  gemm(0, 100, 2000, 2100, 1);
  kernel(1, 0);
  kernel(1, GRAPE_GRP_COLLECTIVE);
  grape_foot_t opaque;
  memset(&opaque, 0, sizeof(opaque));
  opaque.why = GRAPE_WHY_CALL;
  kernel(1, grape__region_add_foot(&r, &opaque));
  grape_dag_op_t ops[5];
  view(ops);
  grape_dag_summary_t s;
  cr_assert_eq(grape__dag_summary(ops, 5, 132, &s), 0);
  cr_expect_eq(s.gemms, 2);
  cr_expect_eq(s.width, 2);
  cr_expect_eq(s.barriers[GRAPE_WHY_EXACT], 2);
  cr_expect_eq(s.barriers[GRAPE_WHY_KERNEL], 1);
  cr_expect_eq(s.barriers[GRAPE_WHY_COLLECTIVE], 1);
  cr_expect_eq(s.barriers[GRAPE_WHY_CALL], 1);
  cr_expect_lt(s.crit_ns, s.chain_ns);
}

Test(dag, too_many_ops_make_no_plan) {
  grape_dag_op_t* ops = calloc(GRAPE_DAG_MAX_OPS + 1, sizeof(*ops));
  grape_plan_t p;
  cr_expect_eq(grape__plan_make(ops, GRAPE_DAG_MAX_OPS + 1, GRAPE_PLAN_BRANCHES, 0, &p), -E2BIG);
  free(ops);
}

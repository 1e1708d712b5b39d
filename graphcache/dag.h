/* The dependence DAG of a segment's ops, concurrency plans, their estimated
 * makespans and their re-verification at replay.
 *
 * DESIGN: an op's view for the DAG (grape_dag_op_t) comes from the region:
 * its footprint (footprint.h: a library call's, or a memset's or copy's own),
 * else it is a barrier. Dependences follow the rule of footprint.h; a barrier
 * depends on everything before it and everything after depends on it. The
 * DAG is kept as ancestor bitsets (its transitive closure), from which the
 * transitive reduction gives each node's predecessors: the edges a graph
 * needs. A *plan* is an edge set over the ops: the chain (today's graphs),
 * the full branches (the reduced DAG), or d lanes (the ops between two
 * barriers spread over d chains, longest first: GOLDYLOC's degree of
 * concurrency). A plan only reorders: every edge of the DAG is implied by
 * the plan's edges, so a plan is exactly as correct as the footprints it was
 * made from. Because footprints come from the parameters of one replay, a
 * plan keeps the pairs of ops it leaves unordered, and every later replay
 * checks those pairs against its own footprints (grape__plan_valid) before
 * the plan's graph may run; a replay that fails the check runs the chain.
 *
 * The estimator predicts a plan's device time with the model the simulated
 * device uses (sim/device.c), in analytic form: every SM is a pool of slots,
 * a kernel's blocks take slots in submission order as they free up, in
 * waves, each block holding 1/occupancy of an SM; nodes are placed in the
 * order they become ready; memsets and copies take no slots. Its inputs are
 * per-op work times, blocks and occupancies (grape__dag_model sets the
 * times from a roofline of each GEMM and a nominal rate for other kernels,
 * scaled to the measured device time of the chain when there is one).
 *
 * Costs: building a DAG is O(n^2 / 64) words per op for n ops (n <=
 * GRAPE_DAG_MAX_OPS), done when a segment is planned or a path first seen,
 * never per replay; verifying a plan at replay is O(pairs x spans^2). */
#ifndef GRAPE_GRAPHCACHE_DAG_H
#define GRAPE_GRAPHCACHE_DAG_H

#include <stddef.h>
#include <stdint.h>

#include "region.h"

#define GRAPE_DAG_MAX_OPS 512     /* longer segments stay chains */
#define GRAPE_PLAN_MAX_PAIRS 4096 /* a plan leaving more pairs unordered is not made */

typedef struct grape_dag_op_s {
  uint8_t barrier;            /* ordered with every other op */
  uint8_t why;                /* grape_why_t */
  uint8_t kind;               /* grape_op_kind_t */
  uint8_t math;               /* grape_math_t: the first kernel of a GEMM call */
  uint32_t grp;               /* its region tag (the ops of one call share it) */
  uint32_t nr, nw;            /* spans read, written: s[0, nr), s[nr, nr + nw) */
  const grape_span_t* s;
  grape_span_t own[2];        /* a memset's or copy's spans */
  /* The estimator's inputs (grape__dag_model and the caller). */
  uint32_t blocks;            /* CTAs; 0 for memsets and copies (no SM slots) */
  uint32_t per_sm;            /* blocks of it that fit one SM (occupancy), >= 1 */
  uint64_t threads;           /* threads of the whole launch */
  double flops, bytes;        /* a GEMM's work (its call's), else 0 */
  uint32_t tiles;             /* a GEMM's output tiles (footprint.h), 0: not known */
  double lat_ns;              /* before its blocks start: a node's launch latency */
  double work_ns;             /* its blocks' time alone, all waves together */
} grape_dag_op_t;

/* Views ops [from, from + n) of r as DAG ops (spans point into r: valid while
 * r is unchanged). */
void grape__dag_ops(const grape_region_t* r, uint32_t from, uint32_t n, grape_dag_op_t* ops);

/* True when a (earlier) and b must keep their order. */
int grape__dag_dependent(const grape_dag_op_t* a, const grape_dag_op_t* b);

/* Sets each op's lat_ns and work_ns from the model (a GEMM's roofline, a
 * kernel's threads at a nominal rate, a memset's or copy's bytes) on sms
 * multiprocessors (0: the nominal 132), scaled so that the chain takes
 * measured_ns when that is > 0. */
void grape__dag_model(grape_dag_op_t* ops, uint32_t n, uint32_t sms, double measured_ns);

typedef enum grape_plan_kind_e {
  GRAPE_PLAN_CHAIN = 0,
  GRAPE_PLAN_BRANCHES,        /* the reduced DAG */
  GRAPE_PLAN_LANES,           /* d chains between barriers */
} grape_plan_kind_t;

typedef struct grape_plan_s {
  uint32_t n;
  int kind;                   /* grape_plan_kind_t */
  int lanes;                  /* d of GRAPE_PLAN_LANES */
  uint32_t* pred_off;         /* n + 1 offsets into pred */
  uint32_t* pred;             /* each op's predecessors (the transitive reduction) */
  uint32_t* order;            /* the ops in a topological order (nodes are added so) */
  uint32_t npairs;
  uint32_t* pairs;            /* 2 * npairs: ops (segment-relative) the plan leaves unordered */
  uint32_t width;             /* the most ops of one stage between barriers */
  double est_ns;              /* the estimator's makespan (grape__plan_estimate) */
} grape_plan_t;

/* Makes plan kind (lanes: d of GRAPE_PLAN_LANES) of ops[0, n). @return 0,
 * -ENOMEM, or -E2BIG (n beyond GRAPE_DAG_MAX_OPS, or too many unordered
 * pairs). */
int grape__plan_make(const grape_dag_op_t* ops, uint32_t n, int kind, int lanes, grape_plan_t* out);

void grape__plan_free(grape_plan_t* p);

/* A deep copy of p into out. @return 0 or -ENOMEM. */
int grape__plan_copy(const grape_plan_t* p, grape_plan_t* out);

/* The estimated device time of plan p over ops (on sms multiprocessors),
 * also kept in p->est_ns. */
double grape__plan_estimate(grape_plan_t* p, const grape_dag_op_t* ops, uint32_t sms);

/* True when every pair p leaves unordered is still independent in ops
 * [from, from + p->n) of r: p may replay them. */
int grape__plan_valid(const grape_plan_t* p, const grape_region_t* r, uint32_t from);

/* What one segment's DAG says (the report, and the planner's first look). */
typedef struct grape_dag_summary_s {
  uint32_t ops, gemms;        /* ops; first kernels of footprinted calls */
  uint32_t width;             /* the widest stage's op count that could run at once */
  uint32_t barriers[GRAPE_WHY_COUNT];   /* barrier ops by reason ([0]: not barriers) */
  double chain_ns, crit_ns;   /* estimated: the chain, the full branches */
} grape_dag_summary_t;

/* Summarises ops[0, n) (modelled already) into s. @return 0, or -ENOMEM /
 * -E2BIG (s then has the counts only). */
int grape__dag_summary(const grape_dag_op_t* ops, uint32_t n, uint32_t sms, grape_dag_summary_t* s);

#endif

/* The graph cache (graphcache/cache.c) against a fake driver table: a
 * "device" that records every op it runs, eagerly or inside a launched graph,
 * so each test compares what ran with what the program issued, in order.
 * The program side (holding by stepping the trie, flushing at divergence,
 * ending regions) is written out as the shim does it (interpose/launch.h). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "graphcache/cache.h"

/* ---- The fake driver ---- */

#define MAXN 64

typedef struct fop_s {
  uint32_t kind;
  void* fn;
  grape_op_dims_t dims;
  uint8_t params[32];
  uint32_t nparams;
} fop_t;

typedef struct fgraph_s {
  fop_t ops[MAXN];
  int n;
} fgraph_t;

typedef struct fexec_s {
  fop_t ops[MAXN];
  fgraph_t* from;
  int n;
} fexec_t;

static struct {
  fop_t ran[4096];   /* what the device ran, in order */
  int nran;
  int creates, adds, instantiates, updates, launches, submits, destroyed;
  int fail_instantiate, fail_launch, fail_update;
} dev;

static fop_t fop(const grape_gc_op_t* op) {
  fop_t f;
  memset(&f, 0, sizeof(f));
  f.kind = op->kind;
  f.fn = op->fn;
  f.dims = *op->dims;
  f.nparams = op->param_bytes;
  cr_assert_leq(op->param_bytes, sizeof(f.params));
  memcpy(f.params, op->params, op->param_bytes);
  return f;
}

static void run(const fop_t* f) {
  cr_assert_lt(dev.nran, 4096);
  dev.ran[dev.nran++] = *f;
}

static int f_create(void* self, void** g) {
  (void)self;
  dev.creates++;
  *g = calloc(1, sizeof(fgraph_t));
  return 0;
}
static int f_add(void* self, void** node, void* graph, void* after, const grape_gc_op_t* op) {
  (void)self;
  fgraph_t* g = graph;
  /* A chain: each node after the one added before it. */
  cr_assert_eq(after, g->n ? (void*)&g->ops[g->n - 1] : NULL);
  dev.adds++;
  g->ops[g->n] = fop(op);
  *node = &g->ops[g->n++];
  return 0;
}
static int f_instantiate(void* self, void** exec, void* graph) {
  (void)self;
  if (dev.fail_instantiate)
    return 999;
  dev.instantiates++;
  fexec_t* e = calloc(1, sizeof(*e));
  fgraph_t* g = graph;
  memcpy(e->ops, g->ops, sizeof(g->ops));
  e->n = g->n;
  e->from = g;
  *exec = e;
  return 0;
}
static int f_graph_destroy(void* self, void* g) {
  (void)self;
  free(g);
  return 0;
}
static int f_exec_destroy(void* self, void* e) {
  (void)self;
  dev.destroyed++;
  free(e);
  return 0;
}
static int f_update(void* self, void* exec, void* node, const grape_gc_op_t* op) {
  (void)self;
  if (dev.fail_update)
    return 998;
  fexec_t* e = exec;
  int i = (int)((fop_t*)node - e->from->ops);
  cr_assert(i >= 0 && i < e->n, "a node of another graph");
  cr_assert_eq(e->ops[i].kind, op->kind, "a node updated to another kind");
  dev.updates++;
  e->ops[i] = fop(op);
  return 0;
}
/* A host clock the fake driver advances: eager submissions and graph launches
 * cost what the timing tests set. */
static uint64_t fake_now, eager_op_ns, graph_launch_ns;
static uint64_t fake_clock(void) { return fake_now; }

static int f_launch(void* self, void* exec, void* stream) {
  (void)self;
  (void)stream;
  if (dev.fail_launch)
    return 997;
  dev.launches++;
  fake_now += graph_launch_ns;
  fexec_t* e = exec;
  for (int i = 0; i < e->n; i++)
    run(&e->ops[i]);
  return 0;
}
static int f_submit(void* self, const grape_gc_op_t* op, void* stream) {
  (void)self;
  (void)stream;
  dev.submits++;
  fake_now += eager_op_ns;
  fop_t f = fop(op);
  run(&f);
  return 0;
}

static const grape_gc_driver_t fake = {.graph_create = f_create, .graph_add = f_add,
                                       .graph_instantiate = f_instantiate,
                                       .graph_destroy = f_graph_destroy,
                                       .exec_destroy = f_exec_destroy, .exec_update = f_update,
                                       .exec_launch = f_launch, .submit = f_submit};

static grape_gc_config_t config(void) {
  return (grape_gc_config_t){.sz = sizeof(grape_gc_config_t), .graphs = 1, .warmup = 2,
                             .min_ops = 2, .variants = 2, .max_graphs = 64,
                             .max_bytes = UINT64_C(1) << 40, .launch_ns = 2000,
                             .graph_launch_ns = 2500, .update_ns = 1000, .recheck = 4};
}

/* ---- The program side ---- */

typedef struct pop_s {
  uint64_t func;     /* kernel identity; the fake function handle is derived from it */
  uint32_t grid;
  uint32_t arg;      /* the parameter value */
} pop_t;

static grape_gc_t* cache;
static int cache_timed;   /* the cache was given the fake clock */
static grape_region_t region;
static fop_t issued[4096];   /* what the program issued, in order */
static int nissued;
static int eager_launches;   /* launches the program made itself (not held) */
static int launch_error;     /* the last cut's driver error */

static void issue(const pop_t* p) {
  grape_op_key_t k = {.kind = GRAPE_OP_KERNEL, .param_bytes = 8, .func = p->func};
  grape_op_dims_t d = {.grid = {p->grid, 1, 1}, .block = {32, 1, 1}};
  uint64_t params = ((uint64_t)p->arg << 32) | p->grid;
  void* fn = (void*)(uintptr_t)(0x1000 + p->func);
  grape_gc_op_t view = {GRAPE_OP_KERNEL, 0, fn, &d, &params, 8, 0};
  issued[nissued++] = fop(&view);
  if (region.nops == 0 && cache_timed)
    region.t_first = fake_clock();   /* as the shim does at a chunk's first op */
  grape_region_t* r = &region;
  if (r->cur != NULL) {
    const grape_gc_node_t* nx = grape_gc_step(r->cur, &k);
    if (nx != NULL) {
      cr_assert_eq(grape__region_reserve(r, 8), 0);
      grape__region_push(r, &k, &d, fn, &params, 8);
      r->held++;
      r->cur = nx;
      if (grape_gc_is_cut(nx)) {
        int err;
        cr_assert_eq(grape_gc_cut(cache, r, NULL, &err), 0);
        launch_error = err;
      }
      return;
    }
    int err;
    cr_assert_eq(grape_gc_flush(cache, r, NULL, GRAPE_GC_DIVERGENCE, &err), 0);
    cr_assert_null(r->cur, "the rest of the region runs eagerly");
  }
  /* Eagerly: the program's own launch, then recorded. */
  run(&issued[nissued - 1]);
  eager_launches++;
  fake_now += eager_op_ns;
  cr_assert_eq(grape__region_reserve(r, 8), 0);
  grape__region_push(r, &k, &d, fn, &params, 8);
}

/* A sync point: the region ends. */
static void sync_point(void) {
  int err;
  cr_assert_eq(grape_gc_end(cache, &region, NULL, grape_gc_root(cache), &err), 0);
  cr_assert_eq(err, 0);
}

static void issue_all(const pop_t* ops, int n) {
  for (int i = 0; i < n; i++)
    issue(&ops[i]);
  sync_point();
}

static void expect_device_ran_what_was_issued(void) {
  cr_assert_eq(dev.nran, nissued, "ran %d ops, issued %d", dev.nran, nissued);
  for (int i = 0; i < nissued; i++) {
    cr_assert_eq(dev.ran[i].fn, issued[i].fn, "op %d: function", i);
    cr_assert_eq(memcmp(&dev.ran[i].dims, &issued[i].dims, sizeof(grape_op_dims_t)), 0,
                 "op %d: dimensions", i);
    cr_assert_eq(memcmp(dev.ran[i].params, issued[i].params, 8), 0, "op %d: parameters", i);
  }
}

static void setup_with(grape_gc_config_t cfg) {
  memset(&dev, 0, sizeof(dev));
  memset(&region, 0, sizeof(region));
  nissued = eager_launches = 0;
  fake_now = 1;
  eager_op_ns = graph_launch_ns = 0;
  cache_timed = cfg.now != NULL;
  launch_error = 0;
  cr_assert_eq(grape_gc_create(&cfg, &fake, &cache), 0);
  region.cur = grape_gc_root(cache);
  region.ctx = &region;   /* a stream that may be held */
}

static void setup(void) { setup_with(config()); }

static void teardown(void) {
  grape_gc_destroy(cache, 1);
  grape__region_free(&region);
}

/* A test with its own configuration: the suite's cache is replaced. */
static void restart_with(grape_gc_config_t cfg) {
  teardown();
  setup_with(cfg);
}

static grape_gc_stats_t stats(void) {
  grape_gc_stats_t st;
  grape_gc_stats(cache, &st);
  return st;
}

TestSuite(cache, .init = setup, .fini = teardown);

/* ---- Tests ---- */

Test(cache, warms_up_then_replays_one_graph_per_region) {
  pop_t step[4] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {1, 4, 0}};
  for (int it = 0; it < 10; it++) {
    for (int i = 0; i < 4; i++)
      step[i].arg = (uint32_t)(it * 10 + i);   /* every value changes every time */
    issue_all(step, 4);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(eager_launches, 2 * 4, "the two warm-up regions run eagerly, nothing after");
  cr_expect_eq(st.graphs_built, 2, "a second variant: every parameter differs from the first");
  cr_expect_eq(st.graph_hits, 8);
  cr_expect_eq(dev.launches, 8);
  cr_expect_eq(st.regions, 10);
  cr_expect_eq(st.graph_keys, 1);
  cr_expect_eq(st.paths, 1);
}

Test(cache, dimensions_are_rebound_not_keyed) {
  /* A batch that shrinks: one key, one graph, the grid re-bound per replay. */
  for (int it = 0; it < 8; it++) {
    pop_t step[3] = {{1, 8u - (uint32_t)it, 7}, {2, 8u - (uint32_t)it, 7}, {3, 1, 7}};
    issue_all(step, 3);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graph_keys, 1);
  cr_expect_eq(st.paths, 8, "paths keep their grids");
  cr_expect_eq(st.graph_hits, 6);
  cr_expect_gt(st.node_updates, 0);
}

Test(cache, ping_pong_parameters_need_no_updates_with_two_variants) {
  for (int it = 0; it < 12; it++) {
    pop_t step[3] = {{1, 4, (uint32_t)(it % 2)}, {2, 4, (uint32_t)(it % 2) + 5}, {3, 4, 9}};
    issue_all(step, 3);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graphs_built, 2);
  cr_expect_eq(st.node_updates, 0, "each parameter set has its own executable");
  cr_expect_eq(st.graph_hits, 10);
}

Test(cache, one_variant_updates_the_nodes_that_differ) {
  grape_gc_config_t cfg = config();
  cfg.variants = 1;
  restart_with(cfg);
  for (int it = 0; it < 6; it++) {
    pop_t step[3] = {{1, 4, (uint32_t)(it % 2)}, {2, 4, 5}, {3, 4, 9}};
    issue_all(step, 3);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graphs_built, 1);
  cr_expect_eq(st.node_updates, 4, "one node, in each replay after the first (values 0,1,0,1)");
  cr_expect_eq(dev.updates, 4);
}

Test(cache, a_graph_is_built_once_eager_runs_have_cost_three_builds) {
  /* 4 ops: each eager sighting with nothing changed earns 4 * 2000 - 2500 =
   * 5500 ns; a build costs 1000 + 4 * 1000 = 5000 ns, so three builds' worth
   * (15000) takes three sightings beyond the first (which changes every node
   * against nothing: 5500 - 4 * 1000 = 1500). */
  grape_gc_config_t cfg = config();
  cfg.build_ns = 1000;
  cfg.build_node_ns = 1000;
  restart_with(cfg);
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  for (int it = 0; it < 3; it++)
    issue_all(step, 4);
  cr_expect_eq(stats().graphs_built, 0, "1500 + 5500 + 5500 ns earned: not yet");
  issue_all(step, 4);
  cr_expect_eq(stats().graphs_built, 1, "18500 ns earned: built");
  issue_all(step, 4);
  expect_device_ran_what_was_issued();
  cr_expect_eq(stats().graph_hits, 1);
  cr_expect_eq(eager_launches, 4 * 4);
}

Test(cache, a_path_whose_updates_eat_the_saving_never_gets_a_graph) {
  /* Every op's parameter changes every time: a replay would save
   * 4 * 2000 - 2500 - 4 * 1500 < 0, so nothing is ever earned. */
  grape_gc_config_t cfg = config();
  cfg.update_ns = 1500;
  cfg.build_ns = 1;
  restart_with(cfg);
  pop_t step[4] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {4, 4, 0}};
  for (int it = 0; it < 40; it++) {
    for (int i = 0; i < 4; i++)
      step[i].arg = (uint32_t)it;
    issue_all(step, 4);
  }
  expect_device_ran_what_was_issued();
  cr_expect_eq(stats().graphs_built, 0);
}

Test(cache, a_far_parameter_set_gets_a_variant_once_its_updates_cost_three_builds) {
  /* Two alternating sets that differ in all 4 nodes. Building costs 4000 ns
   * (0 + 4 * 1000); each far replay updates 4 nodes (4000 ns): the third far
   * replay has spent three builds' worth and builds the second variant
   * instead of updating; after it, nothing changes. */
  grape_gc_config_t cfg = config();
  cfg.warmup = 1;
  cfg.build_node_ns = 1000;
  restart_with(cfg);
  int built_at = -1;
  for (int it = 0; it < 40; it++) {
    uint32_t v = (uint32_t)(it % 2);
    pop_t step[4] = {{1, 4, v}, {2, 4, v}, {3, 4, v}, {4, 4, v}};
    issue_all(step, 4);
    if (built_at < 0 && stats().graphs_built == 2)
      built_at = it;
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graphs_built, 2);
  cr_expect_gt(built_at, 4, "not at the first far replay (it came at %d)", built_at);
  cr_expect_eq(st.node_updates, 2 * 4, "two far replays updated every node, then none (%lu)",
               (unsigned long)st.node_updates);
}

/* n regions of 4 ops whose replays take `graph` ns against 10 ns an eager op. */
static void run_timed(uint64_t graph, int n) {
  grape_gc_config_t cfg = config();
  cfg.now = fake_clock;
  cfg.recheck = 8;
  cfg.warmup = 3;   /* two timed eager cycles (the third's holds the build) */
  restart_with(cfg);
  eager_op_ns = 10;
  graph_launch_ns = graph;
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  for (int it = 0; it < n; it++)
    issue_all(step, 4);
  expect_device_ran_what_was_issued();
}

Test(cache, replays_measured_slower_than_eager_runs_stop_and_are_tried_again_later) {
  run_timed(100, 30);   /* a replay: 100 ns; eager: 4 * 10 */
  grape_gc_stats_t st = stats();
  /* Built at the third sighting. A cycle is known when the next chunk
   * starts, so the verdict "clearly slower" (4 replays timed) comes at the
   * fifth replay (sightings 4-8): eager until 16, replays 17-21, slower
   * again: eager for twice as long (22-37; the run ends at 30). */
  cr_expect_eq(st.graph_hits, 10, "%lu hits", (unsigned long)st.graph_hits);
  cr_expect_eq(dev.launches, 10);
  grape_gc_path_t top;
  cr_assert_eq(grape_gc_top(cache, &top, 1), 1);
  cr_expect_not_null(strstr(top.why, "measured slower"), "%s", top.why);
}

Test(cache, replays_measured_faster_stay) {
  run_timed(15, 40);   /* a replay: 15 ns; eager: 40 */
  cr_expect_eq(stats().graph_hits, 37);
}

Test(cache, divergence_submits_the_held_ops_in_order) {
  pop_t known[4] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}, {4, 2, 4}};
  issue_all(known, 4);
  issue_all(known, 4);   /* now it has a graph */
  pop_t other[4] = {{1, 2, 5}, {2, 2, 6}, {9, 2, 7}, {4, 2, 8}};
  int before = eager_launches;
  issue_all(other, 4);
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.flushed[GRAPE_GC_DIVERGENCE], 2, "ops 1 and 2 were held, then submitted");
  cr_expect_eq(eager_launches - before, 2, "the rest of the region ran eagerly");
  cr_expect_eq(st.graph_hits, 0);
}

Test(cache, a_path_that_extends_a_key_is_its_own_key_and_shares_its_segment) {
  pop_t short_path[3] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}};
  pop_t long_path[5] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}, {7, 2, 4}, {8, 2, 5}};
  issue_all(short_path, 3);
  issue_all(short_path, 3);
  issue_all(long_path, 5);   /* the short key's segment launches at op 3; 7, 8 eager */
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(dev.launches, 1);
  cr_expect_eq(st.graph_hits, 0, "no region ran wholly as graphs");
  cr_expect_eq(st.graph_keys, 2, "[1 2 3] and [1 2 3 7 8], as observe mode sees them");
  cr_expect_eq(st.paths, 2);
  issue_all(long_path, 5);   /* its second sighting: its own segment [7 8] is built */
  issue_all(long_path, 5);
  issue_all(short_path, 3);
  expect_device_ran_what_was_issued();
  st = stats();
  cr_expect_eq(st.graph_hits, 2, "the long path in two segments, the short one in one");
  cr_expect_eq(dev.launches, 1 + 1 + 2 + 1, "its second sighting launched the shared segment too");
  cr_expect_eq(st.graphs_built, 2, "[1 2 3] is built once, for both");
}

Test(cache, a_region_ending_on_a_prefix_without_a_graph_runs_eagerly) {
  pop_t long_path[4] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}, {4, 2, 4}};
  issue_all(long_path, 4);
  issue_all(long_path, 4);
  issue_all(long_path, 2);   /* held [1 2], then the region ends */
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.flushed[GRAPE_GC_NO_GRAPH], 2);
}

Test(cache, keys_that_do_not_pay_stop_being_held) {
  /* Every replay would update every node: one launch plus 4 updates costs
   * more than 4 launches at these costs. */
  grape_gc_config_t cfg = config();
  cfg.variants = 1;
  cfg.update_ns = 4000;
  restart_with(cfg);
  for (int it = 0; it < 12; it++) {
    pop_t step[4] = {{1, 4, (uint32_t)it}, {2, 4, (uint32_t)it}, {3, 4, (uint32_t)it}, {4, 4, (uint32_t)it}};
    issue_all(step, 4);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_leq(st.graph_hits, 4, "replays stop once the updates are measured");
  cr_expect_geq(eager_launches, 4 * 8, "then the key runs eagerly");
  cr_expect_gt(st.graph_misses, 0);
}

Test(cache, a_tiny_cache_evicts_and_stays_correct) {
  grape_gc_config_t cfg = config();
  cfg.max_graphs = 1;
  restart_with(cfg);
  for (int it = 0; it < 9; it++) {
    pop_t a[2] = {{1, 2, (uint32_t)it}, {2, 2, 0}};
    pop_t b[3] = {{5, 2, 0}, {6, 2, (uint32_t)it}, {7, 2, 0}};
    issue_all(a, 2);
    issue_all(b, 3);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_gt(st.graphs_evicted, 0);
  cr_expect_eq(dev.instantiates - dev.destroyed, 1, "never more than one executable");
}

Test(cache, paths_shorter_than_min_ops_get_no_graph) {
  for (int it = 0; it < 5; it++) {
    pop_t one[1] = {{1, 2, (uint32_t)it}};
    issue_all(one, 1);
  }
  expect_device_ran_what_was_issued();
  cr_expect_eq(stats().graphs_built, 0);
  cr_expect_eq(eager_launches, 5);
}

Test(cache, a_graph_that_cannot_be_built_runs_eagerly_for_good) {
  dev.fail_instantiate = 1;
  pop_t step[3] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}};
  for (int it = 0; it < 5; it++)
    issue_all(step, 3);
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.build_failures, 1, "tried once");
  cr_expect_eq(eager_launches, 15);
}

Test(cache, a_failed_graph_launch_falls_back_to_eager_submission) {
  pop_t step[3] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}};
  issue_all(step, 3);
  issue_all(step, 3);
  dev.fail_launch = 1;
  issue_all(step, 3);   /* the launch at the key's end fails: its ops go eagerly */
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.flushed[GRAPE_GC_GRAPH_FAILED], 3);
  cr_expect_eq(st.graph_hits, 0);
  dev.fail_launch = 0;
  issue_all(step, 3);   /* the key runs eagerly from now on */
  issue_all(step, 3);
  cr_expect_eq(stats().graph_hits, 0);
  expect_device_ran_what_was_issued();
}

Test(cache, dropped_graphs_are_rebuilt_when_their_key_recurs) {
  pop_t step[3] = {{1, 2, 1}, {2, 2, 2}, {3, 2, 3}};
  issue_all(step, 3);
  issue_all(step, 3);
  issue_all(step, 3);
  cr_expect_eq(stats().graph_hits, 1);
  grape_gc_drop_graphs(cache);
  cr_expect_eq(dev.instantiates, dev.destroyed);
  issue_all(step, 3);   /* eager again: no graph; rebuilt at once (warmed before) */
  issue_all(step, 3);
  expect_device_ran_what_was_issued();
  cr_expect_eq(stats().graph_hits, 2);
}

Test(cache, observe_mode_accounts_paths_without_graphs) {
  grape_gc_config_t cfg = config();
  cfg.graphs = 0;
  restart_with(cfg);
  cr_expect_null(grape_gc_root(cache));
  for (int it = 0; it < 4; it++) {
    pop_t step[2] = {{1, 2u + (uint32_t)(it % 2), 1}, {2, 2, 2}};
    issue_all(step, 2);
  }
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graphs_built, 0);
  cr_expect_eq(st.paths, 2);
  cr_expect_eq(st.graph_keys, 1);
  grape_gc_path_t top[4];
  size_t n = grape_gc_top(cache, top, 4);
  cr_assert_eq(n, 2);
  cr_expect_eq(top[0].count, 2);
  cr_expect_eq(top[0].nops, 2);
  cr_expect_eq(top[0].keyfp, top[1].keyfp);
#ifndef GRAPE_FP_COLLIDE
  cr_expect_neq(top[0].fp, top[1].fp);
#endif
}

#ifdef GRAPE_FP_COLLIDE
Test(cache, colliding_fingerprints_are_kept_apart) {
  /* Every key (and every path) of one length has one fingerprint in this build. */
  pop_t a[2] = {{1, 2, 1}, {2, 2, 2}}, b[2] = {{3, 2, 3}, {4, 2, 4}};
  for (int it = 0; it < 4; it++) {
    issue_all(a, 2);
    issue_all(b, 2);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graph_keys, 2);
  cr_expect_eq(st.paths, 2);
  cr_expect_gt(st.collisions, 0);
  cr_expect_eq(st.graph_hits, 4);
}
#endif

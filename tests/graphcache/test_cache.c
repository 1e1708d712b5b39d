/* The graph cache (graphcache/, through cache.h) against a fake driver table: a
 * "device" that records every op it runs, eagerly or inside a launched graph,
 * so each test compares what ran with what the program issued, in order.
 * The program side (holding by stepping the trie, flushing at divergence,
 * ending regions) is written out as the shim does it (interpose/launch.h). */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "graphcache/cache.h"

#include "graphcache/internal.h"   /* cuts.c's grape__cuts_best */

/* ---- The fake driver ---- */

static uint64_t fake_now, eager_op_ns, graph_launch_ns, host_op_ns, update_op_ns;
static uint64_t fake_clock(void) { return fake_now; }

/* The program's clock, and the builder thread's own (a helper's, as the sim
 * keeps it): it takes a build up where it was queued, and each instantiation
 * costs it build_cost_ns. */
static __thread int on_builder;
static uint64_t builder_now, build_cost_ns;
static int builder_instantiates;
static uint64_t test_clock(void) { return on_builder ? builder_now : fake_now; }
static void test_handoff(uint64_t t) {
  if (t > builder_now)
    builder_now = t;
}

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
  int destroyed_by_program;   /* of destroyed: on the program's thread */
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
/* The builder's driver work as config.driver_work brackets it: the depth
 * now, and instantiations made outside it while a test watched. */
static int driver_work_depth, driver_work_calls, instantiates_unbracketed;
static void test_driver_work(int on) {
  driver_work_depth += on ? 1 : -1;
  driver_work_calls++;
}

static int f_instantiate(void* self, void** exec, void* graph) {
  (void)self;
  if (dev.fail_instantiate)
    return 999;
  dev.instantiates++;
  instantiates_unbracketed += driver_work_depth != 1;
  if (on_builder) {
    builder_instantiates++;
    builder_now += build_cost_ns;
  }
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
  dev.destroyed_by_program += !on_builder;
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
  fake_now += update_op_ns;
  e->ops[i] = fop(op);
  return 0;
}
/* A host clock the fake driver advances: eager submissions and graph launches
 * cost what the timing tests set. */


/* Timers: the fake device takes dev_op_ns per op of a graph launch; a
 * timer's nodes are ops of kind 0 that record when they run. */
static uint64_t dev_op_ns;
static int timers_read, timers_live;

/* When the fake device is done with what was submitted so far (it runs one
 * op at a time, dev_op_ns each, in submission order): a sync that waits for
 * it (issue_all_waiting) moves the program's clock there. */
static uint64_t dev_free_at;
static void dev_runs(uint64_t ops) {
  dev_free_at = (dev_free_at > fake_now ? dev_free_at : fake_now) + ops * dev_op_ns;
}

typedef struct ftimer_s {
  uint64_t at[2];
  int recorded[2];
} ftimer_t;

static int f_launch(void* self, void* exec, void* stream) {
  (void)self;
  (void)stream;
  if (dev.fail_launch)
    return 997;
  dev.launches++;
  fake_now += graph_launch_ns;
  fexec_t* e = exec;
  uint64_t t = 0, kernels = 0;
  for (int i = 0; i < e->n; i++) {
    if (e->ops[i].kind == 0) {
      ftimer_t* tm = e->ops[i].fn;
      int end = e->ops[i].nparams;
      tm->at[end] = t;
      tm->recorded[end] = 1;
      continue;
    }
    run(&e->ops[i]);
    t += dev_op_ns;
    kernels++;
  }
  dev_runs(kernels);
  return 0;
}
static int f_timer_create(void* self, void** timer) {
  (void)self;
  timers_live++;
  *timer = calloc(1, sizeof(ftimer_t));
  return 0;
}
static int f_timer_destroy(void* self, void* timer) {
  (void)self;
  timers_live--;
  free(timer);
  return 0;
}
static int f_add_timer(void* self, void** node, void* graph, void* after, void* timer, int end) {
  (void)self;
  fgraph_t* g = graph;
  cr_assert_eq(after, g->n ? (void*)&g->ops[g->n - 1] : NULL);
  memset(&g->ops[g->n], 0, sizeof(g->ops[g->n]));
  g->ops[g->n].fn = timer;
  g->ops[g->n].nparams = (uint32_t)end;
  *node = &g->ops[g->n++];
  return 0;
}
static int f_timer_read(void* self, void* timer, uint64_t* ns) {
  (void)self;
  ftimer_t* tm = timer;
  if (!tm->recorded[0] || !tm->recorded[1])
    return 600;   /* not ready */
  timers_read++;
  *ns = tm->at[1] - tm->at[0];
  return 0;
}
static int f_submit(void* self, const grape_gc_op_t* op, void* stream) {
  (void)self;
  (void)stream;
  dev.submits++;
  fake_now += eager_op_ns;
  fop_t f = fop(op);
  run(&f);
  dev_runs(1);
  return 0;
}

static const grape_gc_driver_t fake = {.graph_create = f_create, .graph_add = f_add,
                                       .graph_instantiate = f_instantiate,
                                       .graph_destroy = f_graph_destroy,
                                       .exec_destroy = f_exec_destroy, .exec_update = f_update,
                                       .exec_launch = f_launch, .submit = f_submit,
                                       .timer_create = f_timer_create,
                                       .timer_destroy = f_timer_destroy,
                                       .graph_add_timer = f_add_timer,
                                       .timer_read = f_timer_read};

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
  fake_now += host_op_ns;   /* the program's own work before the op */
  if (region.ops.n == 0 && cache_timed)
    region.timers.t_first = fake_clock();   /* as the shim does at a chunk's first op */
  grape_region_t* r = &region;
  if (r->cursor.node != NULL) {
    const grape_gc_node_t* nx = grape_gc_step(r->cursor.node, &k);
    if (nx != NULL) {
      cr_assert_eq(grape__region_reserve(r, 8), 0);
      grape__region_push(r, &k, &d, fn, &params, 8);
      r->cursor.held++;
      r->cursor.node = nx;
      if (grape_gc_is_cut(nx)) {
        int err;
        cr_assert_eq(grape_gc_cut(cache, r, NULL, &err), 0);
        launch_error = err;
      }
      return;
    }
    int err;
    cr_assert_eq(grape_gc_flush(cache, r, NULL, GRAPE_GC_DIVERGENCE, &err), 0);
    cr_assert_null(r->cursor.node, "the rest of the region runs eagerly");
  }
  /* Eagerly: the program's own launch, then recorded. */
  run(&issued[nissued - 1]);
  eager_launches++;
  fake_now += eager_op_ns;
  dev_runs(1);
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
  eager_op_ns = graph_launch_ns = host_op_ns = dev_op_ns = update_op_ns = 0;
  builder_now = build_cost_ns = dev_free_at = 0;
  builder_instantiates = timers_read = timers_live = 0;
  cache_timed = cfg.now != NULL;
  launch_error = 0;
  cr_assert_eq(grape_gc_create(&cfg, &fake, &cache), 0);
  region.cursor.node = grape_gc_root(cache);
  region.cursor.ctx = &region;   /* a stream that may be held */
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

Test(cache, a_key_whose_graphs_are_ready_but_never_replayed_does_not_say_it_replayed) {
  pop_t step[4] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {1, 4, 0}};
  issue_all(step, 4);
  issue_all(step, 4);   /* the warm-up's second sighting builds its graph: live, 0 hits */
  grape_gc_stats_t st = stats();
  cr_assert_eq(st.graph_hits, 0);
  cr_assert_gt(st.graphs_built, 0);
  grape_gc_path_t top;
  cr_assert_eq(grape_gc_top(cache, &top, 1), 1);
  cr_expect_eq(top.way, GRAPE_GC_WAY_EAGER);
  cr_expect_null(strstr(top.why, "replayed as a graph"), "%s", top.why);
  cr_expect_not_null(strstr(top.why, "ready"), "%s", top.why);
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

Test(cache, a_ping_pong_pair_in_half_of_the_ops_gets_its_own_variant) {
  /* Two of four ops swap buffers every step (a pinned copy after them does
   * not): half the segment differs from the other parameter set, enough
   * for a variant of its own. */
  for (int it = 0; it < 12; it++) {
    pop_t step[4] = {{1, 4, (uint32_t)(it % 2)}, {2, 4, 9}, {3, 4, (uint32_t)(it % 2) + 5}, {4, 4, 7}};
    issue_all(step, 4);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graphs_built, 2);
  cr_expect_eq(st.node_updates, 0, "each parameter set has its own executable");
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

/* A step counter that restarts every sequence (t = 0..5, as an RNN's time
 * step): every replay differs in both nodes from the one before, but each
 * value recurs. Inline builds cost 2 * 500 ns and a replay's two updates
 * 1000 ns, so a value's second replay that needs updates has paid for its
 * own executable; after that, replays update nothing. */
static void run_cycling_counter(int rounds, uint32_t (*value)(int)) {
  grape_gc_config_t cfg = config();
  cfg.update_ns = 500;
  cfg.build_ns = 0;
  cfg.build_node_ns = 500;
  restart_with(cfg);
  for (int it = 0; it < rounds; it++) {
    uint32_t v = value(it);
    pop_t step[2] = {{1, 4, v}, {2, 4, v + 1}};
    issue_all(step, 2);
  }
  expect_device_ran_what_was_issued();
}

static uint32_t six_steps(int it) { return (uint32_t)(it % 6); }
static uint32_t growing(int it) { return (uint32_t)it; }

Test(cache, a_recurring_parameter_set_gets_its_own_executable) {
  run_cycling_counter(40, six_steps);
  grape_gc_stats_t st = stats();
  cr_expect_geq(st.set_graphs, 4, "the values the two re-bound executables do not hold (%lu)",
                (unsigned long)st.set_graphs);
  uint64_t updates = st.node_updates, hits = st.graph_hits;
  for (int it = 40; it < 70; it++) {
    uint32_t v = six_steps(it);
    pop_t step[2] = {{1, 4, v}, {2, 4, v + 1}};
    issue_all(step, 2);
  }
  expect_device_ran_what_was_issued();
  st = stats();
  cr_expect_eq(st.node_updates, updates, "no updates once each value has its executable (%lu more)",
               (unsigned long)(st.node_updates - updates));
  cr_expect_eq(st.graph_hits - hits, 30, "every one replayed");
}

Test(cache, a_counter_that_only_grows_gets_no_executable_per_value) {
  run_cycling_counter(60, growing);
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.set_graphs, 0);
  cr_expect_leq(st.graphs_built, 2, "the chain and at most one far variant");
  cr_expect_gt(st.node_updates, 0);
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
   * starts, so the verdict (three replays timed, 60 ns slower with no
   * spread) comes at the fourth replay (sightings 4-7): eager until 15,
   * replays 16-19, slower again: eager for twice as long (20-35; the run
   * ends at 30). */
  cr_expect_eq(st.graph_hits, 8, "%lu hits", (unsigned long)st.graph_hits);
  cr_expect_eq(dev.launches, 8);
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

Test(cache, measured_costs_replace_the_configured_ones) {
  /* Windows of 8 launch samples: the least of each is the cost, so one
   * stretched sample (another thread holding the driver) does not count. */
  cr_expect_eq(stats().cost_ns[GRAPE_GC_COST_LAUNCH], 2000, "configured until measured");
  for (int i = 0; i < 7; i++)
    grape_gc_cost_sample(cache, GRAPE_GC_COST_LAUNCH, 1300, 1);
  cr_expect_eq(stats().cost_ns[GRAPE_GC_COST_LAUNCH], 2000, "a window is not full yet");
  grape_gc_cost_sample(cache, GRAPE_GC_COST_LAUNCH, 90000, 1);
  cr_expect_eq(stats().cost_ns[GRAPE_GC_COST_LAUNCH], 1300);
  cr_expect_eq(stats().cost_samples[GRAPE_GC_COST_LAUNCH], 8);
  /* A build of 4 nodes in 20 us: 5 us a node, fixed part included. */
  grape_gc_cost_sample(cache, GRAPE_GC_COST_BUILD_NODE, 20000, 4);
  cr_expect_eq(stats().cost_ns[GRAPE_GC_COST_BUILD_NODE], 5000);
  /* What the user set stays as set. */
  grape_gc_config_t cfg = config();
  cfg.costs_fixed = 1u << GRAPE_GC_COST_LAUNCH;
  restart_with(cfg);
  for (int i = 0; i < 16; i++)
    grape_gc_cost_sample(cache, GRAPE_GC_COST_LAUNCH, 100, 1);
  cr_expect_eq(stats().cost_ns[GRAPE_GC_COST_LAUNCH], 2000);
}

Test(cache, a_key_whose_replays_do_not_pay_at_the_measured_launch_cost_stops_being_held) {
  /* Configured, 4 launches (8000 ns) beat one graph launch (2500 ns): the key
   * replays (warms_up_then_replays_one_graph_per_region). Measured, an eager
   * launch costs 400 ns here: 1600 ns of launches never pay a graph launch. */
  for (int i = 0; i < 8; i++)
    grape_gc_cost_sample(cache, GRAPE_GC_COST_LAUNCH, 400, 1);
  pop_t step[4] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {1, 4, 0}};
  for (int it = 0; it < 10; it++)
    issue_all(step, 4);
  expect_device_ran_what_was_issued();
  cr_expect_leq(stats().graph_hits, 1, "its first replay shows it does not pay: held no more");
  cr_expect_geq(eager_launches, 4 * 9);
}

/* 200 regions of 4 ops of one key (800 ops: a window of 512 judged), the
 * shim's own work measured at shim_ns an op. */
static void run_with_shim_cost(double shim_ns, int regions) {
  for (int i = 0; i < 8; i++)
    grape_gc_cost_sample(cache, GRAPE_GC_COST_SHIM_OP, shim_ns, 1);
  pop_t step[4] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {1, 4, 0}};
  for (int it = 0; it < regions; it++)
    issue_all(step, 4);
  expect_device_ran_what_was_issued();
}

Test(cache, graph_mode_stands_down_when_replays_do_not_cover_the_shim_s_own_work) {
  /* A replay spares 4 launches (8000 ns) for one graph launch (2500): it
   * saves 5500 ns, and the shim spends 4 x 1500 on its ops. */
  run_with_shim_cost(1500, 300);
  cr_expect_gt(stats().graph_hits, 0, "it replays until judged");
  cr_assert_not_null(grape_gc_stood_down(cache), "two losing windows: stood down");
  cr_expect_eq(stats().stood_down_at_op, 1024, "at the end of the second window of 512 ops");
  cr_expect_eq(stats().ledger_losing, 2);
  cr_expect(strstr(grape_gc_stood_down(cache), "1500 ns an op") != NULL, "%s",
            grape_gc_stood_down(cache));
}

Test(cache, graph_mode_keeps_holding_while_replays_cover_the_shim_s_own_work) {
  run_with_shim_cost(1000, 300);   /* 4000 ns of the shim's work against 5500 saved */
  cr_expect_null(grape_gc_stood_down(cache));
  cr_expect_eq(stats().ledger_losing, 0);
  cr_expect_geq(stats().ledger_windows, 2);
  cr_expect_geq(stats().graph_hits, 290);
}

Test(cache, a_shim_whose_work_costs_nothing_never_stands_down) {
  /* Keys whose replays save nothing still cost nothing here (GRAPE_COSTS
   * shim=0, or a clock that does not see the shim's work). */
  for (int i = 0; i < 8; i++)
    grape_gc_cost_sample(cache, GRAPE_GC_COST_LAUNCH, 400, 1);
  run_with_shim_cost(0, 300);
  cr_expect_null(grape_gc_stood_down(cache));
}

Test(cache, a_live_prefix_that_only_paths_not_worth_holding_use_stops_being_held) {
  /* P = ops 1-4 goes live. Q = P then ops 7, 8 whose parameters are new at
   * each sighting: at 1000 ns a launch and 3000 an update, its replays (one
   * graph launch, two updates) never pay for its 6 launches (K_NOPAY). Q's
   * regions then follow P's path, replay P's graph and leave it at op 7:
   * after STRAY_LIMIT of them P, never seen itself, stops being held. */
  pop_t p[4] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {4, 4, 0}};
  for (int it = 0; it < 4; it++)
    issue_all(p, 4);
  cr_assert_gt(stats().graph_hits, 0, "P replays");
  for (int i = 0; i < 8; i++) {
    grape_gc_cost_sample(cache, GRAPE_GC_COST_UPDATE, 3000, 1);
    grape_gc_cost_sample(cache, GRAPE_GC_COST_LAUNCH, 1000, 1);
  }
  int launches_before_last = 0;
  for (int it = 0; it < 30; it++) {
    pop_t q[6] = {{1, 4, 0}, {2, 4, 0}, {3, 4, 0}, {4, 4, 0}, {7, 4, (uint32_t)it}, {8, 4, (uint32_t)it + 1}};
    if (it == 20)
      launches_before_last = dev.launches;
    issue_all(q, 6);
  }
  expect_device_ran_what_was_issued();
  cr_expect_eq(dev.launches, launches_before_last,
               "Q's last regions run eagerly: P's prefix is no longer replayed for them");
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

/* ---- The builder thread ---- */

static pthread_t builder;
static volatile int builder_quit;

static void* builder_main(void* arg) {
  (void)arg;
  on_builder = 1;
  while (!builder_quit)
    if (!grape_gc_build_pending(cache))
      sched_yield();
  return NULL;
}

static void start_builder(grape_gc_config_t cfg) {
  cfg.now = test_clock;
  cfg.handoff = test_handoff;
  cfg.async_builds = 1;
  cfg.deterministic = 1;
  restart_with(cfg);
  builder_quit = 0;
  cr_assert_eq(pthread_create(&builder, NULL, builder_main, NULL), 0);
}

static void stop_builder(void) {
  grape_gc_stop(cache);
  builder_quit = 1;
  pthread_join(builder, NULL);
}

Test(cache, a_builder_thread_builds_and_the_graph_is_used_once_built_on_its_clock) {
  start_builder(config());
  build_cost_ns = 10000;   /* an instantiation costs the builder 10 us */
  host_op_ns = 1000;       /* the program: 1 us of its own work per op */
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  issue_all(step, 4);
  issue_all(step, 4);   /* the warm-up: the build is queued at t = 9 us */
  /* Ready at 9 + 10 = 19 us of the program's clock: sightings 3 and 4 (up
   * to 17 us) run eagerly, the key goes live at the end of the fifth
   * (21 us), and the sixth is its first replay. */
  for (int it = 2; it < 6; it++) {
    issue_all(step, 4);
    cr_expect_eq(stats().graph_hits, it < 5 ? 0 : 1, "sighting %d: %lu hits, now %lu, builder %lu",
                 it + 1, (unsigned long)stats().graph_hits, (unsigned long)fake_now,
                 (unsigned long)builder_now);
  }
  stop_builder();
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(builder_instantiates, 1, "the builder instantiated it");
  cr_expect_eq(dev.instantiates, 1, "nothing was built on the program's thread");
  cr_expect_eq(st.builds_async, 1);
  cr_expect_eq(st.graphs_built, 1);
  cr_expect_gt(st.build_waits, 0, "deterministic: the program waited for the builder");
}

/* dynrnn's step: two kernels whose step counter changes every time, so a
 * replay updates both nodes, and with updates at 1500 ns a replay (2500 +
 * 2 x 1500) costs more than two launches (4000). While the counter only
 * grows the key stops being held. Then it cycles (t = 0..15, each
 * sequence): counted while the key runs eagerly, each value earns an
 * executable of its own (the builder builds at no cost to the program), the
 * re-checks find replays without updates, and the key is held again,
 * replaying every value without an update. */
static void issue_step(uint32_t v) {
  pop_t step[2] = {{1, 4, v}, {2, 4, v + 1}};
  issue_all(step, 2);
}

Test(cache, a_key_that_stopped_paying_for_its_updates_comes_back_with_an_executable_per_value) {
  grape_gc_config_t cfg = config();
  cfg.update_ns = 1500;
  start_builder(cfg);
  build_cost_ns = 10000;   /* an instantiation costs the builder 10 us */
  host_op_ns = 1000;       /* the program: 1 us of its own work per op */
  eager_op_ns = 2000;      /* measured as configured */
  graph_launch_ns = 2500;
  update_op_ns = 1500;
  for (int it = 0; it < 60; it++)
    issue_step(1000 + (uint32_t)it);
  grape_gc_path_t top;
  cr_assert_eq(grape_gc_top(cache, &top, 1), 1);
  cr_expect_not_null(strstr(top.why, "cost more than eager"), "not held: %s", top.why);
  for (int it = 0; it < 400; it++)
    issue_step((uint32_t)(it % 16));
  grape_gc_stats_t st = stats();
  uint64_t updates = st.node_updates, hits = st.graph_hits;
  for (int it = 400; it < 432; it++)
    issue_step((uint32_t)(it % 16));
  stop_builder();
  expect_device_ran_what_was_issued();
  st = stats();
  cr_expect_geq(st.set_graphs, 12, "executables per value (%lu)", (unsigned long)st.set_graphs);
  cr_expect_eq(st.graph_hits - hits, 32, "held again: every sighting replayed (%lu)",
               (unsigned long)(st.graph_hits - hits));
  cr_expect_eq(st.node_updates, updates, "without an update (%lu)",
               (unsigned long)(st.node_updates - updates));
}

/* A build starts only once the run has lasted its estimated cost over
 * build_share (here 40 us / 10%: 400 us of the program's clock), so that an
 * exit, which waits for a build in progress, slows a short run by at most
 * that share. Before then the key runs eagerly; a run that ends sooner
 * waits for no build at all. */
/* A builder thread whose builds are estimated at 10 us a node (40 us for a
 * 4-op key) and cost it 10 us each. */
static void start_builder_10us(grape_gc_config_t cfg) {
  cfg.build_ns = 0;
  cfg.build_node_ns = 10000;
  start_builder(cfg);
  build_cost_ns = 10000;
}

static void issue_until(const pop_t* step, int n, uint64_t t) {
  while (fake_now < t)
    issue_all(step, n);
}

/* Four parameter sets in turn, each differing from the others in all 20
 * nodes (beyond the segment size that gets an executable per recurring
 * set). With a builder thread (builds estimated at 10 us a node, a node
 * update at 1 us) the second variant is built at the first far replay; a
 * third only once far replays have spent a build (200 us: ten replays of 20
 * updates), and so on up to GRAPE_VARIANTS (4 here). */
Test(cache, variants_beyond_the_second_are_bought_once_far_replays_have_spent_a_build) {
  grape_gc_config_t cfg = config();
  cfg.variants = 4;
  start_builder_10us(cfg);
  build_cost_ns = 200000;   /* measured: 10 us a node, 200 us a build */
  update_op_ns = 1000;      /* measured: 1 us an update */
  host_op_ns = 1000;
  eager_op_ns = 2000;
  graph_launch_ns = 2500;
  int built_at[5] = {-1, -1, -1, -1, -1};
  uint64_t far_updates_before_third = 0;
  pop_t step[20];
  for (int it = 0; it < 60; it++) {
    uint32_t v = (uint32_t)(it % 4);
    for (int i = 0; i < 20; i++)
      step[i] = (pop_t){(uint64_t)(i % 7 + 1), 4, v * 100 + (uint32_t)i};
    issue_all(step, 20);
    grape_gc_stats_t st = stats();
    for (uint64_t b = 1; b <= st.graphs_built && b <= 4; b++)
      if (built_at[b] < 0)
        built_at[b] = it;
    if (built_at[3] < 0)
      far_updates_before_third = st.node_updates;
  }
  uint64_t updates = stats().node_updates;
  for (int it = 60; it < 68; it++) {
    for (int i = 0; i < 20; i++)
      step[i] = (pop_t){(uint64_t)(i % 7 + 1), 4, (uint32_t)(it % 4) * 100 + (uint32_t)i};
    issue_all(step, 20);
  }
  stop_builder();
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.node_updates, updates, "each set has its executable: no more updates");
  cr_expect_eq(st.graphs_built, 4, "%lu built", (unsigned long)st.graphs_built);
  cr_expect_lt(built_at[2], 16, "the second queued at the first far replay (ready at round %d)",
               built_at[2]);
  cr_expect_geq(far_updates_before_third, 200,
                "the third once far replays had spent a build (%lu updates before it)",
                (unsigned long)far_updates_before_third);
}

Test(cache, a_build_waits_until_the_run_has_lasted_its_cost_over_its_share) {
  grape_gc_config_t cfg = config();
  cfg.build_share = 0.1;
  start_builder_10us(cfg);
  host_op_ns = 1000;       /* the program: 1 us of its own work per op */
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  issue_until(step, 4, 390000);
  cr_expect_eq(builder_instantiates, 0, "no build began before 400 us (now %lu)",
               (unsigned long)fake_now);
  cr_expect_eq(stats().graph_hits, 0);
  issue_until(step, 4, 440000);
  stop_builder();
  expect_device_ran_what_was_issued();
  cr_expect_eq(builder_instantiates, 1, "built once the run had lasted 400 us");
  cr_expect_gt(stats().graph_hits, 0, "and replayed after it");
}

Test(cache, a_run_that_ends_before_a_build_may_start_waits_for_none) {
  grape_gc_config_t cfg = config();
  cfg.build_share = 0.1;
  start_builder_10us(cfg);
  host_op_ns = 1000;
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  issue_until(step, 4, 100000);
  stop_builder();   /* the exit */
  expect_device_ran_what_was_issued();
  cr_expect_eq(builder_instantiates, 0, "the queued build was dropped, never begun");
  cr_expect_eq(builder_now, 0, "the builder's clock never moved");
}

/* The budget (ledger.c): what graph mode has cost the program, its own work
 * per op (here 1 us) less what replays saved, may reach budget_share of how
 * long the process has run (1%). Past it the cache asks the caller to pause;
 * the pause ends once that cost is half the share of the run. Regions of 4
 * ops whose keys never recur: nothing replays, nothing is saved. */
static void issue_unique_regions(int n, uint64_t op_ns) {
  static uint64_t next = 1000;
  host_op_ns = op_ns;
  for (int it = 0; it < n; it++, next += 4) {
    pop_t step[4] = {{next, 4, 0}, {next + 1, 4, 0}, {next + 2, 4, 0}, {next + 3, 4, 0}};
    issue_all(step, 4);
  }
}

static grape_gc_config_t budget_config(void) {
  grape_gc_config_t cfg = config();
  cfg.now = fake_clock;
  cfg.shim_op_ns = 1000;
  cfg.budget_share = 0.01;
  return cfg;
}

Test(cache, graph_mode_pauses_past_its_budget_and_resumes_once_the_run_has_caught_up) {
  restart_with(budget_config());
  issue_unique_regions(10, 200000);   /* 4 us of the shim's work per 800 us: 0.5% */
  cr_expect_not(grape_gc_pause_wanted(cache), "within its budget");
  /* Then 4 us per 40 us: after k more regions 40 + 4k us against 1% of
   * 8000 + 40k us, past it at the 12th. */
  issue_unique_regions(11, 10000);
  cr_expect_not(grape_gc_pause_wanted(cache), "84 us against 84.4: not yet (at %lu ns)",
                (unsigned long)fake_now);
  issue_unique_regions(1, 10000);
  cr_assert(grape_gc_pause_wanted(cache), "past its budget: pause");
  cr_expect_eq(stats().pauses, 1);
  /* 88 us may be half of 1% once the run has lasted 17.6 ms. */
  fake_now = 17500000;
  cr_expect_not(grape_gc_resume(cache), "17.5 ms: the pause goes on");
  cr_expect(grape_gc_pause_wanted(cache));
  uint64_t paused_at = 8480001;
  fake_now = 17700000;
  cr_expect(grape_gc_resume(cache), "17.7 ms: the pause ends");
  cr_expect_not(grape_gc_pause_wanted(cache));
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.pauses, 1);
  cr_expect_eq((uint64_t)st.paused_ns, fake_now - paused_at, "paused from 8.48 ms to 17.7 ms (%.0f)",
               st.paused_ns);
  expect_device_ran_what_was_issued();
}

Test(cache, forced_builds_never_pause) {
  /* GRAPE_COSTS=build=0,build_node=0: graphs at once, and no pause. */
  grape_gc_config_t cfg = budget_config();
  cfg.build_ns = cfg.build_node_ns = 0;
  cfg.costs_fixed = 1u << GRAPE_GC_COST_BUILD_NODE;
  restart_with(cfg);
  issue_unique_regions(40, 10000);
  cr_expect_not(grape_gc_pause_wanted(cache));
  cr_expect_eq(stats().pauses, 0);
}

Test(cache, a_shim_cheap_against_a_launch_never_pauses) {
  /* 300 ns of the shim's work an op against 2000 for an eager launch: below
   * a fifth, where warm-up's recording is cheap against what replays save. */
  grape_gc_config_t cfg = budget_config();
  cfg.shim_op_ns = 300;
  restart_with(cfg);
  issue_unique_regions(40, 1000);   /* 1.2 us of the shim's work per 4 us */
  cr_expect_not(grape_gc_pause_wanted(cache));
  /* Measured dearer (1000 ns a sample, a window of 8), it pauses. */
  for (int i = 0; i < 8; i++)
    grape_gc_cost_sample(cache, GRAPE_GC_COST_SHIM_OP, 1000, 1);
  issue_unique_regions(1, 1000);
  cr_expect(grape_gc_pause_wanted(cache));
}

Test(cache, a_pause_ends_when_the_builds_queued_before_it_are_estimated_done) {
  /* The key's build (estimated 40 us) is queued at its second sighting; the
   * third sighting passes a budget of 0.1% and pauses, and the pause ends
   * when that build is estimated done, not when the run has caught up. */
  grape_gc_config_t cfg = budget_config();
  cfg.budget_share = 0.001;
  start_builder_10us(cfg);
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  host_op_ns = 2000000;   /* the first region: 4 us of the shim's work in 8 ms */
  issue_all(step, 4);
  host_op_ns = 1000;
  issue_all(step, 4);     /* 8 us in 8.004 ms: within 8.004 */
  cr_expect_not(grape_gc_pause_wanted(cache));
  issue_all(step, 4);     /* 12 us in 8.008 ms: past it */
  cr_assert(grape_gc_pause_wanted(cache), "paused at %lu ns", (unsigned long)fake_now);
  uint64_t at = fake_now;
  fake_now = at + 20000;
  cr_expect_not(grape_gc_resume(cache), "the build is not estimated done yet");
  fake_now = at + 50000;
  cr_expect(grape_gc_resume(cache), "the build queued at 8.004 ms is estimated done at 8.044");
  stop_builder();
  expect_device_ran_what_was_issued();
}

/* The same on a GPU, where the builder does not follow the program's
 * clock (not deterministic): it waits in real time until the clock, which
 * every thread reads alike, reaches the build's moment. The program's clock
 * is published to the builder after each region. */
static uint64_t wall_now;
static uint64_t wall_clock(void) {
  return on_builder ? __atomic_load_n(&wall_now, __ATOMIC_ACQUIRE) : fake_now;
}

Test(cache, a_build_waits_for_its_moment_in_real_time_off_the_sim) {
  grape_gc_config_t cfg = config();
  cfg.build_ns = 0;
  cfg.build_node_ns = 10000;   /* estimated: 40 us for the 4-op key, so 400 us at 10% */
  cfg.build_share = 0.1;
  cfg.now = wall_clock;
  cfg.async_builds = 1;
  restart_with(cfg);
  builder_quit = 0;
  cr_assert_eq(pthread_create(&builder, NULL, builder_main, NULL), 0);
  host_op_ns = 1000;
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  while (fake_now < 390000) {
    issue_all(step, 4);
    __atomic_store_n(&wall_now, fake_now, __ATOMIC_RELEASE);
  }
  struct timespec pause = {0, 20 * 1000 * 1000};
  nanosleep(&pause, NULL);   /* a builder not held back would have built by now */
  cr_expect_eq(stats().builds_async, 0, "built before the run had lasted 400 us");
  while (fake_now < 440000) {
    issue_all(step, 4);
    __atomic_store_n(&wall_now, fake_now, __ATOMIC_RELEASE);
  }
  for (int i = 0; i < 2000 && stats().builds_async == 0; i++)
    nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
  cr_expect_eq(stats().builds_async, 1, "built once the run had lasted 400 us");
  stop_builder();
  expect_device_ran_what_was_issued();
}

Test(cache, a_stopped_cache_drops_queued_builds) {
  grape_gc_config_t cfg = config();
  cfg.now = test_clock;
  cfg.async_builds = 1;
  restart_with(cfg);   /* no builder runs: the builds stay queued */
  pop_t step[3] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}};
  issue_all(step, 3);
  issue_all(step, 3);
  grape_gc_stop(cache);
  cr_expect_eq(grape_gc_build_pending(cache), 0, "the queue is empty once stopped");
  cr_expect_eq(dev.instantiates, 0);
}

/* Jobs waiting for the builder (none runs here: the test builds them). */
static int jobs_queued(void) {
  int n = 0;
  for (const job_t* j = cache->jobs; j != NULL; j = j->next)
    n++;
  return n;
}

/* moe's keys, at a busy builder: a key waiting for its first graph runs
 * eagerly until it is built, while a replaying key's new executables only
 * spare it updates. The builder takes the first kind first, whatever the
 * order of the queue. */
Test(cache, a_key_waiting_for_its_first_graph_is_built_before_another_key_s_variants) {
  grape_gc_config_t cfg = config();
  cfg.async_builds = 1;   /* a builder builds (this test calls it) */
  restart_with(cfg);
  pop_t a0[2] = {{1, 4, 0}, {2, 4, 1}};
  issue_all(a0, 2);
  issue_all(a0, 2);   /* the warm-up: its first build is queued */
  while (grape_gc_build_pending(cache))
    ;
  issue_all(a0, 2);   /* goes live */
  issue_all(a0, 2);
  cr_assert_eq(stats().graph_hits, 1, "the first key replays");
  /* Parameter sets the first key's executable does not hold: variants
   * of it are queued for the builder. */
  for (uint32_t v = 10; v < 40; v += 10) {
    pop_t a[2] = {{1, 4, v}, {2, 4, v + 1}};
    issue_all(a, 2);
  }
  int before = jobs_queued();
  cr_assert_gt(before, 0, "variants of the replaying key are queued");
  pop_t b[2] = {{3, 4, 0}, {4, 4, 1}};
  issue_all(b, 2);
  issue_all(b, 2);   /* the second key's warm-up: queued behind them */
  cr_assert_eq(jobs_queued(), before + 1);
  uint64_t built = stats().graphs_built;
  cr_assert_eq(grape_gc_build_pending(cache), 1, "one build");
  cr_expect_eq(stats().graphs_built, built + 1);
  issue_all(b, 2);   /* its graph is there: it goes live */
  uint64_t hits = stats().graph_hits;
  issue_all(b, 2);
  cr_expect_eq(stats().graph_hits, hits + 1, "the second key replays after one build");
  grape_gc_stop(cache);
  expect_device_ran_what_was_issued();
}

/* A program thread's driver call may wait behind the builder's driver
 * locks: the builder's build is bracketed as its bounded work (the shim's
 * watchdog then takes no holder for one waiting on the GPU), once on, once
 * off, with the instantiation inside. */
Test(cache, the_builder_brackets_its_driver_work) {
  grape_gc_config_t cfg = config();
  cfg.async_builds = 1;   /* a builder builds (this test calls it) */
  cfg.driver_work = test_driver_work;
  restart_with(cfg);
  pop_t a[2] = {{1, 4, 0}, {2, 4, 1}};
  issue_all(a, 2);
  issue_all(a, 2);   /* the warm-up: its first build is queued */
  driver_work_depth = driver_work_calls = instantiates_unbracketed = 0;
  int before = dev.instantiates;
  cr_assert_eq(grape_gc_build_pending(cache), 1, "one build");
  cr_expect_eq(dev.instantiates, before + 1, "the build instantiated its graph");
  cr_expect_eq(instantiates_unbracketed, 0, "the instantiation ran inside the bracket");
  cr_expect_eq(driver_work_calls, 2, "one bracket: on, then off");
  cr_expect_eq(driver_work_depth, 0, "the bracket is closed after the build");
  issue_all(a, 2);
  issue_all(a, 2);
  cr_expect_eq(stats().graph_hits, 1, "the key replays its graph");
  grape_gc_stop(cache);
  expect_device_ran_what_was_issued();
}

/* ---- Plans ---- */

Test(cache, plan_cuts_where_the_device_can_run_while_the_host_issues) {
  /* 100 ops over 500 us of host time, 50 us of device time, 3.5 us a launch:
   * one segment ends at 553.5 us; cutting lets the device finish the first
   * part while the host issues the rest. */
  uint32_t end[1] = {100}, out[MAX_CUTS];
  double dev[1] = {50000}, f_old, f_new;
  grape_cuts_in_t in = {100, end, 1, dev, end, 1, 500000, 3500, 0};
  int n = grape__cuts_best(&in, out, &f_old, &f_new);
  cr_expect_gt(n, 1);
  cr_expect_eq(out[n - 1], 100, "the key's end stays a cut");
  cr_expect_float_eq(f_old, 500000 + 3500 + 50000, 1e-6);
  cr_expect_lt(f_new, 520000, "end %g", f_new);
  cr_expect_float_eq(grape__cuts_end(&in, out, n), f_new, 1e-6);
  /* At most one segment: the region whole, as it was. */
  in.max_segs = 1;
  n = grape__cuts_best(&in, out, &f_old, &f_new);
  cr_expect_eq(n, 1);
  cr_expect_float_eq(f_new, f_old, 1e-6);
  in.max_segs = 0;
  /* No host time: a program that only launches gains nothing from cuts. */
  in.host_ns = 0;
  n = grape__cuts_best(&in, out, &f_old, &f_new);
  cr_expect_eq(n, 1);
  cr_expect_float_eq(f_new, f_old, 1e-6);
  /* Its own cuts may go (no host time: all of them); a cut another key
   * needs stays. */
  uint32_t two[2] = {40, 100}, forced[2] = {40, 100};
  double dev2[2] = {20000, 30000};
  grape_cuts_in_t mine = {100, two, 2, dev2, two + 1, 1, 0, 3500, 0};
  n = grape__cuts_best(&mine, out, &f_old, &f_new);
  cr_expect_eq(n, 1, "the key's own cut at 40 went");
  grape_cuts_in_t shared = {100, two, 2, dev2, forced, 2, 0, 3500, 0};
  n = grape__cuts_best(&shared, out, &f_old, &f_new);
  cr_expect_eq(n, 2, "the cut another key needs stayed");
  cr_expect_eq(out[0], 40);
}

Test(cache, a_key_whose_device_time_hides_behind_the_host_is_cut_into_segments) {
  /* Plans change only where builds cost the program nothing: a builder. */
  grape_gc_config_t cfg = config();
  cfg.cuts = 1;
  start_builder(cfg);
  host_op_ns = 5000;      /* 5 us of the program's own work per op */
  eager_op_ns = 2000;     /* an eager launch costs what the config says */
  dev_op_ns = 2000;       /* 2 us of device time per op */
  graph_launch_ns = 3500;
  pop_t step[16];
  for (int i = 0; i < 16; i++)
    step[i] = (pop_t){(uint64_t)(i % 5 + 1), 4, 3};
  for (int it = 0; it < 80; it++)
    issue_all(step, 16);
  stop_builder();
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_gt(st.cuts_added, 0, "the key was cut");
  cr_expect_gt(st.recuts, 0);
  cr_expect_eq(dev.destroyed_by_program, 0,
               "the builder destroys what new cuts replaced: a destroy on the program's thread "
               "delays its launches");
  cr_expect_gt(timers_read, 0, "its segments were timed");
  cr_expect_gt(st.graph_launches, st.graph_hits, "more than one launch per replayed region");
  grape_gc_path_t top;
  cr_assert_eq(grape_gc_top(cache, &top, 1), 1);
  cr_expect_gt(top.key_segments, 1);
}

Test(cache, a_key_whose_replays_cannot_beat_eager_launches_is_not_held) {
  /* The device's work as long as the launches: holding only delays it. */
  grape_gc_config_t cfg = config();
  cfg.now = fake_clock;
  cfg.cuts = 1;
  restart_with(cfg);
  eager_op_ns = 2000;
  dev_op_ns = 2500;
  graph_launch_ns = 3500;
  pop_t step[16];
  for (int i = 0; i < 16; i++)
    step[i] = (pop_t){(uint64_t)(i % 5 + 1), 4, 3};
  for (int it = 0; it < 80; it++)
    issue_all(step, 16);
  expect_device_ran_what_was_issued();
  cr_expect_leq(stats().graph_hits, 8, "replayed only to be timed (%lu)",
                (unsigned long)stats().graph_hits);
  grape_gc_path_t top;
  cr_assert_eq(grape_gc_top(cache, &top, 1), 1);
  cr_expect_not_null(strstr(top.why, "slower"), "%s", top.why);
}

/* A region whose stream sync then waits tail_ns for the device. */
static void issue_all_synced(const pop_t* ops, int n, uint64_t tail_ns) {
  issue_all(ops, n);
  fake_now += tail_ns;
  grape_gc_synced(cache, &region);
}

/* A region whose stream sync waits until the fake device is done. */
static void issue_all_waiting(const pop_t* ops, int n) {
  issue_all(ops, n);
  if (dev_free_at > fake_now)
    fake_now = dev_free_at;
  grape_gc_synced(cache, &region);
}

Test(cache, a_key_whose_syncs_show_a_busy_device_is_built_only_once_it_keeps_recurring) {
  grape_gc_config_t cfg = config();
  cfg.cuts = 1;
  cfg.recheck = 16;
  start_builder(cfg);
  host_op_ns = 3000;
  eager_op_ns = 2000;
  graph_launch_ns = 2500;
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  /* The device runs 10 us per op against the host's 5: each sync waits
   * 4 * 10 - 3 * 5 = 25 us. Holding the ops would only idle it longer. */
  for (int it = 0; it < 12; it++)
    issue_all_synced(step, 4, 25000);
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.deferred, 1, "its first build was put off");
  cr_expect_eq(st.graphs_built, 0);
  cr_expect_eq(st.graph_hits, 0);
  /* Still recurring after `recheck` sightings: tried, its replays timed. */
  for (int it = 12; it < 40; it++)
    issue_all_synced(step, 4, 25000);
  stop_builder();
  expect_device_ran_what_was_issued();
  cr_expect_geq(stats().graphs_built, 1, "tried once it kept recurring");
}

Test(cache, a_key_whose_syncs_show_an_idle_device_is_built_at_its_warm_up) {
  grape_gc_config_t cfg = config();
  cfg.cuts = 1;
  cfg.recheck = 16;
  start_builder(cfg);
  host_op_ns = 3000;
  eager_op_ns = 2000;
  graph_launch_ns = 2500;
  pop_t step[4] = {{1, 4, 3}, {2, 4, 3}, {3, 4, 3}, {4, 4, 3}};
  for (int it = 0; it < 12; it++)
    issue_all_synced(step, 4, 500);   /* the last op's 0.5 us */
  stop_builder();
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.deferred, 0);
  cr_expect_gt(st.graph_hits, 5, "%lu hits", (unsigned long)st.graph_hits);
}

/* A key judged slower on cuts that are being replaced. Its first cuts come
 * from its eager runs, on which the device kept up (0.5 us an op); from its
 * first replays on, the device takes 3 us an op, so that the sync after a
 * segment that ends the region waits for all of its device work. Its timed
 * replays cut it again (more segments, launched while the host still
 * issues), and the builder takes 150 us a build: the replays on the old cuts
 * are judged slower before the new cuts are ready. */
static grape_gc_stats_t run_slower_on_old_cuts(int steps, int* hits_at_verdict) {
  grape_gc_config_t cfg = config();
  cfg.cuts = 1;
  cfg.recheck = 1000;   /* a re-check only after the run */
  start_builder(cfg);
  build_cost_ns = 150000;
  host_op_ns = 5000;
  eager_op_ns = 2000;
  graph_launch_ns = 2500;
  pop_t step[16];
  for (int i = 0; i < 16; i++)
    step[i] = (pop_t){(uint64_t)(i % 5 + 1), 4, 3};
  *hits_at_verdict = -1;
  for (int it = 0; it < steps; it++) {
    dev_op_ns = it < 4 ? 500 : 3000;
    issue_all_waiting(step, 16);
    grape_gc_path_t top;
    if (*hits_at_verdict < 0 && grape_gc_top(cache, &top, 1) == 1 &&
        strstr(top.why, "measured slower") != NULL)
      *hits_at_verdict = (int)stats().graph_hits;
  }
  stop_builder();
  expect_device_ran_what_was_issued();
  return stats();
}

Test(cache, a_key_judged_slower_on_cuts_being_replaced_is_tried_on_the_new_ones_once_built) {
  int at_verdict;
  grape_gc_stats_t st = run_slower_on_old_cuts(60, &at_verdict);
  cr_expect_gt(st.recuts, 0, "cut again after its timed replays");
  cr_expect_geq(at_verdict, 1, "judged slower on its first cuts");
  cr_expect_geq(st.graph_hits, (uint64_t)at_verdict + 45,
                "replayed on its new cuts from when they were built: %lu hits, %d at the verdict",
                (unsigned long)st.graph_hits, at_verdict);
  grape_gc_path_t top;
  cr_assert_eq(grape_gc_top(cache, &top, 1), 1);
  cr_expect_str_eq(top.why, "replayed as a graph");
  cr_expect_gt(top.key_segments, 2);
}

Test(cache, without_host_time_a_key_stays_one_segment) {
  grape_gc_config_t cfg = config();
  cfg.now = fake_clock;
  cfg.cuts = 1;
  restart_with(cfg);
  eager_op_ns = 2000;     /* launch-bound: the launches are the host's only work */
  dev_op_ns = 500;
  graph_launch_ns = 3500;
  pop_t step[16];
  for (int i = 0; i < 16; i++)
    step[i] = (pop_t){(uint64_t)(i % 5 + 1), 4, 3};
  for (int it = 0; it < 80; it++)
    issue_all(step, 16);
  cr_expect_gt(stats().graph_hits, 70);
  cr_expect_eq(stats().cuts_added, 0);
  cr_expect_eq(stats().graph_launches, stats().graph_hits);
}

/* ---- Bounds ---- */

Test(cache, paths_beyond_the_bound_go_least_recently_seen_first) {
  grape_gc_config_t cfg = config();
  cfg.max_paths = 8;
  restart_with(cfg);
  for (int it = 0; it < 100; it++) {
    pop_t step[2] = {{1, (uint32_t)(1 + it), 0}, {2, 4, 0}};   /* a grid of its own each time */
    issue_all(step, 2);
    pop_t hot[2] = {{3, 4, 0}, {4, 4, 0}};   /* seen every time: never the least recent */
    issue_all(hot, 2);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.paths, 101);
  cr_expect_eq(st.paths_evicted, 101 - 8);
  grape_gc_path_t top[16];
  size_t n = grape_gc_top(cache, top, 16);
  cr_expect_eq(n, 8, "8 paths kept");
  cr_expect_eq(top[0].count, 100, "the hot path kept its count");
  cr_expect_gt(st.graph_hits, 90, "the hot key still replays");
}

Test(cache, keys_beyond_the_bound_go_unless_live) {
  grape_gc_config_t cfg = config();
  cfg.max_paths = 4;
  restart_with(cfg);
  for (int it = 0; it < 50; it++) {
    pop_t step[2] = {{(uint64_t)(100 + it), 4, 0}, {2, 4, 0}};   /* a new key each time */
    issue_all(step, 2);
    pop_t hot[2] = {{3, 4, 0}, {4, 4, 0}};
    issue_all(hot, 2);
  }
  expect_device_ran_what_was_issued();
  grape_gc_stats_t st = stats();
  cr_expect_eq(st.graph_keys, 51);
  cr_expect_geq(st.keys_evicted, 50 - 4);
  cr_expect_gt(st.graph_hits, 40, "the live key was never evicted");
}

/* Tests of the sim's device model (sim/device.c, sim/README.md "The device
 * model"): a kernel alone keeps the time it had before the model, kernels on
 * two streams share the 132 multiprocessors (so a persistent kernel loses a
 * wave beside a co-runner, and a full-device pair takes as long as in
 * sequence), bandwidth-bound kernels share the memory bandwidth, graph nodes
 * without an edge between them run concurrently, SIMCU_GRAPH_ORDER runs a
 * graph's unordered nodes reversed or shuffled (a missed dependence changes
 * the result), graph updates keep the topology, and SIMCU_TIMELINE has each
 * kernel's stream, span and blocks.
 *
 * k_cost's SIMCU_COST hook makes a launch cost exactly what its arguments
 * say (ns per block, bytes per launch), so times are computed, not guessed;
 * dynamic shared memory of 150 KB makes one block fill a multiprocessor.
 * Each test runs in its own process (Criterion forks), so the SIMCU_*
 * variables a test sets before its first driver call apply to it alone. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cost.h"
#include "drv_setup.h"
#include "errcap.h"
#include "simcu.h"

enum {
#define ROW_DEFAULT(id, name, dflt) D_##id = dflt,
  SIM_COST_ROWS(ROW_DEFAULT)
#undef ROW_DEFAULT
};

#define SMS 132
#define BIG_SMEM (150 * 1024)   /* one block per multiprocessor */

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_cost(.param .u64 ns, .param .u64 bytes)\n{\n ret;\n}\n"
    ".visible .entry k_idle(.param .u32 n)\n{\n ret;\n}\n"
    ".visible .entry k_op(.param .u64 src, .param .u64 dst, .param .u32 add)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_cost, 8, 8);
SIMCU_KERNEL(k_cost) {
  (void)simcu_blk;
  (void)simcu_args;
}
SIMCU_COST(k_cost) {
  (void)simcu_blk;
  simcu_cost->cta_ns = (double)SIMCU_ARG(0, uint64_t);
  simcu_cost->bytes = (double)SIMCU_ARG(1, uint64_t);
}

/* No cost hook: the sim's time per thread. */
SIMCU_PARAMS(k_idle, 4);
SIMCU_KERNEL(k_idle) {
  (void)simcu_blk;
  (void)simcu_args;
}

/* dst[0] = (src ? src[0] : 0) + add, by block 0. */
SIMCU_PARAMS(k_op, 8, 8, 4);
SIMCU_KERNEL(k_op) {
  const int* src = SIMCU_ARG(0, const int*);
  int* dst = SIMCU_ARG(1, int*);
  if (simcu_blk->idx.x == 0)
    dst[0] = (src != NULL ? src[0] : 0) + (int)SIMCU_ARG(2, unsigned);
}

static CUfunction f_cost, f_idle, f_op;
static const simcu_private_t* sim;

static void start(void) {
  CUmodule m;
  OK(sim_test_start(NULL, NULL, NULL, NULL));
  OK(cuModuleLoadData(&m, ptx));
  OK(cuModuleGetFunction(&f_cost, m, "k_cost"));
  OK(cuModuleGetFunction(&f_idle, m, "k_idle"));
  OK(cuModuleGetFunction(&f_op, m, "k_op"));
  OK(cuFuncSetAttribute(f_cost, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, BIG_SMEM));
  const void* t = NULL;
  CUuuid id = {SIMCU_PRIVATE_UUID};
  OK(cuGetExportTable(&t, &id));
  sim = t;
}

/* blocks of one multiprocessor each, ns per block, bytes for the launch. */
static void cost_kernel(CUstream s, unsigned blocks, uint64_t ns, uint64_t bytes) {
  void* args[] = {&ns, &bytes};
  OK(cuLaunchKernel(f_cost, blocks, 1, 1, 1024, 1, 1, BIG_SMEM, s, args, NULL));
}

static CUstream stream(void) {
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  return s;
}

/* Simulated ns from an event recorded before to one recorded after. */
static uint64_t between(CUevent a, CUevent b) {
  OK(cuEventSynchronize(b));
  float ms = 0;
  OK(cuEventElapsedTime(&ms, a, b));
  return (uint64_t)((double)ms * 1e6 + 0.5);
}

/* Host ns from now until the device has done all that was submitted. */
static uint64_t t_start;
static void mark(void) {
  OK(cuCtxSynchronize());
  t_start = sim->host_ns();
}
static uint64_t until_done(void) {
  OK(cuCtxSynchronize());
  return sim->host_ns() - t_start;
}

/* ---- A kernel alone ---- */

/* The time it had before the model: launch overhead + threads / 16 ns. */
static uint64_t legacy_ns(uint64_t blocks, uint64_t threads, int graph) {
  return (uint64_t)(graph ? D_DEVICE_GRAPH_KERNEL : D_DEVICE_KERNEL) +
         blocks * threads / D_DEVICE_THREADS_PER_NS;
}

Test(sim_device, a_kernel_alone_keeps_todays_time) {
  start();
  CUstream s = stream();
  /* 1024 threads: two blocks per SM, 264 a round; grids around round edges. */
  const unsigned grids[] = {1, 263, 264, 265, 1000, 5000};
  for (size_t i = 0; i < sizeof(grids) / sizeof(grids[0]); i++) {
    int n = 0;
    void* args[] = {&n};
    mark();
    OK(cuLaunchKernel(f_idle, grids[i], 1, 1, 1024, 1, 1, 0, s, args, NULL));
    uint64_t got = until_done();
    uint64_t want = D_LAUNCH + D_SUBMIT_LATENCY + legacy_ns(grids[i], 1024, 0) + D_SYNC;
    cr_assert_eq(got, want, "grid %u: %llu ns, want %llu", grids[i], (unsigned long long)got,
                 (unsigned long long)want);
  }
}

Test(sim_device, a_kernel_with_a_cost_hook_takes_its_rounds) {
  start();
  CUstream s = stream();
  mark();
  cost_kernel(s, 3 * SMS + 1, 10000, 0);   /* four rounds of one block per SM */
  uint64_t got = until_done();
  cr_assert_eq(got, D_LAUNCH + D_SUBMIT_LATENCY + D_DEVICE_KERNEL + 4 * 10000 + D_SYNC);
}

/* ---- Sharing the multiprocessors ---- */

/* The same two kernels on one stream, then on two streams: (sequential, concurrent). */
static void pair(unsigned blocks, uint64_t ns, uint64_t bytes, uint64_t* seq, uint64_t* conc) {
  CUstream s1 = stream(), s2 = stream();
  mark();
  cost_kernel(s1, blocks, ns, bytes);
  cost_kernel(s1, blocks, ns, bytes);
  *seq = until_done();
  mark();
  cost_kernel(s1, blocks, ns, bytes);
  cost_kernel(s2, blocks, ns, bytes);
  *conc = until_done();
}

Test(sim_device, two_kernels_that_fill_the_device_take_as_long_as_in_sequence) {
  start();
  uint64_t seq, conc;
  pair(2 * SMS, 50000, 0, &seq, &conc);   /* two rounds each: 100 us alone */
  double r = (double)conc / (double)seq;
  cr_assert(r >= 0.95 && r <= 1.05, "concurrent/sequential %.3f (%llu / %llu ns)", r,
            (unsigned long long)conc, (unsigned long long)seq);
}

Test(sim_device, two_half_device_kernels_run_side_by_side) {
  start();
  uint64_t seq, conc;
  pair(SMS / 2, 100000, 0, &seq, &conc);
  double r = (double)conc / (double)seq;
  cr_assert(r >= 0.48 && r <= 0.55, "concurrent/sequential %.3f", r);
}

Test(sim_device, with_per_stream_clocks_everything_overlaps) {
  setenv("SIMCU_DEVICE_MODEL", "streams", 1);
  start();
  uint64_t seq, conc;
  /* The legacy clocks: free concurrency (and no cost hooks: 169 us each by threads). */
  pair(20 * SMS, 50000, 0, &seq, &conc);
  double r = (double)conc / (double)seq;
  cr_assert(r < 0.55, "concurrent/sequential %.3f", r);
}

/* pytorch/pytorch#143988: a persistent matmul (one block per SM) beside a
 * kernel on ~10% of the SMs runs in two waves and takes about twice as
 * long; asking for fewer blocks (the SM-count target, pytorch#144974) lets
 * both run in one wave at ~10% cost. */
static uint64_t persistent_beside(unsigned blocks, uint64_t ns) {
  CUstream co = stream(), s = stream();
  CUevent a, b;
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  cost_kernel(co, 14, 2000000, 0);   /* 2 ms on 14 SMs, like NCCL's channels */
  OK(cuEventRecord(a, s));
  cost_kernel(s, blocks, ns, 0);
  OK(cuEventRecord(b, s));
  return between(a, b) - D_LAUNCH - D_DEVICE_KERNEL;
}

Test(sim_device, a_persistent_kernel_loses_a_wave_beside_a_co_runner) {
  start();
  const uint64_t alone = 100000;
  uint64_t got = persistent_beside(SMS, alone);
  double r = (double)got / (double)alone;
  cr_assert(r >= 1.9 && r <= 2.1, "persistent kernel beside a co-runner: %.3fx", r);
}

Test(sim_device, fewer_blocks_keep_a_persistent_kernel_in_one_wave) {
  start();
  const uint64_t alone = 100000;
  unsigned target = SMS - 14;
  uint64_t got = persistent_beside(target, (alone * SMS + target - 1) / target);
  double r = (double)got / (double)alone;
  cr_assert(r >= 1.05 && r <= 1.2, "with %u blocks: %.3fx", target, r);
}

/* ---- SIMCU_TIMELINE ---- */

Test(sim_device, the_timeline_has_each_kernels_span) {
  char path[] = "/tmp/sim_timeline_XXXXXX";
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  close(fd);
  setenv("SIMCU_TIMELINE", path, 1);
  start();
  /* Half the device each on two streams: they overlap, 10 us a block. */
  CUstream s1 = stream(), s2 = stream();
  cost_kernel(s1, SMS / 2, 10000, 0);
  cost_kernel(s2, SMS / 2, 10000, 0);
  OK(cuCtxSynchronize());
  FILE* f = fopen(path, "r");
  cr_assert(f != NULL);
  unsigned long long st[2], ready[2], end[2], blocks[2];
  int graph[2];
  char name[2][64];
  for (int i = 0; i < 2; i++)
    cr_assert_eq(fscanf(f, "%llu %llu %llu %llu %d %63s", &st[i], &ready[i], &end[i], &blocks[i],
                        &graph[i], name[i]),
                 6, "kernel %d has no line of 6 fields", i);
  fclose(f);
  unlink(path);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(blocks[i], SMS / 2);
    cr_assert_eq(graph[i], 0);
    cr_assert_str_eq(name[i], "k_cost");
    cr_assert_eq(end[i] - ready[i], D_DEVICE_KERNEL + 10000, "kernel %d: %llu ns", i, end[i] - ready[i]);
  }
  cr_assert_neq(st[0], st[1], "two streams, one id");
  cr_assert(ready[1] < end[0], "half-device kernels on two streams did not overlap");
}

/* ---- Memory bandwidth ---- */

Test(sim_device, a_bandwidth_bound_pair_takes_as_long_as_in_sequence) {
  start();
  /* Half the device each, but each alone moves bytes at the full bandwidth. */
  uint64_t ns = 20000, bytes = (uint64_t)D_DEVICE_MEM_BYTES_PER_NS * ns;
  uint64_t seq, conc;
  pair(SMS / 2, ns, bytes, &seq, &conc);
  double r = (double)conc / (double)seq;
  cr_assert(r >= 0.95 && r <= 1.05, "bandwidth-bound pair: concurrent/sequential %.3f", r);
  /* The same slots without the traffic run side by side. */
  pair(SMS / 2, 5 * ns, 0, &seq, &conc);
  r = (double)conc / (double)seq;
  cr_assert(r <= 0.55, "compute-bound pair: concurrent/sequential %.3f", r);
}

Test(sim_device, a_kernel_alone_is_never_slowed_by_its_own_traffic) {
  start();
  CUstream s = stream();
  /* Asks for 10 us per block but moves 2 s worth of bytes... */
  mark();
  cost_kernel(s, SMS, 10000, (uint64_t)D_DEVICE_MEM_BYTES_PER_NS * 2000000);
  uint64_t got = until_done();
  /* ...so it takes the bytes' time at the full bandwidth, as one round. */
  cr_assert_eq(got, D_LAUNCH + D_SUBMIT_LATENCY + D_DEVICE_KERNEL + 2000000 + D_SYNC);
}

/* ---- Graphs ---- */

/* A graph of n cost kernels of `blocks` blocks each, chained or not. */
static CUgraphExec graph_of(int n, unsigned blocks, uint64_t ns, int chain) {
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUgraphNode prev = NULL, node;
  uint64_t bytes = 0;
  void* args[] = {&ns, &bytes};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_cost, .gridDimX = blocks, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 1024, .blockDimY = 1, .blockDimZ = 1,
                               .sharedMemBytes = BIG_SMEM, .kernelParams = args};
  for (int i = 0; i < n; i++) {
    OK(cuGraphAddKernelNode(&node, g, chain && prev ? &prev : NULL, chain && prev ? 1 : 0, &p));
    prev = node;
  }
  CUgraphExec x;
  OK(cuGraphInstantiate(&x, g, 0));
  return x;
}

static uint64_t launch_time(CUgraphExec x) {
  CUstream s = stream();
  OK(cuStreamSynchronize(s));
  uint64_t t0 = sim->host_ns();
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  return sim->host_ns() - t0;
}

Test(sim_device, graph_nodes_without_an_edge_run_concurrently) {
  start();
  /* Four quarter-device nodes of 100 us. */
  uint64_t branches = launch_time(graph_of(4, SMS / 4, 100000, 0));
  uint64_t chain = launch_time(graph_of(4, SMS / 4, 100000, 1));
  uint64_t fixed = D_GRAPH_LAUNCH + D_SUBMIT_LATENCY + D_SYNC;
  cr_assert_eq(chain, fixed + 4 * (D_DEVICE_GRAPH_KERNEL + 100000));
  cr_assert_eq(branches, fixed + D_DEVICE_GRAPH_KERNEL + 100000);
  double r = (double)(branches - fixed) / (double)(chain - fixed);
  cr_assert(r >= 0.25 && r <= 0.35, "quarter-device quad: branches/chain %.3f", r);
}

Test(sim_device, a_stream_after_a_graph_waits_for_all_its_branches) {
  start();
  /* Branch 0 is short, branch 1 long: the stream's next op and a sync
   * follow the long one, whatever order the nodes were queued in. */
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  uint64_t ns_long = 300000, ns_short = 1000, bytes = 0;
  void* a_long[] = {&ns_long, &bytes};
  void* a_short[] = {&ns_short, &bytes};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_cost, .gridDimX = 4, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 1024, .blockDimY = 1, .blockDimZ = 1,
                               .sharedMemBytes = BIG_SMEM};
  CUgraphNode n1, n2;
  p.kernelParams = a_long;
  OK(cuGraphAddKernelNode(&n1, g, NULL, 0, &p));
  p.kernelParams = a_short;
  OK(cuGraphAddKernelNode(&n2, g, NULL, 0, &p));
  CUgraphExec x;
  OK(cuGraphInstantiate(&x, g, 0));
  uint64_t got = launch_time(x);
  cr_assert_eq(got, D_GRAPH_LAUNCH + D_SUBMIT_LATENCY + D_DEVICE_GRAPH_KERNEL + ns_long + D_SYNC);
}

Test(sim_device, with_per_stream_clocks_graph_nodes_run_back_to_back) {
  setenv("SIMCU_DEVICE_MODEL", "streams", 1);
  start();
  uint64_t branches = launch_time(graph_of(4, SMS / 4, 100000, 0));
  uint64_t fixed = D_GRAPH_LAUNCH + D_SUBMIT_LATENCY + D_SYNC;
  cr_assert_eq(branches, fixed + 4 * legacy_ns(SMS / 4, 1024, 1));   /* no cost hooks either */
}

/* ---- Adversarial orders ---- */

/* A graph computing y = x + 1 after x = 41, with or without the edge that
 * orders them, plus an unrelated node; returns y after one launch. */
static int missed_dependence_result(int with_edge) {
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 3 * sizeof(int)));
  OK(cuMemsetD32(d, 0, 3));
  CUdeviceptr x = d, y = d + sizeof(int), z = d + 2 * sizeof(int);
  CUgraph g;
  OK(cuGraphCreate(&g, 0));
  CUdeviceptr none = 0;
  unsigned v41 = 41, v1 = 1, v7 = 7;
  void* w_args[] = {&none, &x, &v41};
  void* r_args[] = {&x, &y, &v1};
  void* u_args[] = {&none, &z, &v7};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_op, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1};
  CUgraphNode writer, reader, other;
  p.kernelParams = w_args;
  OK(cuGraphAddKernelNode(&writer, g, NULL, 0, &p));
  p.kernelParams = u_args;
  OK(cuGraphAddKernelNode(&other, g, NULL, 0, &p));
  p.kernelParams = r_args;
  OK(cuGraphAddKernelNode(&reader, g, with_edge ? &writer : NULL, with_edge ? 1 : 0, &p));
  CUgraphExec ex;
  OK(cuGraphInstantiate(&ex, g, 0));
  OK(cuGraphLaunch(ex, NULL));
  int out[3];
  OK(cuMemcpyDtoH(out, d, sizeof(out)));
  cr_assert_eq(out[0], 41);
  cr_assert_eq(out[2], 7);
  return out[1];
}

Test(sim_device, the_default_order_runs_nodes_by_creation) {
  start();
  cr_assert_eq(missed_dependence_result(0), 42);   /* correct by luck */
  cr_assert_eq(missed_dependence_result(1), 42);
}

Test(sim_device, a_reversed_order_catches_a_missed_dependence) {
  setenv("SIMCU_GRAPH_ORDER", "reverse", 1);
  start();
  cr_assert_eq(missed_dependence_result(0), 1, "the reader ran first: it saw x = 0");
  cr_assert_eq(missed_dependence_result(1), 42, "an edge is always kept");
}

/* Shuffled orders: over a few seeds, some run the reader first. */
Test(sim_device, shuffled_orders_catch_a_missed_dependence) {
  int wrong = 0, right = 0;
  for (int seed = 1; seed <= 8; seed++) {
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
      char v[32];
      snprintf(v, sizeof(v), "shuffle:%d", seed);
      setenv("SIMCU_GRAPH_ORDER", v, 1);
      start();
      int edge_ok = missed_dependence_result(1) == 42;
      _exit(edge_ok ? (missed_dependence_result(0) == 42 ? 10 : 11) : 12);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 12, "seed %d broke an edge", seed);
    if (WEXITSTATUS(st) == 10)
      right++;
    else if (WEXITSTATUS(st) == 11)
      wrong++;
  }
  cr_assert_gt(wrong, 0, "no seed ran the reader before the writer");
  cr_assert_gt(right, 0, "every seed ran the reader first: not a shuffle");
}

Test(sim_device, node_times_do_not_depend_on_the_order_bodies_run_in) {
  uint64_t t[2];
  for (int rev = 0; rev < 2; rev++) {
    fflush(NULL);
    int fd[2];
    cr_assert_eq(pipe(fd), 0);
    pid_t pid = fork();
    if (pid == 0) {
      if (rev)
        setenv("SIMCU_GRAPH_ORDER", "reverse", 1);
      start();
      /* Two different branches: a long one and a short one, then a join. */
      uint64_t v = launch_time(graph_of(3, SMS / 2, 100000, 0)) +
                   launch_time(graph_of(5, SMS / 3, 70000, 0));
      ssize_t w = write(fd[1], &v, sizeof(v));
      _exit(w == (ssize_t)sizeof(v) ? 0 : 1);
    }
    close(fd[1]);
    cr_assert_eq(read(fd[0], &t[rev], sizeof(t[rev])), (ssize_t)sizeof(t[rev]));
    close(fd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  cr_assert_eq(t[0], t[1]);
}

/* ---- Options and updates ---- */

Test(sim_device, bad_option_values_are_reported_and_the_defaults_apply) {
  setenv("SIMCU_DEVICE_MODEL", "gpu", 1);
  setenv("SIMCU_GRAPH_ORDER", "shuffle:x", 1);
  int tok = errcap_begin();
  start();
  uint64_t seq, conc;
  pair(2 * SMS, 50000, 0, &seq, &conc);
  int y = missed_dependence_result(0);
  char* err = errcap_end(tok);
  cr_assert_eq(errcap_count(err, "SIMCU_DEVICE_MODEL=gpu"), 1, "%s", err);
  cr_assert_eq(errcap_count(err, "SIMCU_GRAPH_ORDER=shuffle:x"), 1, "%s", err);
  free(err);
  cr_assert_geq((double)conc / (double)seq, 0.95, "the default model (sm) applies");
  cr_assert_eq(y, 42, "the default order applies");
}

Test(sim_device, an_update_with_other_edges_is_refused) {
  start();
  CUgraph g1, g2;
  OK(cuGraphCreate(&g1, 0));
  OK(cuGraphCreate(&g2, 0));
  int n = 0;
  void* args[] = {&n};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_idle, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 32, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = args};
  CUgraphNode a, b, c;
  /* g1: a -> c, b;  g2: a, b -> c (same node count, fan-in and types). */
  OK(cuGraphAddKernelNode(&a, g1, NULL, 0, &p));
  OK(cuGraphAddKernelNode(&b, g1, NULL, 0, &p));
  OK(cuGraphAddKernelNode(&c, g1, &a, 1, &p));
  OK(cuGraphAddKernelNode(&a, g2, NULL, 0, &p));
  OK(cuGraphAddKernelNode(&b, g2, NULL, 0, &p));
  OK(cuGraphAddKernelNode(&c, g2, &b, 1, &p));
  CUgraphExec x;
  OK(cuGraphInstantiate(&x, g1, 0));
  CUgraphExecUpdateResultInfo info;
  cr_assert_eq(cuGraphExecUpdate(x, g2, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_TOPOLOGY_CHANGED);
  OK(cuGraphExecUpdate(x, g1, &info));
}

/* Tests of the sim's simulated time (sim/cost.h, sim/README.md "Simulated
 * time"): host clocks charged per call, kernels that start no earlier than
 * their submission, syncs and queries that follow the device, graphs against
 * eager launches, cost files, new threads, and determinism across runs and
 * across SIMCU_SYNC (the last two run tests/sim/time_prog as a child).
 *
 * Expected times are computed from the cost rows of cost.h by name, so the
 * tests check the rules, not particular numbers. Each test runs in its own
 * process (Criterion forks), so SIMCU_COSTS / SIMCU_HOST_NS set before the
 * first driver call apply to that test only. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "drv_setup.h"
#include "errcap.h"
#include "simcu.h"
#include "time_test.h"

/* Declared by cuda.h only when the whole program opts in to per-thread streams. */
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned smem, CUstream s, void** params,
                             void** extra);


static CUfunction f_idle;
static const simcu_private_t* sim;

static void start(void) {
  OK(sim_test_start(ptx, "k_idle", &f_idle, NULL));
  const void* t = NULL;
  CUuuid id = {SIMCU_PRIVATE_UUID};
  OK(cuGetExportTable(&t, &id));
  sim = t;
  cr_assert_geq(sim->size, sizeof(simcu_private_t));
}

/* A kernel of `blocks` x 128 threads: device time (eager) D_DEVICE_KERNEL + threads / 16. */
static CUresult launch(CUstream s, unsigned blocks) {
  int n = 0;
  void* args[] = {&n};
  return cuLaunchKernel(f_idle, blocks, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

static uint64_t kernel_ns(unsigned blocks, int graph) {
  return (uint64_t)(graph ? D_DEVICE_GRAPH_KERNEL : D_DEVICE_KERNEL) +
         (uint64_t)blocks * 128 / D_DEVICE_THREADS_PER_NS;
}

/* A cost file holding text, named by SIMCU_COSTS for this test's process. */
static void use_cost_file(char* path, const char* text) {
  cr_assert_eq(sim_test_temp_file(path, text), 0);
  setenv("SIMCU_COSTS", path, 1);
}

Test(sim_time, each_call_charges_its_class_cost) {
  start();
  CUstream s;
  CUevent timed, untimed;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&timed, 0));
  OK(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING));
  uint64_t t = sim->host_ns();
  OK(launch(s, 1));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_LAUNCH);
  t = sim->host_ns();
  OK(cuEventRecord(timed, s));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_EVENT_RECORD);
  t = sim->host_ns();
  OK(cuEventRecord(untimed, s));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_EVENT_RECORD_NOTIMING, "timing-disabled events are cheaper");
  t = sim->host_ns();
  OK(cuStreamWaitEvent(s, untimed, 0));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_WAIT_EVENT);
  int v;
  t = sim->host_ns();
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 0));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_CALL);

  /* A graph: instantiation per node, launch, and node updates. */
  CUgraph g;
  CUgraphExec x;
  CUgraphNode nodes[3];
  int n = 0;
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_idle, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = (void*[]){&n}};
  OK(cuGraphCreate(&g, 0));
  for (int i = 0; i < 3; i++)
    OK(cuGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : NULL, i ? 1 : 0, &p));
  t = sim->host_ns();
  OK(cuGraphInstantiate(&x, g, 0));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_INSTANTIATE + 3 * (uint64_t)D_INSTANTIATE_NODE);
  t = sim->host_ns();
  OK(cuGraphLaunch(x, s));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_GRAPH_LAUNCH + 3 * (uint64_t)D_GRAPH_LAUNCH_NODE);
  t = sim->host_ns();
  OK(cuGraphExecKernelNodeSetParams(x, nodes[1], &p));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_GRAPH_EXEC_SET_PARAMS);
  OK(cuStreamSynchronize(s));
}

Test(sim_time, a_sync_waits_for_the_device) {
  start();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const unsigned blocks = 8192;   /* 1 Mi threads: ~67 us, far longer than any host cost */
  uint64_t t0 = sim->host_ns();
  OK(launch(s, blocks));
  /* The kernel starts at its submission plus the latency, and the host wakes
   * one sync cost after it ends. */
  uint64_t end = t0 + D_LAUNCH + D_SUBMIT_LATENCY + kernel_ns(blocks, 0);
  OK(cuStreamSynchronize(s));
  cr_assert_eq(sim->host_ns(), end + D_SYNC);

  /* Already idle: only the call's cost. */
  uint64_t t1 = sim->host_ns();
  OK(cuStreamSynchronize(s));
  cr_assert_eq(sim->host_ns(), t1 + D_SYNC);

  /* A synchronous copy waits for the work before it in the stream. */
  CUdeviceptr d;
  int h = 0;
  OK(cuMemAlloc(&d, sizeof(int)));
  OK(launch(NULL, blocks));
  uint64_t t2 = sim->host_ns();
  OK(cuMemcpyDtoH(&h, d, sizeof(h)));
  uint64_t kernel_end = t2 + D_SUBMIT_LATENCY + kernel_ns(blocks, 0);   /* t2 is after its launch */
  cr_assert_eq(sim->host_ns(), kernel_end + D_DEVICE_COPY + sizeof(h) / D_DEVICE_COPY_BYTES_PER_NS +
                                   D_SYNC);
}

Test(sim_time, kernels_do_not_start_before_their_submission) {
  start();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  /* Launch-bound: each tiny kernel is shorter than a launch, so the device
   * idles between kernels and the last one ends one kernel after its own
   * submission, not after the sum of the kernels' durations. */
  cr_assert_lt(kernel_ns(1, 0), (uint64_t)D_LAUNCH, "the premise of this test");
  const int n = 50;
  uint64_t t0 = sim->host_ns();
  for (int i = 0; i < n; i++)
    OK(launch(s, 1));
  uint64_t last_submit = t0 + (uint64_t)n * D_LAUNCH;
  OK(cuStreamSynchronize(s));
  cr_assert_eq(sim->host_ns(), last_submit + D_SUBMIT_LATENCY + kernel_ns(1, 0) + D_SYNC);

  /* An event records when the device reached it: never before its submission.
   * a is reached at once (idle stream); the kernel starts one launch later;
   * b after the kernel and after its own submission, whichever is later. */
  CUevent a, b;
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  OK(cuEventRecord(a, s));
  OK(launch(s, 1));
  OK(cuEventRecord(b, s));
  OK(cuEventSynchronize(b));
  float ms;
  OK(cuEventElapsedTime(&ms, a, b));
  uint64_t b_after = kernel_ns(1, 0) > D_EVENT_RECORD ? kernel_ns(1, 0) : D_EVENT_RECORD;
  cr_assert_float_eq(ms, (double)(D_LAUNCH + b_after) / 1e6, 1e-9);
}

/* Host cost and end-to-end time of n kernels of `blocks` blocks, eager or as
 * one launched graph (instantiated beforehand, outside the measurement). */
static void run_n(int graph, int n, unsigned blocks, uint64_t* host, uint64_t* end) {
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUgraphExec x = NULL;
  if (graph) {
    CUgraph g;
    OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (int i = 0; i < n; i++)
      OK(launch(s, blocks));
    OK(cuStreamEndCapture(s, &g));
    OK(cuGraphInstantiate(&x, g, 0));
  }
  OK(cuStreamSynchronize(s));
  uint64_t t0 = sim->host_ns();
  if (graph) {
    OK(cuGraphLaunch(x, s));
  } else {
    for (int i = 0; i < n; i++)
      OK(launch(s, blocks));
  }
  *host = sim->host_ns() - t0;
  OK(cuStreamSynchronize(s));
  *end = sim->host_ns() - t0;
}

Test(sim_time, a_graph_saves_host_and_device_time_when_launch_bound) {
  start();
  uint64_t eager_host, eager_end, graph_host, graph_end;
  run_n(0, 64, 1, &eager_host, &eager_end);
  run_n(1, 64, 1, &graph_host, &graph_end);
  cr_assert_eq(eager_host, 64 * (uint64_t)D_LAUNCH);
  cr_assert_eq(graph_host, (uint64_t)D_GRAPH_LAUNCH + 64 * (uint64_t)D_GRAPH_LAUNCH_NODE);
  cr_assert_lt(graph_host, eager_host);
  cr_assert_lt(graph_end, eager_end, "graph %llu ns, eager %llu ns", (unsigned long long)graph_end,
               (unsigned long long)eager_end);
  /* The graph's nodes run back to back once it is submitted. */
  cr_assert_eq(graph_end, graph_host + D_SUBMIT_LATENCY + 64 * kernel_ns(1, 1) + D_SYNC);
}

Test(sim_time, a_graph_costs_no_more_when_kernel_bound) {
  start();
  uint64_t eager_host, eager_end, graph_host, graph_end;
  const unsigned blocks = 4096;   /* 512 Ki threads per kernel: ~34 us each */
  run_n(0, 8, blocks, &eager_host, &eager_end);
  run_n(1, 8, blocks, &graph_host, &graph_end);
  cr_assert_leq(graph_end, eager_end);
  /* Kernel-bound: eager ends one latency after the first launch plus the
   * kernels back to back; the graph only saves the device-side overhead. */
  cr_assert_eq(eager_end, D_LAUNCH + D_SUBMIT_LATENCY + 8 * kernel_ns(blocks, 0) + D_SYNC);
  cr_assert_eq(graph_end, graph_host + D_SUBMIT_LATENCY + 8 * kernel_ns(blocks, 1) + D_SYNC);
}

Test(sim_time, queries_answer_by_simulated_time) {
  start();
  CUstream s;
  CUevent e;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  const unsigned blocks = 8192;
  uint64_t t0 = sim->host_ns();
  OK(launch(s, blocks));
  OK(cuEventRecord(e, s));
  uint64_t end = t0 + D_LAUNCH + D_SUBMIT_LATENCY + kernel_ns(blocks, 0);
  /* The kernel has run (the query waits for it), but not yet in simulated time. */
  cr_assert_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  cr_assert_eq(cuEventQuery(e), CUDA_ERROR_NOT_READY);
  long polls = 0;
  while (cuStreamQuery(s) == CUDA_ERROR_NOT_READY)
    polls++;
  /* Each poll costs one query; the first poll made at or after the end
   * answers ready, and the host clock is then max(clock, end) + the query. */
  uint64_t now = sim->host_ns();
  cr_assert_geq(now - D_QUERY, end);
  cr_assert_lt(now - 2 * D_QUERY, end, "ready one query too late");
  cr_assert_gt(polls, 10);
  OK(cuEventQuery(e));
}

Test(sim_time, host_ns_is_charged_only_by_the_program_side) {
  setenv("SIMCU_HOST_NS", "7000", 1);
  start();
  /* A driver launch is not where a program's own per-op work is charged: an
   * interposer that holds launches never calls it (see test_sim_runtime). */
  uint64_t t = sim->host_ns();
  OK(launch(NULL, 1));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_LAUNCH);
  t = sim->host_ns();
  sim->host_work(SIMCU_WORK_OP);
  cr_assert_eq(sim->host_ns() - t, 7000);
}

Test(sim_time, a_cost_file_overrides_rows_and_entry_points) {
  char path[] = "/tmp/simcu-costs-XXXXXX";
  use_cost_file(path, "# measured on some GPU\n"
                      "launch 1234\n"
                      "cuLaunchKernel_ptsz   777   # one entry point of the launch class\n"
                      "\n"
                      "device_kernel 3000\n"
                      "submit_latency 0\n");
  start();
  unlink(path);
  uint64_t t = sim->host_ns();
  OK(launch(NULL, 1));
  cr_assert_eq(sim->host_ns() - t, 1234);
  t = sim->host_ns();
  int n = 0;
  OK(cuLaunchKernel_ptsz(f_idle, 1, 1, 1, 128, 1, 1, 0, NULL, (void*[]){&n}, NULL));
  cr_assert_eq(sim->host_ns() - t, 777);
  t = sim->host_ns();
  OK(cuLaunchCooperativeKernel(f_idle, 1, 1, 1, 128, 1, 1, 0, NULL, (void*[]){&n}));
  cr_assert_eq(sim->host_ns() - t, 1234, "the class row applies to the rest of the class");
  OK(cuCtxSynchronize());
  t = sim->host_ns();
  OK(launch(NULL, 1));
  OK(cuCtxSynchronize());
  cr_assert_eq(sim->host_ns() - t, 1234 + 3000 + 128 / D_DEVICE_THREADS_PER_NS + D_SYNC);
}

static void read_file(const char* path, char* buf, size_t n) {
  FILE* f = fopen(path, "r");
  cr_assert_not_null(f);
  size_t got = fread(buf, 1, n - 1, f);
  buf[got] = '\0';
  fclose(f);
}

Test(sim_time, a_bad_cost_file_is_rejected_line_by_line) {
  char path[] = "/tmp/simcu-costs-XXXXXX";
  use_cost_file(path, "launch 1234\n"
                      "lanch 10\n"
                      "sync -5\n"
                      "query 12abc\n"
                      "device_threads_per_ns 0\n"
                      "memcpy\n"
                      "memset 1 2\n");
  int cap = errcap_begin();
  cr_assert_geq(cap, 0);
  start();
  char* msg = errcap_end(cap);
  char want[6][512];
  snprintf(want[0], sizeof(want[0]), "SIMCU_COSTS=%s:2: unknown cost \"lanch\"", path);
  snprintf(want[1], sizeof(want[1]), "SIMCU_COSTS=%s:3: \"-5\" is not a whole number", path);
  snprintf(want[2], sizeof(want[2]), "SIMCU_COSTS=%s:4: \"12abc\" is not a whole number", path);
  snprintf(want[3], sizeof(want[3]), "SIMCU_COSTS=%s:5: device_threads_per_ns must be at least 1", path);
  snprintf(want[4], sizeof(want[4]), "SIMCU_COSTS=%s:6: want \"name ns\", got \"memcpy\"", path);
  snprintf(want[5], sizeof(want[5]), "SIMCU_COSTS=%s:7: want \"name ns\", got \"memset 1 2\"", path);
  for (int i = 0; i < 6; i++)
    cr_assert_not_null(strstr(msg, want[i]), "missing \"%s\" in:\n%s", want[i], msg);
  cr_assert_not_null(strstr(msg, "ignored (6 bad lines): the default costs apply"), "%s", msg);
  free(msg);
  unlink(path);
  /* The file's good line did not apply either: a half-read table would mislead. */
  uint64_t t = sim->host_ns();
  OK(launch(NULL, 1));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_LAUNCH);
}

Test(sim_time, a_missing_cost_file_is_reported) {
  setenv("SIMCU_COSTS", "/nonexistent/costs.txt", 1);
  int cap = errcap_begin();
  cr_assert_geq(cap, 0);
  start();
  char* msg = errcap_end(cap);
  cr_assert_not_null(strstr(msg, "SIMCU_COSTS=/nonexistent/costs.txt: cannot open"), "%s", msg);
  free(msg);
  uint64_t t = sim->host_ns();
  OK(launch(NULL, 1));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_LAUNCH);
}

static uint64_t thread_first;

static void* first_call(void* arg) {
  (void)arg;
  thread_first = sim->host_ns();
  return NULL;
}

Test(sim_time, a_new_thread_starts_at_the_latest_host_clock) {
  start();
  for (int i = 0; i < 10; i++)
    OK(launch(NULL, 1));
  uint64_t main_now = sim->host_ns();
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, first_call, NULL), 0);
  pthread_join(th, NULL);
  cr_assert_eq(thread_first, main_now);
  cr_assert_geq(sim->end_ns(), main_now);
}

/* A second thread that instantiates graphs (a background builder) charges
 * its own clock: the program's thread does not pay for the build, and
 * neither does a thread it creates later; the device's streams are shared by
 * both threads' work; and an executable can be used only from the moment its
 * build ended on the builder's clock. */
enum { BUILD_NODES = 4, LONG_BLOCKS = 65536 };
static CUgraph build_graph;
static CUgraphExec build_exec;
static CUstream build_stream;
static CUcontext build_ctx;
static uint64_t handoff_at, built_at, builder_after_launch;
static pthread_barrier_t build_bar;

static void* builder(void* arg) {
  (void)arg;
  pthread_barrier_wait(&build_bar);   /* A: the program has issued its kernel */
  sim->host_handoff(handoff_at);
  OK(cuCtxSetCurrent(build_ctx));
  OK(cuGraphInstantiate(&build_exec, build_graph, 0));
  built_at = sim->host_ns();
  OK(cuGraphLaunch(build_exec, build_stream));
  builder_after_launch = sim->host_ns();
  pthread_barrier_wait(&build_bar);   /* B */
  return NULL;
}

Test(sim_time, a_builder_thread_charges_its_own_clock) {
  start();
  OK(cuCtxGetCurrent(&build_ctx));
  OK(cuStreamCreate(&build_stream, CU_STREAM_NON_BLOCKING));
  int n = 0;
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_idle, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = (void*[]){&n}};
  CUgraphNode nodes[BUILD_NODES];
  OK(cuGraphCreate(&build_graph, 0));
  for (int i = 0; i < BUILD_NODES; i++)
    OK(cuGraphAddKernelNode(&nodes[i], build_graph, i ? &nodes[i - 1] : NULL, i ? 1 : 0, &p));
  pthread_barrier_init(&build_bar, NULL, 2);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, builder, NULL), 0);
  uint64_t t0 = sim->host_ns();
  handoff_at = t0;
  OK(launch(build_stream, LONG_BLOCKS));   /* ~524 us on the device */
  pthread_barrier_wait(&build_bar);        /* A */
  pthread_barrier_wait(&build_bar);        /* B: the builder has built and launched */
  pthread_join(th, NULL);

  /* The builder's clock: resumed at the handoff, then its own calls. */
  uint64_t build = (uint64_t)D_INSTANTIATE + BUILD_NODES * (uint64_t)D_INSTANTIATE_NODE;
  cr_assert_eq(built_at, t0 + D_CALL + build);
  cr_assert_eq(builder_after_launch, built_at + D_GRAPH_LAUNCH);
  /* The program's thread paid for its launch only. */
  cr_assert_eq(sim->host_ns(), t0 + D_LAUNCH, "the program's thread does not pay for the build");
  /* Nor does a thread it creates now: it starts at the program's clock. */
  pthread_t th2;
  cr_assert_eq(pthread_create(&th2, NULL, first_call, NULL), 0);
  pthread_join(th2, NULL);
  cr_assert_eq(thread_first, t0 + D_LAUNCH, "new threads do not start at a helper's clock");
  /* The executable exists from built_at on: using it earlier waits until then. */
  OK(cuGraphLaunch(build_exec, build_stream));
  cr_assert_eq(sim->host_ns(), built_at + D_GRAPH_LAUNCH);
  /* One device timeline: the builder's graph ran after the program's kernel
   * on their stream, and the program's second launch after that. */
  uint64_t kernel_end = t0 + D_LAUNCH + D_SUBMIT_LATENCY + kernel_ns(LONG_BLOCKS, 0);
  cr_assert_gt(kernel_end, builder_after_launch + D_SUBMIT_LATENCY, "the kernel is the longer");
  OK(cuStreamSynchronize(build_stream));
  cr_assert_eq(sim->host_ns(), kernel_end + 2 * BUILD_NODES * kernel_ns(1, 1) + D_SYNC);
  cr_assert_geq(sim->end_ns(), sim->host_ns());
}

/* A helper's clock counts in the run's end even when no other thread waits
 * for it: a process that ends while its builder still builds lasts as long. */
static void* late_builder(void* arg) {
  (void)arg;
  sim->host_handoff(handoff_at);
  OK(cuCtxSetCurrent(build_ctx));
  OK(cuGraphInstantiate(&build_exec, build_graph, 0));
  built_at = sim->host_ns();
  return NULL;
}

Test(sim_time, a_helper_clock_counts_in_the_end_time) {
  start();
  OK(cuCtxGetCurrent(&build_ctx));
  int n = 0;
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_idle, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = (void*[]){&n}};
  CUgraphNode node;
  OK(cuGraphCreate(&build_graph, 0));
  OK(cuGraphAddKernelNode(&node, build_graph, NULL, 0, &p));
  handoff_at = sim->host_ns() + 1000000;   /* handed over 1 ms from now */
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, late_builder, NULL), 0);
  pthread_join(th, NULL);
  cr_assert_eq(built_at, handoff_at + D_CALL + D_INSTANTIATE + D_INSTANTIATE_NODE);
  cr_assert_lt(sim->host_ns(), handoff_at);
  cr_assert_eq(sim->end_ns(), built_at);
}

/* ---- Copies, stream memory operations and entry points not served ---- */

/* A 3-D copy is one op whose device time covers every byte of the box, and
 * stream memory operations are costed as the submissions they are. */
Test(sim_time, a_3d_copy_is_one_copy_of_all_its_bytes) {
  start();
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  const size_t w = 2500, h = 4, d = 5;
  CUdeviceptr src, dst, flag;
  OK(cuMemAlloc(&src, w * h * d));
  OK(cuMemAlloc(&dst, w * h * d));
  OK(cuMemAlloc(&flag, 4));
  CUevent e0, e1;
  OK(cuEventCreate(&e0, 0));
  OK(cuEventCreate(&e1, 0));
  /* Behind a long kernel the copy starts right after e0, not at its submission. */
  OK(launch(s, 8192));
  OK(cuEventRecord(e0, s));
  CUDA_MEMCPY3D p = {.srcMemoryType = CU_MEMORYTYPE_DEVICE, .srcDevice = src, .srcPitch = w,
                     .srcHeight = h, .dstMemoryType = CU_MEMORYTYPE_DEVICE, .dstDevice = dst,
                     .dstPitch = w, .dstHeight = h, .WidthInBytes = w, .Height = h, .Depth = d};
  uint64_t t = sim->host_ns();
  OK(cuMemcpy3DAsync(&p, s));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_MEMCPY);
  OK(cuEventRecord(e1, s));
  t = sim->host_ns();
  OK(cuStreamWriteValue32(s, flag, 1, CU_STREAM_WRITE_VALUE_DEFAULT));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_LAUNCH);
  t = sim->host_ns();
  OK(cuStreamWaitValue32(s, flag, 1, CU_STREAM_WAIT_VALUE_EQ));
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_LAUNCH);
  OK(cuStreamSynchronize(s));
  float ms;
  OK(cuEventElapsedTime(&ms, e0, e1));
  double want_ns = D_DEVICE_COPY + (double)(w * h * d) / D_DEVICE_COPY_BYTES_PER_NS;
  cr_assert_float_eq(ms, want_ns / 1e6, 1e-7, "copy took %f ms, want %f", ms, want_ns / 1e6);
}

/* The generated stubs are entry points like the others: each call costs its
 * class row, and a cost file may name one. */
Test(sim_time, an_entry_point_the_sim_does_not_serve_is_costed_too) {
  char path[] = "/tmp/simcu-costs-XXXXXX";
  use_cost_file(path, "cuMipmappedArrayDestroy 4321\n");
  start();
  unlink(path);
  uint64_t t = sim->host_ns();
  cr_assert_eq(cuMipmappedArrayDestroy(NULL), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(sim->host_ns() - t, 4321);
  CUmipmappedArray a;
  CUDA_ARRAY3D_DESCRIPTOR desc = {16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0};
  t = sim->host_ns();
  cr_assert_eq(cuMipmappedArrayCreate(&a, &desc, 2), CUDA_ERROR_NOT_SUPPORTED);
  cr_assert_eq(sim->host_ns() - t, (uint64_t)D_CALL);
}

/* ---- Whole runs (tests/sim/time_prog) ---- */

/* Runs time_prog with env and returns sim_end_ns and sim_host_ns of its report. */
static void run_prog(const char* env, uint64_t* end, uint64_t* host) {
  char rpath[] = "/tmp/simcu-report-XXXXXX";
  int fd = mkstemp(rpath);
  cr_assert_geq(fd, 0);
  close(fd);
  char cmd[4096];
  snprintf(cmd, sizeof(cmd), "SIMCU_REPORT='%s' %s '%s'", rpath, env, getenv("TIME_PROG"));
  cr_assert_eq(system(cmd), 0, "%s failed", cmd);
  char rep[16384];
  read_file(rpath, rep, sizeof(rep));
  unlink(rpath);
  const char* e = strstr(rep, "\"sim_end_ns\":");
  const char* h = strstr(rep, "\"sim_host_ns\":");
  cr_assert(e != NULL && h != NULL, "%s", rep);
  *end = strtoull(e + strlen("\"sim_end_ns\":"), NULL, 10);
  *host = strtoull(h + strlen("\"sim_host_ns\":"), NULL, 10);
}

Test(sim_time, the_same_program_gives_the_same_times) {
  uint64_t e1, h1, e2, h2;
  run_prog("", &e1, &h1);
  run_prog("", &e2, &h2);
  cr_assert_eq(e1, e2);
  cr_assert_eq(h1, h2);
  cr_assert_gt(e1, h1, "the program waits for the device");
}

Test(sim_time, inline_mode_gives_the_same_times) {
  uint64_t e1, h1, e2, h2;
  run_prog("", &e1, &h1);
  run_prog("SIMCU_SYNC=1", &e2, &h2);
  cr_assert_eq(e1, e2, "async %llu ns, SIMCU_SYNC=1 %llu ns", (unsigned long long)e1,
               (unsigned long long)e2);
  cr_assert_eq(h1, h2);
}

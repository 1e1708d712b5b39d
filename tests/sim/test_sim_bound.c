/* Tests of the device's busy time and the lower bound LB in SIMCU_REPORT
 * (sim/bound.c, docs/sim.md "The lower bound"): a small program whose LB
 * is worked out by hand from the cost rows, stretch by stretch, run as a
 * forked child so that its exit report can be read.
 *
 * Expected values come from the rows of cost.h by name, so the test checks
 * the definition, not particular numbers. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sim_test.h"
#include "time_test.h"


#define HOST_NS 10000
#define LONG 65536   /* blocks of 128 threads: 524,288 ns of threads */

static uint64_t node_ns(uint64_t blocks) {
  return D_DEVICE_GRAPH_KERNEL + blocks * 128 / D_DEVICE_THREADS_PER_NS;
}

static uint64_t eager_ns(uint64_t blocks) {
  return D_DEVICE_KERNEL + blocks * 128 / D_DEVICE_THREADS_PER_NS;
}

static uint64_t max2(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

/* In the child: a failed call ends it with status 2. */
#define CK(call)                                                        \
  do {                                                                  \
    if ((call) != CUDA_SUCCESS) {                                       \
      fprintf(stderr, "%s:%d: %s failed\n", __FILE__, __LINE__, #call); \
      _exit(2);                                                         \
    }                                                                   \
  } while (0)

static CUfunction f;
static const simcu_private_t* sim;

static void kernel(CUstream s, unsigned blocks) {
  int n = 0;
  CK(cuLaunchKernel(f, blocks, 1, 1, 128, 1, 1, 0, s, (void*[]){&n}, NULL));
}

/* Stretch 1's three kernels, eagerly or as one launched graph. */
static void three_kernels(CUstream s, int as_graph) {
  if (!as_graph) {
    for (int i = 0; i < 3; i++)
      kernel(s, 1);
    return;
  }
  int n = 0;
  CUDA_KERNEL_NODE_PARAMS p = {.func = f, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 128, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = (void*[]){&n}};
  CUgraph g;
  CUgraphNode nodes[3];
  CUgraphExec x;
  CK(cuGraphCreate(&g, 0));
  for (int i = 0; i < 3; i++)
    CK(cuGraphAddKernelNode(&nodes[i], g, i ? &nodes[i - 1] : NULL, i ? 1 : 0, &p));
  CK(cuGraphInstantiate(&x, g, 0));
  CK(cuGraphLaunch(x, s));
}

/* The program; the comments give each stretch's max(host, device). */
static void program(int as_graph) {
  CK(sim_test_start(ptx, "k_idle", &f, NULL));
  const void* t = NULL;
  CUuuid id = {SIMCU_PRIVATE_UUID};
  CK(cuGetExportTable(&t, &id));
  sim = t;
  CUstream s, other, blocking;
  CUevent e, e2;
  CUdeviceptr d;
  int h;
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
  CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  CK(cuEventCreate(&e2, CU_EVENT_DISABLE_TIMING));
  CK(cuMemAlloc(&d, sizeof(int)));
  /* 1: host-bound: 3 ops of framework work, three short kernels. */
  for (int i = 0; i < 3; i++)
    sim->host_work(SIMCU_WORK_OP);
  three_kernels(s, as_graph);
  CK(cuStreamSynchronize(s));
  /* 2: host-bound again: a short kernel on s; other's long one is not awaited
   * (it may run on during later stretches: not counted anywhere). */
  sim->host_work(SIMCU_WORK_OP);
  kernel(s, 1);
  kernel(other, LONG);
  CK(cuStreamSynchronize(s));
  /* 3: a long kernel on a blocking stream, then a copy on the legacy stream,
   * which waits for it: a chain of both. */
  kernel(blocking, LONG);
  CK(cuMemcpyDtoH(&h, d, sizeof(h)));
  /* 4: across streams by an event: a long kernel on s, then one on other. */
  sim->host_work(SIMCU_WORK_OP);
  sim->host_work(SIMCU_WORK_OP);
  kernel(s, LONG);
  CK(cuEventRecord(e, s));
  CK(cuStreamWaitEvent(other, e, 0));
  kernel(other, 1);
  CK(cuEventRecord(e2, other));
  CK(cuEventSynchronize(e2));
  /* 5 (the last, ended by the exit): framework work, one kernel. */
  sim->host_work(SIMCU_WORK_OP);
  kernel(other, 1);
}

typedef struct report_s {
  uint64_t end, busy, lb, lb_host, lb_dev, stretches;
} report_t;

static uint64_t field(const char* rep, const char* name) {
  char key[64];
  snprintf(key, sizeof(key), "\"%s\":", name);
  const char* p = strstr(rep, key);
  cr_assert_not_null(p, "no %s in %s", name, rep);
  return strtoull(p + strlen(key), NULL, 10);
}

static report_t run(int as_graph) {
  char rpath[] = "/tmp/simcu-bound-XXXXXX";
  int fd = mkstemp(rpath);
  cr_assert_geq(fd, 0);
  close(fd);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    setenv("SIMCU_HOST_NS", "10000", 1);
    setenv("SIMCU_REPORT", rpath, 1);
    unsetenv("SIMCU_COSTS");
    program(as_graph);
    exit(0);   /* the sim's destructor writes the report */
  }
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the program failed");
  char rep[16384];
  FILE* fp = fopen(rpath, "r");
  cr_assert_not_null(fp);
  size_t got = fread(rep, 1, sizeof(rep) - 1, fp);
  rep[got] = '\0';
  fclose(fp);
  unlink(rpath);
  report_t r = {field(rep, "sim_end_ns"), field(rep, "device_busy_ns"),
                field(rep, "lower_bound_ns"), field(rep, "lower_bound_host_ns"),
                field(rep, "lower_bound_device_ns"), field(rep, "lower_bound_stretches")};
  return r;
}

static const uint64_t copy_ns = D_DEVICE_COPY + sizeof(int) / D_DEVICE_COPY_BYTES_PER_NS;

Test(sim_bound, the_lower_bound_of_a_small_program_by_hand) {
  /* Worked out by hand with each stream's ops at their own durations: the
   * per-stream model (under the SM model the other stream's kernel shares
   * the SMs and stretches what it overlaps). */
  setenv("SIMCU_DEVICE_MODEL", "streams", 1);
  report_t r = run(0);
  uint64_t s1 = max2(3 * HOST_NS, 3 * node_ns(1));
  uint64_t s2 = max2(HOST_NS, node_ns(1));   /* other's kernel is not awaited */
  uint64_t s3 = node_ns(LONG) + copy_ns;
  uint64_t s4 = max2(2 * HOST_NS, node_ns(LONG) + node_ns(1));
  uint64_t s5 = max2(HOST_NS, node_ns(1));
  cr_assert_eq(r.stretches, 5);
  cr_assert_eq(r.lb, s1 + s2 + s3 + s4 + s5, "LB %llu, by hand %llu", (unsigned long long)r.lb,
               (unsigned long long)(s1 + s2 + s3 + s4 + s5));
  cr_assert_eq(r.lb_host, 7 * HOST_NS);
  cr_assert_eq(r.lb_dev, 3 * node_ns(1) + node_ns(1) + s3 + (node_ns(LONG) + node_ns(1)) +
                             node_ns(1));
  cr_assert_leq(r.lb, r.end, "a lower bound of the run");
  /* Busy: every op as it ran, eager kernels at their eager cost. */
  cr_assert_eq(r.busy, 3 * eager_ns(1) + eager_ns(1) + eager_ns(LONG) + eager_ns(LONG) +
                           copy_ns + eager_ns(LONG) + eager_ns(1) + eager_ns(1));
}

/* Kernels are charged as graph nodes however they ran, so a run whose first
 * stretch launches a graph has the same LB; it runs them as nodes (busy). */
Test(sim_bound, the_same_bound_whether_kernels_run_eagerly_or_in_a_graph) {
  report_t eager = run(0), graph = run(1);
  cr_assert_eq(graph.lb, eager.lb);
  cr_assert_eq(graph.stretches, eager.stretches);
  cr_assert_eq(eager.busy - graph.busy, 3 * (eager_ns(1) - node_ns(1)));
  cr_assert_neq(graph.end, eager.end);
}

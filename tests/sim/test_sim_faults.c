/* Tests of device faults on the sim (sim/simcu.h SIMCU_FAULT): a kernel body
 * raises a fault, which is reported asynchronously and is sticky, as on a
 * GPU: the launch succeeds, syncs return the fault, the faulting kernel's
 * remaining blocks and all later work are not run, and every later call that
 * uses the context returns it. Work is held back behind a gate (a host
 * function blocked on a semaphore) so that everything is queued before the
 * fault happens, which makes "not run" deterministic. The sim's device memory
 * is host-addressable, so results are read without a copy (which would fail). */
#include <cuda.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "drv_setup.h"
#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_mark(.param .u64 a, .param .u32 at, .param .u32 code)\n{\n ret;\n}\n";

/* a[blockIdx.x] = 1, except that block `at` raises `code` (when not 0). */
SIMCU_PARAMS(k_mark, 8, 4, 4);
SIMCU_KERNEL(k_mark) {
  int* a = SIMCU_ARG(0, int*);
  unsigned at = SIMCU_ARG(1, unsigned);
  int code = SIMCU_ARG(2, int);
  if (code != 0 && simcu_blk->idx.x == at) {
    SIMCU_FAULT(code);
    return;
  }
  a[simcu_blk->idx.x] = 1;
}

static CUfunction f_mark;
static void setup(void) {
  OK(sim_test_start(ptx, "k_mark", &f_mark, NULL));
}

TestSuite(sim_faults, .init = setup);

static CUresult mark(CUstream s, CUdeviceptr a, unsigned blocks, unsigned at, int code) {
  void* args[] = {&a, &at, &code};
  return cuLaunchKernel(f_mark, blocks, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static int* host(CUdeviceptr d) {
  return (int*)(uintptr_t)d;
}

/* n device buffers of 4 zeroed ints. */
static void zeroed(CUdeviceptr* bufs, int n) {
  for (int i = 0; i < n; i++) {
    OK(cuMemAlloc(&bufs[i], 4 * sizeof(int)));
    OK(cuMemsetD32(bufs[i], 0, 4));
  }
}

Test(sim_faults, an_eager_fault_is_sticky) {
  CUstream s, other;
  CUdeviceptr buf[3];
  zeroed(buf, 3);
  CUdeviceptr a = buf[0], b = buf[1], c = buf[2];
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  drv_gate_close(s);
  OK(mark(s, a, 4, 1, SIMCU_FAULT_ILLEGAL_ADDRESS));   /* the launch itself succeeds */
  OK(mark(s, b, 4, 0, 0));                            /* behind the fault on its stream */
  CUevent after;
  OK(cuEventCreate(&after, CU_EVENT_DISABLE_TIMING));
  OK(cuEventRecord(after, s));
  OK(cuStreamWaitEvent(other, after, 0));
  OK(mark(other, c, 4, 0, 0));                        /* another stream, after the fault */
  drv_gate_open();
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuStreamSynchronize(other), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(host(a)[0], 1, "blocks before the faulting one ran");
  cr_assert_eq(host(a)[2] + host(a)[3], 0, "blocks after the faulting one did not run");
  cr_assert_eq(host(b)[0], 0, "work behind the fault did not run");
  cr_assert_eq(host(c)[0], 0, "no stream runs work after the fault");

  /* Every later use of the context returns the fault. */
  CUdeviceptr p;
  CUstream s2;
  CUevent e2;
  int h[4];
  cr_assert_eq(mark(s, a, 1, 0, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuMemAlloc(&p, 64), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuMemcpyDtoH(h, a, sizeof(h)), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuMemsetD32Async(a, 0, 4, s), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuStreamQuery(s), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuStreamCreate(&s2, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuEventCreate(&e2, 0), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuEventRecord(after, s), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuEventQuery(after), CUDA_ERROR_ILLEGAL_ADDRESS);
  cr_assert_eq(cuEventSynchronize(after), CUDA_ERROR_ILLEGAL_ADDRESS);
  /* The device, versions and error strings still answer. */
  int v;
  const char* name;
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  OK(cuDriverGetVersion(&v));
  OK(cuGetErrorName(CUDA_ERROR_ILLEGAL_ADDRESS, &name));
  cr_assert_str_eq(name, "CUDA_ERROR_ILLEGAL_ADDRESS");
}

Test(sim_faults, a_fault_in_a_graph_node_is_sticky) {
  CUstream s;
  CUdeviceptr buf[3];
  CUgraph g;
  CUgraphExec x;
  zeroed(buf, 3);
  CUdeviceptr a = buf[0], b = buf[1], c = buf[2];
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(mark(s, a, 2, 0, 0));
  OK(mark(s, b, 2, 0, SIMCU_FAULT_LAUNCH_FAILED));
  OK(mark(s, c, 2, 0, 0));
  OK(cuStreamEndCapture(s, &g));
  OK(cuGraphInstantiate(&x, g, 0));
  drv_gate_close(s);
  OK(cuGraphLaunch(x, s));
  OK(mark(s, c, 4, 0, 0));   /* eager work after the graph */
  drv_gate_open();
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);
  cr_assert_eq(host(a)[0] + host(a)[1], 2, "the node before the fault ran");
  cr_assert_eq(host(b)[1], 0, "the faulting node stopped at its faulting block");
  cr_assert_eq(host(c)[0] + host(c)[1] + host(c)[2] + host(c)[3], 0,
               "neither the next node nor later work ran");
  cr_assert_eq(cuGraphLaunch(x, s), CUDA_ERROR_LAUNCH_FAILED);
  CUgraphExec x2;
  cr_assert_eq(cuGraphInstantiate(&x2, g, 0), CUDA_ERROR_LAUNCH_FAILED);
}

Test(sim_faults, the_first_fault_wins_and_other_codes_are_launch_failures) {
  CUstream s;
  CUdeviceptr a;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, 4 * sizeof(int)));
  drv_gate_close(s);
  OK(mark(s, a, 1, 0, 12345));   /* not a device fault code */
  OK(mark(s, a, 1, 0, SIMCU_FAULT_ILLEGAL_ADDRESS));
  drv_gate_open();
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_LAUNCH_FAILED);
}

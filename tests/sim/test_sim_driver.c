/* Tests of the simulated driver (sim/libcuda.so.1) through the driver API.
 *
 * The kernels come from a PTX image written here (so no nvcc is needed); their
 * CPU bodies are exported by this executable. Work that must not have run yet
 * is held back by a host function blocked on a semaphore, which makes every
 * "not yet" check deterministic. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "drv_setup.h"
#include "simcu.h"

/* Per-thread-default-stream entry points (declared by cuda.h only when the
 * whole program opts in with CUDA_API_PER_THREAD_DEFAULT_STREAM). */
CUresult cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* data);
CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned smem, CUstream s, void** params,
                             void** extra);

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_muladd(.param .u64 a, .param .u32 n, .param .u32 m, .param .u32 c)\n{\n ret;\n}\n"
    ".visible .entry k_copy(.param .u64 dst, .param .u64 src, .param .u32 n)\n{\n ret;\n}\n"
    ".visible .entry k_unbound(.param .u64 a)\n{\n ret;\n}\n"
    ".visible .entry k_companion(.param .u64 a)\n{\n ret;\n}\n";

/* a[i] = a[i] * m + c, wrapping like the device's 32-bit arithmetic (unsigned:
 * 20 launches of * 3 overflow an int): the result depends on the order of
 * launches. */
SIMCU_PARAMS(k_muladd, 8, 4, 4, 4);
SIMCU_KERNEL(k_muladd) {
  int* a = SIMCU_ARG(0, int*);
  int n = SIMCU_ARG(1, int), m = SIMCU_ARG(2, int), c = SIMCU_ARG(3, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      a[i] = (int)((unsigned)a[i] * (unsigned)m + (unsigned)c);
  }
}

SIMCU_PARAMS(k_copy, 8, 8, 4);
SIMCU_KERNEL(k_copy) {
  int* d = SIMCU_ARG(0, int*);
  const int* s = SIMCU_ARG(1, const int*);
  int n = SIMCU_ARG(2, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      d[i] = s[i];
  }
}

static CUmodule mod;
static CUfunction f_muladd, f_copy, f_unbound;

static void setup(void) {
  CUcontext c;
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&c, 0));
  OK(cuCtxSetCurrent(c));
  OK(cuModuleLoadData(&mod, ptx));
  OK(cuModuleGetFunction(&f_muladd, mod, "k_muladd"));
  OK(cuModuleGetFunction(&f_copy, mod, "k_copy"));
  OK(cuModuleGetFunction(&f_unbound, mod, "k_unbound"));
}

static CUresult muladd(CUstream s, CUdeviceptr a, int n, int m, int c) {
  void* args[] = {&a, &n, &m, &c};
  return cuLaunchKernel(f_muladd, (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

static CUresult copyk(CUstream s, CUdeviceptr d, CUdeviceptr src, int n) {
  void* args[] = {&d, &src, &n};
  return cuLaunchKernel(f_copy, (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL);
}

/* Launches x on s, waits for it and reads n bytes at a back into h. */
static void launch_and_read(CUgraphExec x, CUstream s, CUdeviceptr a, void* h, size_t n) {
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(h, a, n));
}


TestSuite(sim, .init = setup);

Test(sim, device_is_an_h200) {
  int v;
  char name[64];
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
  cr_expect_eq(v, 132);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 0));
  cr_expect_eq(v, 9);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0));
  cr_expect_eq(v, 0);
  OK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 0));
  cr_expect_eq(v, 228 * 1024);
  OK(cuDeviceGetName(name, sizeof(name), 0));
  cr_expect(strstr(name, "H200") != NULL);
  cr_expect_eq(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_WARP_SIZE, 1), CUDA_ERROR_INVALID_DEVICE);
}

Test(sim, launches_run_in_stream_order) {
  CUstream s;
  CUdeviceptr a;
  int h[300];
  OK(cuStreamCreate(&s, 0));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuMemsetD32Async(a, 1, 300, s));
  for (int k = 0; k < 20; k++)
    OK(muladd(s, a, 300, 3, k));
  OK(cuMemcpyDtoHAsync(h, a, sizeof(h), s));
  OK(cuStreamSynchronize(s));
  unsigned want = 1;
  for (int k = 0; k < 20; k++)
    want = want * 3 + (unsigned)k;
  for (int i = 0; i < 300; i++)
    cr_assert_eq((unsigned)h[i], want);
}

Test(sim, unsynchronised_pinned_readback_is_stale) {
  CUstream s;
  CUdeviceptr a;
  int* h;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAllocHost((void**)&h, 64 * sizeof(int)));
  OK(cuMemAlloc(&a, 64 * sizeof(int)));
  memset(h, 0, 64 * sizeof(int));
  drv_gate_close(s);
  OK(cuMemsetD32Async(a, 7, 64, s));
  OK(cuMemcpyDtoHAsync(h, a, 64 * sizeof(int), s));
  cr_assert_eq(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
  cr_assert_eq(h[0], 0, "the copy ran before the stream got to it");
  drv_gate_open();
  OK(cuStreamSynchronize(s));
  cr_assert_eq(h[63], 7);
  OK(cuStreamQuery(s));
}

Test(sim, events_order_work_across_streams) {
  CUstream s1, s2;
  CUevent e;
  CUdeviceptr a, b;
  int h[10];
  OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuMemAlloc(&b, sizeof(h)));
  OK(cuMemsetD32(a, 0, 10));
  drv_gate_close(s1);
  OK(muladd(s1, a, 10, 1, 5));
  OK(cuEventRecord(e, s1));
  OK(cuStreamWaitEvent(s2, e, 0));
  OK(copyk(s2, b, a, 10));
  usleep(20000);   /* time enough for an s2 that did not wait to finish */
  cr_assert_eq(cuEventQuery(e), CUDA_ERROR_NOT_READY);
  cr_assert_eq(cuStreamQuery(s2), CUDA_ERROR_NOT_READY, "s2 did not wait for the event");
  drv_gate_open();
  OK(cuStreamSynchronize(s2));
  OK(cuEventQuery(e));
  OK(cuMemcpyDtoH(h, b, sizeof(h)));
  cr_assert_eq(h[9], 5);
}

static int query_until_ready(CUstream s) {
  for (int i = 0; i < 2000; i++) {
    if (cuStreamQuery(s) == CUDA_SUCCESS)
      return 1;
    usleep(1000);
  }
  return 0;
}

Test(sim, legacy_stream_waits_for_blocking_streams_only) {
  CUstream blocking, nonblocking;
  CUdeviceptr a, b;
  int h[4];
  OK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
  OK(cuStreamCreate(&nonblocking, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuMemAlloc(&b, sizeof(h)));
  OK(cuMemsetD32(a, 0, 4));
  OK(cuMemsetD32(b, 0, 4));

  /* A non-blocking stream's pending work does not hold the legacy stream. */
  drv_gate_close(nonblocking);
  OK(muladd(NULL, b, 4, 1, 9));
  cr_assert(query_until_ready(CU_STREAM_LEGACY), "legacy stream waited for a non-blocking stream");
  drv_gate_open();
  OK(cuStreamSynchronize(nonblocking));

  /* A blocking stream's pending work does. */
  drv_gate_close(blocking);
  OK(muladd(blocking, a, 4, 1, 3));
  OK(copyk(NULL, b, a, 4));
  usleep(20000);
  cr_assert_eq(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY, "legacy op did not wait");
  drv_gate_open();
  OK(cuStreamSynchronize(NULL));
  OK(cuMemcpyDtoH(h, b, sizeof(h)));
  cr_assert_eq(h[0], 3);

  /* And work queued on a blocking stream waits for earlier legacy work. */
  drv_gate_close(NULL);
  OK(muladd(blocking, a, 4, 2, 0));
  usleep(20000);
  cr_assert_eq(cuStreamQuery(blocking), CUDA_ERROR_NOT_READY, "blocking stream ran ahead of legacy");
  drv_gate_open();
  OK(cuStreamSynchronize(blocking));
  OK(cuMemcpyDtoH(h, a, sizeof(h)));
  cr_assert_eq(h[2], 6);
}

Test(sim, per_thread_stream_is_separate_from_legacy) {
  CUdeviceptr a;
  int h[2];
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuMemsetD32(a, 1, 2));
  sem_init(drv_gate_sem(), 0, 0);
  OK(cuLaunchHostFunc_ptsz(NULL, drv_gate_wait, NULL));   /* NULL means this thread's stream */
  OK(cuLaunchKernel_ptsz(f_muladd, 1, 1, 1, 32, 1, 1, 0, NULL,
                         (void*[]){&a, &(int){2}, &(int){5}, &(int){0}}, NULL));
  cr_assert_eq(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
  drv_gate_open();
  OK(cuStreamSynchronize(CU_STREAM_PER_THREAD));
  OK(cuMemcpyDtoH(h, a, sizeof(h)));
  cr_assert_eq(h[1], 5);
}

static void build_work(CUstream s, CUdeviceptr a, CUdeviceptr b, int n) {
  OK(cuMemsetD32Async(a, 2, (size_t)n, s));
  OK(muladd(s, a, n, 3, 1));
  OK(copyk(s, b, a, n));
  OK(muladd(s, b, n, 5, -2));
  OK(cuMemcpyDtoDAsync(a, b, (size_t)n * 4, s));
  OK(muladd(s, a, n, 7, 4));
}

Test(sim, graph_launch_equals_eager_launch) {
  CUstream s;
  CUdeviceptr a, b;
  CUgraph g;
  CUgraphExec x;
  int eager[100], graphed[100];
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, sizeof(eager)));
  OK(cuMemAlloc(&b, sizeof(eager)));
  build_work(s, a, b, 100);
  OK(cuMemcpyDtoHAsync(eager, a, sizeof(eager), s));
  OK(cuStreamSynchronize(s));

  OK(cuMemsetD32(a, 0, 100));
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  build_work(s, a, b, 100);
  OK(cuStreamEndCapture(s, &g));
  size_t n = 0;
  OK(cuGraphGetNodes(g, NULL, &n));
  cr_assert_eq(n, 6);
  int before[100];
  OK(cuMemcpyDtoH(before, a, sizeof(before)));
  cr_assert_eq(before[0], 0, "captured work must not run");
  OK(cuGraphInstantiateWithFlags(&x, g, 0));
  launch_and_read(x, s, a, graphed, sizeof(graphed));
  cr_assert_arr_eq(eager, graphed, sizeof(eager));
  cr_assert_eq(eager[0], ((2 * 3 + 1) * 5 - 2) * 7 + 4);
}

Test(sim, exec_updates_change_later_launches_only) {
  CUstream s;
  CUdeviceptr a;
  CUgraph g, g2;
  CUgraphNode node, node2;
  CUgraphExec x;
  CUgraphExecUpdateResultInfo info;
  int h[8];
  int n = 8, m = 1, c = 10;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuMemsetD32(a, 0, 8));
  void* args[] = {&a, &n, &m, &c};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_muladd, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 8, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = args};
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphAddKernelNode(&node, g, NULL, 0, &p));
  c = 999;   /* parameter values were copied when the node was added */
  OK(cuGraphInstantiate(&x, g, 0));
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[0], 10);

  c = 1;
  OK(cuGraphExecKernelNodeSetParams(x, node, &p));
  OK(cuGraphLaunch(x, s));
  c = 2;
  OK(cuGraphExecKernelNodeSetParams(x, node, &p));   /* after the launch: not seen by it */
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(h, a, sizeof(h)));
  cr_assert_eq(h[0], 11);
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[0], 13);

  /* Whole-graph update: same topology and function succeeds... */
  c = 100;
  OK(cuGraphCreate(&g2, 0));
  OK(cuGraphAddKernelNode(&node2, g2, NULL, 0, &p));
  OK(cuGraphExecUpdate(x, g2, &info));
  cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[0], 113);
  /* ...and so does a different function of the same context (CUDA 11.2 on),
   * whole-graph or node by node. */
  CUgraph g3;
  CUgraphNode node3;
  CUdeviceptr b;
  OK(cuMemAlloc(&b, sizeof(h)));
  int src[8] = {5, 6, 7, 8, 9, 10, 11, 12};
  OK(cuMemcpyHtoD(b, src, sizeof(src)));
  void* cargs[] = {&a, &b, &n};
  CUDA_KERNEL_NODE_PARAMS pc = p;
  pc.func = f_copy;
  pc.kernelParams = cargs;
  OK(cuGraphCreate(&g3, 0));
  OK(cuGraphAddKernelNode(&node3, g3, NULL, 0, &pc));
  OK(cuGraphExecUpdate(x, g3, &info));
  cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_SUCCESS);
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[7], 12, "k_copy ran in the updated graph");
  c = 1000;
  OK(cuGraphExecKernelNodeSetParams(x, node3, &p));   /* back to k_muladd */
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[7], 1012, "k_muladd ran after the node's function changed back");
  OK(cuGraphExecKernelNodeSetParams(x, node3, &pc));
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[7], 12);
}

Test(sim, capture_rejects_illegal_calls) {
  CUstream s, other;
  CUgraph g;
  CUdeviceptr a;
  CUstreamCaptureStatus st;
  OK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
  OK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, 64));

  cr_assert_eq(cuStreamBeginCapture(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
               CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);

  /* Synchronising a capturing stream fails and invalidates the capture. */
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuStreamIsCapturing(s, &st));
  cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(muladd(s, a, 16, 1, 1));
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(cuStreamIsCapturing(s, &st));
  cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  cr_assert_null(g);
  OK(cuStreamIsCapturing(s, &st));
  cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_NONE);

  /* Even where unsafe calls are allowed (RELAXED), the capturing stream itself
   * cannot be synchronised. */
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  cr_assert_eq(cuStreamQuery(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* Legacy-stream work while a blocking stream captures. */
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  cr_assert_eq(muladd(NULL, a, 16, 1, 1), CUDA_ERROR_STREAM_CAPTURE_IMPLICIT);
  cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);

  /* Potentially unsafe calls: forbidden in GLOBAL mode, allowed in RELAXED. */
  CUdeviceptr p;
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  cr_assert_eq(cuMemAlloc(&p, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemAlloc(&p, 64));
  OK(muladd(s, a, 16, 1, 1));
  OK(cuStreamEndCapture(s, &g));
  cr_assert_not_null(g);

  /* Ending where it did not begin; ending when not capturing. */
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  cr_assert_eq(cuStreamEndCapture(other, &g), CUDA_ERROR_ILLEGAL_STATE);
  cr_assert_eq(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_ERROR_ILLEGAL_STATE);
  OK(cuStreamEndCapture(s, &g));
}

Test(sim, capture_follows_events_across_streams) {
  CUstream s1, s2;
  CUevent fork, join;
  CUgraph g;
  CUgraphExec x;
  CUdeviceptr a, b;
  int h[4];
  OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&fork, 0));
  OK(cuEventCreate(&join, 0));
  OK(cuMemAlloc(&a, 16));
  OK(cuMemAlloc(&b, 16));
  OK(cuMemsetD32(a, 1, 4));
  OK(cuMemsetD32(b, 1, 4));
  OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(muladd(s1, a, 4, 2, 0));
  OK(cuEventRecord(fork, s1));
  OK(cuStreamWaitEvent(s2, fork, 0));
  CUstreamCaptureStatus st;
  OK(cuStreamIsCapturing(s2, &st));
  cr_assert_eq(st, CU_STREAM_CAPTURE_STATUS_ACTIVE, "s2 joined the capture");
  OK(muladd(s2, b, 4, 3, 0));
  /* Ending before s2 rejoins is an error. */
  cr_assert_eq(cuStreamEndCapture(s1, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);

  OK(cuStreamBeginCapture(s1, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(muladd(s1, a, 4, 2, 0));
  OK(cuEventRecord(fork, s1));
  OK(cuStreamWaitEvent(s2, fork, 0));
  OK(muladd(s2, b, 4, 3, 0));
  OK(cuEventRecord(join, s2));
  OK(cuStreamWaitEvent(s1, join, 0));
  OK(copyk(s1, a, b, 4));
  cr_assert_eq(cuEventQuery(join), CUDA_ERROR_CAPTURED_EVENT);
  OK(cuStreamEndCapture(s1, &g));
  OK(cuEventQuery(join));   /* the capture is over */
  size_t n = 0;
  OK(cuGraphGetNodes(g, NULL, &n));
  cr_assert_eq(n, 3);
  OK(cuGraphInstantiate(&x, g, 0));
  launch_and_read(x, s1, a, h, sizeof(h));
  cr_assert_eq(h[0], 3);
}

Test(sim, errors_follow_cuda) {
  CUstream s;
  CUdeviceptr a;
  CUgraph g;
  CUgraphExec x;
  int n = 1, m = 1, c = 1;
  OK(cuMemAlloc(&a, 16));
  void* args[] = {&a, &n, &m, &c};
  cr_assert_eq(cuLaunchKernel(f_muladd, 1, 1, 1, 1025, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuLaunchKernel(f_muladd, 1, 1, 1, 32, 32, 2, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuLaunchKernel(f_muladd, 0, 1, 1, 32, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuLaunchKernel(f_unbound, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_NOT_FOUND, "an unbound kernel must fail, not no-op");
  cr_assert_eq(cuLaunchKernel((CUfunction)&n, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL),
               CUDA_ERROR_INVALID_HANDLE);
  OK(cuStreamCreate(&s, 0));
  OK(cuStreamDestroy(s));
  cr_assert_eq(muladd(s, a, 1, 1, 1), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphInstantiate(&x, g, 0));
  OK(cuGraphExecDestroy(x));
  cr_assert_eq(cuGraphLaunch(x, NULL), CUDA_ERROR_INVALID_HANDLE);
  OK(cuGraphDestroy(g));
  cr_assert_eq(cuGraphInstantiate(&x, g, 0), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuModuleGetFunction(&(CUfunction){0}, mod, "nope"), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(cuMemFree((CUdeviceptr)(uintptr_t)&n), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpyHtoD(a, &n, 4096), CUDA_ERROR_INVALID_VALUE, "copy past the allocation");
  const void* tab = &n;
  CUuuid id = {{0}};
  cr_assert_neq(cuGetExportTable(&tab, &id), CUDA_SUCCESS);
  const char* name;
  OK(cuGetErrorName(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, &name));
  cr_assert_str_eq(name, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT");
}

Test(sim, get_proc_address_honours_version_and_flags) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(h);
  void* p;
  CUdriverProcAddressQueryResult st;
  OK(cuGetProcAddress_v2("cuMemAlloc", &p, 13000, 0, &st));
  cr_assert_eq(p, dlsym(h, "cuMemAlloc_v2"));
  OK(cuGetProcAddress_v2("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  cr_assert_eq(p, dlsym(h, "cuLaunchKernel_ptsz"));
  OK(cuGetProcAddress_v2("cuLaunchKernel", &p, 13000, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st));
  cr_assert_eq(p, dlsym(h, "cuLaunchKernel"));
  OK(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &st));
  cr_assert_eq(p, dlsym(h, "cuGetProcAddress_v2"));
  OK(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, &st));
  cr_assert_eq(p, dlsym(h, "cuGetProcAddress"));
  cr_assert_eq(cuGetProcAddress_v2("cuLibraryLoadData", &p, 11080, 0, &st), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  cr_assert_eq(cuGetProcAddress_v2("cuNoSuchThing", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

/* Event times measure the device's modelled durations when the device is the
 * bottleneck: a long kernel first keeps the stream busy, so the record, the
 * two kernels and the second record run back to back, whatever the host costs
 * of submitting them (sim/README.md, "Simulated time"). */
Test(sim, event_times_follow_the_simulated_clock) {
  CUstream s;
  CUevent a, b;
  CUdeviceptr d, big;
  float ms1, ms2;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&a, 0));
  OK(cuEventCreate(&b, 0));
  OK(cuMemAlloc(&d, 4096 * 4));
  OK(cuMemAlloc(&big, (1 << 20) * 4));
  for (int rep = 0; rep < 2; rep++) {
    OK(muladd(s, big, 1 << 20, 1, 1));   /* 2000 + 65536 ns of device time */
    OK(cuEventRecord(a, s));
    OK(muladd(s, d, 4096, 1, 1));
    OK(muladd(s, d, 4096, 1, 1));
    OK(cuEventRecord(b, s));
    OK(cuEventSynchronize(b));
    OK(cuEventElapsedTime(rep ? &ms2 : &ms1, a, b));
  }
  /* Two kernels of 4096 threads: 2 * (2000 + 4096/16) ns. */
  cr_assert_float_eq(ms1, 2 * (2000 + 256) / 1e6, 1e-9);
  cr_assert_float_eq(ms1, ms2, 1e-12);

  /* The same two kernels as a graph: no eager launch overhead, 2 * (500 + 256) ns. */
  CUgraph g;
  CUgraphExec x;
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(muladd(s, d, 4096, 1, 1));
  OK(muladd(s, d, 4096, 1, 1));
  OK(cuStreamEndCapture(s, &g));
  OK(cuGraphInstantiate(&x, g, 0));
  OK(muladd(s, big, 1 << 20, 1, 1));
  OK(cuEventRecord(a, s));
  OK(cuGraphLaunch(x, s));
  OK(cuEventRecord(b, s));
  OK(cuEventSynchronize(b));
  OK(cuEventElapsedTime(&ms2, a, b));
  cr_assert_float_eq(ms2, 2 * (500 + 256) / 1e6, 1e-9);
}

Test(sim, pointer_attributes_classify_memory) {
  CUdeviceptr d;
  void* h;
  int stack = 0;
  unsigned type;
  size_t size;
  OK(cuMemAlloc(&d, 1000));
  OK(cuMemAllocHost(&h, 100));
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 10));
  cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
  OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, d + 10));
  cr_assert_geq(size, 1000);
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)h));
  cr_assert_eq(type, CU_MEMORYTYPE_HOST);
  cr_assert_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     (CUdeviceptr)(uintptr_t)&stack), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFree(d));
  cr_assert_eq(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d),
               CUDA_ERROR_INVALID_VALUE);
  OK(cuMemFreeHost(h));
}

Test(sim, memsets_of_every_width) {
  CUdeviceptr d;
  unsigned char h[16];
  OK(cuMemAlloc(&d, 16));
  OK(cuMemsetD8(d, 0xab, 16));
  OK(cuMemsetD16(d + 2, 0x1234, 2));
  OK(cuMemsetD32Async(d + 8, 0xdeadbeef, 1, NULL));
  OK(cuMemcpyDtoH(h, d, 16));
  cr_assert_eq(h[0], 0xab);
  cr_assert_eq(h[2], 0x34);
  cr_assert_eq(h[3], 0x12);
  cr_assert_eq(h[6], 0xab);
  cr_assert_eq(h[8], 0xef);
  cr_assert_eq(h[11], 0xde);
  cr_assert_eq(cuMemsetD32(d + 1, 0, 1), CUDA_ERROR_INVALID_VALUE, "misaligned");
}

Test(sim, function_info_comes_from_the_image) {
  size_t off, size;
  const char* name;
  OK(cuFuncGetParamInfo(f_muladd, 1, &off, &size));
  cr_assert_eq(off, 8);
  cr_assert_eq(size, 4);
  OK(cuFuncGetParamInfo(f_copy, 1, &off, &size));
  cr_assert_eq(off, 8);
  cr_assert_eq(size, 8);
  cr_assert_eq(cuFuncGetParamInfo(f_copy, 3, &off, &size), CUDA_ERROR_INVALID_VALUE);
  OK(cuFuncGetName(&name, f_copy));
  cr_assert_str_eq(name, "k_copy");
  CUlibrary lib;
  CUkernel k;
  CUfunction f;
  OK(cuLibraryLoadData(&lib, ptx, NULL, NULL, 0, NULL, NULL, 0));
  OK(cuLibraryGetKernel(&k, lib, "k_muladd"));
  OK(cuKernelGetFunction(&f, k));
  OK(cuKernelGetParamInfo(k, 3, &off, &size));
  cr_assert_eq(off, 16);
  /* A CUkernel may be launched as a CUfunction. */
  CUdeviceptr a;
  int h, n = 1, m = 1, c = 42;
  OK(cuMemAlloc(&a, 4));
  OK(cuMemsetD32(a, 0, 1));
  OK(cuLaunchKernel((CUfunction)k, 1, 1, 1, 1, 1, 1, 0, NULL, (void*[]){&a, &n, &m, &c}, NULL));
  OK(cuMemcpyDtoH(&h, a, 4));
  cr_assert_eq(h, 42);
}

Test(sim, virtual_memory_maps_into_reserved_ranges) {
  CUdeviceptr base;
  CUmemGenericAllocationHandle h;
  size_t gran;
  unsigned type;
  int out[4];
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  cr_assert_eq(gran, 2u << 20);
  OK(cuMemAddressReserve(&base, 4 * gran, 0, 0, 0));
  cr_assert_eq(base % gran, 0);
  cr_assert_eq(cuMemsetD32(base, 1, 4), CUDA_ERROR_INVALID_VALUE, "reserved is not mapped");
  OK(cuMemCreate(&h, gran, &prop, 0));
  OK(cuMemMap(base + gran, gran, 0, h, 0));
  CUmemAccessDesc acc = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  OK(cuMemSetAccess(base + gran, gran, &acc, 1));
  OK(cuMemsetD32(base + gran, 5, 4));
  OK(muladd(NULL, base + gran, 4, 2, 1));
  OK(cuMemcpyDtoH(out, base + gran, sizeof(out)));
  cr_assert_eq(out[3], 11);
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, base + gran + 8));
  cr_assert_eq(type, CU_MEMORYTYPE_DEVICE);
  cr_assert_eq(cuMemMap(base + gran, gran, 0, h, 0), CUDA_ERROR_INVALID_VALUE, "double map");
  cr_assert_eq(cuMemAddressFree(base, 4 * gran), CUDA_ERROR_INVALID_VALUE, "still mapped");
  OK(cuMemUnmap(base + gran, gran));
  OK(cuMemRelease(h));
  cr_assert_eq(cuMemcpyDtoH(out, base + gran, sizeof(out)), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAddressFree(base, 4 * gran));
  cr_assert_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
}

Test(sim, memset_nodes_and_node_attributes) {
  CUstream s;
  CUdeviceptr a;
  CUgraph g;
  CUgraphNode ms, k;
  CUgraphExec x;
  int h[4];
  int n = 4, m = 2, c = 1;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuGraphCreate(&g, 0));
  CUDA_MEMSET_NODE_PARAMS mp = {.dst = a, .value = 3, .elementSize = 4, .width = 4, .height = 1};
  OK(cuGraphAddMemsetNode(&ms, g, NULL, 0, &mp, NULL));
  void* args[] = {&a, &n, &m, &c};
  CUDA_KERNEL_NODE_PARAMS p = {.func = f_muladd, .gridDimX = 2, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 2, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = args};
  OK(cuGraphAddKernelNode(&k, g, &ms, 1, &p));
  CUkernelNodeAttrValue v = {.clusterDim = {2, 1, 1}}, back;
  OK(cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v));
  OK(cuGraphKernelNodeGetAttribute(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &back));
  cr_assert_eq(back.clusterDim.x, 2);
  v.clusterDim.x = 3;   /* does not divide the grid */
  cr_assert_eq(cuGraphKernelNodeSetAttribute(k, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v),
               CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuGraphKernelNodeSetAttribute(ms, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v),
               CUDA_ERROR_INVALID_VALUE, "not a kernel node");
  OK(cuGraphInstantiate(&x, g, 0));
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[3], 7);
  mp.value = 10;
  OK(cuGraphExecMemsetNodeSetParams(x, ms, &mp, NULL));
  cr_assert_eq(cuGraphExecMemsetNodeSetParams(x, k, &mp, NULL), CUDA_ERROR_INVALID_VALUE);
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[0], 21);
}

/* A graph memset node is checked as an eager memset is: a 16- or 32-bit
 * memset at an address (or, 2-D, with a pitch) not aligned to its element
 * size is refused when the node is added, updated in an executable, and
 * eagerly alike; an instantiated 2-D memset keeps its dimensions and a 1-D
 * one its height, as CUDA documents. */
Test(sim, memset_nodes_are_checked_like_eager_memsets) {
  CUstream s;
  CUdeviceptr a;
  CUgraph g;
  CUgraphNode n1, n2;
  CUgraphExec x;
  uint32_t h[64];
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuGraphCreate(&g, 0));
  for (unsigned es = 2; es <= 4; es *= 2) {
    CUDA_MEMSET_NODE_PARAMS bad = {.dst = a + 1, .value = 1, .elementSize = es, .width = 4,
                                   .height = 1};
    CUresult eager = es == 2 ? cuMemsetD16Async(a + 1, 1, 4, s) : cuMemsetD32Async(a + 1, 1, 4, s);
    cr_assert_eq(eager, CUDA_ERROR_INVALID_VALUE, "eager, element size %u", es);
    cr_assert_eq(cuGraphAddMemsetNode(&n1, g, NULL, 0, &bad, NULL), CUDA_ERROR_INVALID_VALUE,
                 "graph node, element size %u", es);
    /* 2-D: an aligned address with a pitch that is not a multiple of the size. */
    CUDA_MEMSET_NODE_PARAMS badpitch = {.dst = a, .pitch = 4 * es + 1, .value = 1,
                                        .elementSize = es, .width = 4, .height = 2};
    eager = es == 2 ? cuMemsetD2D16Async(a, 4 * es + 1, 1, 4, 2, s)
                    : cuMemsetD2D32Async(a, 4 * es + 1, 1, 4, 2, s);
    cr_assert_eq(eager, CUDA_ERROR_INVALID_VALUE, "eager 2-D, element size %u", es);
    cr_assert_eq(cuGraphAddMemsetNode(&n1, g, NULL, 0, &badpitch, NULL), CUDA_ERROR_INVALID_VALUE,
                 "graph node 2-D, element size %u", es);
  }
  CUDA_MEMSET_NODE_PARAMS one = {.dst = a, .value = 5, .elementSize = 4, .width = 8, .height = 1};
  CUDA_MEMSET_NODE_PARAMS two = {.dst = a + 64, .pitch = 64, .value = 6, .elementSize = 4,
                                 .width = 8, .height = 2};
  OK(cuGraphAddMemsetNode(&n1, g, NULL, 0, &one, NULL));
  OK(cuGraphAddMemsetNode(&n2, g, &n1, 1, &two, NULL));
  OK(cuGraphInstantiate(&x, g, 0));
  CUDA_MEMSET_NODE_PARAMS upd = one;
  upd.dst = a + 2;
  cr_assert_eq(cuGraphExecMemsetNodeSetParams(x, n1, &upd, NULL), CUDA_ERROR_INVALID_VALUE,
               "a misaligned update");
  upd = one;
  upd.height = 2;
  upd.pitch = 32;
  cr_assert_eq(cuGraphExecMemsetNodeSetParams(x, n1, &upd, NULL), CUDA_ERROR_INVALID_VALUE,
               "a 1-D memset's height may not change");
  upd = two;
  upd.width = 4;
  cr_assert_eq(cuGraphExecMemsetNodeSetParams(x, n2, &upd, NULL), CUDA_ERROR_INVALID_VALUE,
               "a 2-D memset's dimensions may not change");
  upd = one;
  upd.width = 4;   /* a 1-D memset's width may */
  upd.value = 9;
  OK(cuGraphExecMemsetNodeSetParams(x, n1, &upd, NULL));
  upd = two;
  upd.dst = a + 128;   /* and a 2-D one's address and value */
  upd.value = 8;
  OK(cuGraphExecMemsetNodeSetParams(x, n2, &upd, NULL));
  OK(cuMemsetD32(a, 0, 64));
  launch_and_read(x, s, a, h, sizeof(h));
  cr_assert_eq(h[0], 9);
  cr_assert_eq(h[4], 0, "the new width");
  cr_assert_eq(h[16], 0, "the old 2-D address is not set");
  cr_assert_eq(h[32], 8);
  cr_assert_eq(h[48], 8);
  /* Whole-graph update: the same rules. */
  CUgraph g2;
  CUgraphNode m1, m2;
  CUgraphExecUpdateResultInfo info;
  OK(cuGraphCreate(&g2, 0));
  OK(cuGraphAddMemsetNode(&m1, g2, NULL, 0, &one, NULL));
  upd = two;
  upd.pitch = 128;
  OK(cuGraphAddMemsetNode(&m2, g2, &m1, 1, &upd, NULL));
  cr_assert_eq(cuGraphExecUpdate(x, g2, &info), CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE);
  cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR_PARAMETERS_CHANGED);
  cr_assert_eq(info.errorNode, m2);
}

Test(sim, bodies_from_a_companion_object) {
  /* k_companion's body is in the object SIMCU_KERNELS names, not here. */
  CUfunction f;
  CUdeviceptr a;
  int h[8];
  cr_assert_not_null(getenv("SIMCU_KERNELS"));
  OK(cuModuleGetFunction(&f, mod, "k_companion"));
  OK(cuMemAlloc(&a, sizeof(h)));
  OK(cuLaunchKernel(f, 2, 1, 1, 4, 1, 1, 0, NULL, (void*[]){&a}, NULL));
  OK(cuMemcpyDtoH(h, a, sizeof(h)));
  cr_assert_eq(h[7], 77);
}

static void* contextless(void* arg) {
  CUdeviceptr p;
  CUcontext c = NULL;
  CUresult* r = arg;
  r[0] = cuMemAlloc(&p, 64);
  r[1] = cuCtxGetCurrent(&c);
  r[2] = c == NULL ? CUDA_SUCCESS : CUDA_ERROR_UNKNOWN;
  CUcontext primary;
  cuDevicePrimaryCtxRetain(&primary, 0);
  cuCtxSetCurrent(primary);
  r[3] = cuMemAlloc(&p, 64);
  return NULL;
}

Test(sim, new_threads_have_no_current_context) {
  CUresult r[4];
  pthread_t t;
  pthread_create(&t, NULL, contextless, r);
  pthread_join(t, NULL);
  cr_assert_eq(r[0], CUDA_ERROR_INVALID_CONTEXT);
  cr_assert_eq(r[1], CUDA_SUCCESS);
  cr_assert_eq(r[2], CUDA_SUCCESS, "a new thread's current context is NULL");
  cr_assert_eq(r[3], CUDA_SUCCESS);
}

/* Tests of the sim's runtime (libcudart.so.13) without nvcc: the test does by
 * hand what nvcc's generated code does (register a fatbin wrapper and its
 * functions, push/pop the launch configuration, __cudaGetKernel,
 * __cudaLaunchKernel), with a fatbin container built around PTX (rt_fatbin.c). */
#include <criterion/criterion.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cost.h"
#include "rt_fatbin.h"
#include "sim_test.h"
#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_fill(.param .u64 a, .param .u32 n, .param .u32 v)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_fill, 8, 4, 4);
/* A negative v makes the kernel fault, as an out-of-bounds store would. */
SIMCU_KERNEL(k_fill) {
  int* a = SIMCU_ARG(0, int*);
  int n = SIMCU_ARG(1, int), v = SIMCU_ARG(2, int);
  if (v < 0) {
    SIMCU_FAULT(SIMCU_FAULT_ILLEGAL_ADDRESS);
    return;
  }
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      a[i] = a[i] * 10 + v;
  }
}

static char host_stub;   /* stands for the host stub nvcc generates per kernel */

static void setup(void) {
  const char* names[] = {"k_fill"};
  const void* stubs[] = {&host_stub};
  rt_register_ptx(ptx, names, stubs, 1);
}

TestSuite(sim_runtime, .init = setup);

/* What nvcc's stub does for k_fill<<<g, b, 0, s>>>(a, n, v). */
static cudaError_t nvcc_launch(dim3 g, dim3 b, cudaStream_t s, int* a, int n, int v) {
  cudaKernel_t k = NULL;
  if (__cudaPushCallConfiguration(g, b, 0, s) != 0)
    return cudaErrorUnknown;
  cudaError_t e = __cudaGetKernel(&k, &host_stub);
  dim3 gg, bb;
  size_t shm;
  cudaStream_t ss;
  if (__cudaPopCallConfiguration(&gg, &bb, &shm, &ss) != cudaSuccess)
    return cudaErrorUnknown;
  if (e != cudaSuccess)
    return e;
  void* args[] = {&a, &n, &v};
  return __cudaLaunchKernel(k, gg, bb, args, shm, ss);
}

Test(sim_runtime, reaches_the_driver_through_dlopen_only_when_used) {
  cr_assert_null(dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD),
                 "the runtime must not link libcuda: it dlopens it on first use");
  int n = 0;
  cr_assert_eq(cudaGetDeviceCount(&n), cudaSuccess);
  cr_assert_eq(n, 1);
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
  cr_assert_not_null(h);
  void* p = NULL;
  enum cudaDriverEntryPointQueryResult st;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"   /* still what torch < 2.11 calls */
  cr_assert_eq(cudaGetDriverEntryPoint("cuMemAlloc", &p, cudaEnableDefault, &st), cudaSuccess);
#pragma GCC diagnostic pop
  cr_assert_eq(p, dlsym(h, "cuMemAlloc_v2"));
  cr_assert_eq(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &p, 12000,
                                                cudaEnablePerThreadDefaultStream, &st), cudaSuccess);
  cr_assert_eq(p, dlsym(h, "cuLaunchKernel_ptsz"));
}

Test(sim_runtime, nvcc_launch_path_runs_kernels_in_order) {
  int* d;
  int out[40];
  cudaStream_t s;
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(cudaMalloc((void**)&d, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaMemsetAsync(d, 0, sizeof(out), s), cudaSuccess);
  for (int v = 1; v <= 3; v++)
    cr_assert_eq(nvcc_launch((dim3){2, 1, 1}, (dim3){32, 1, 1}, s, d, 40, v), cudaSuccess);
  void* args[] = {&d, &(int){40}, &(int){4}};
  cr_assert_eq(cudaLaunchKernel(&host_stub, (dim3){1, 1, 1}, (dim3){64, 1, 1}, args, 0, s),
               cudaSuccess);
  cr_assert_eq(cudaMemcpyAsync(out, d, sizeof(out), cudaMemcpyDeviceToHost, s), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  cr_assert_eq(out[39], 1234);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
}

Test(sim_runtime, errors_are_per_thread_and_cleared) {
  int* d;
  cr_assert_eq(cudaMalloc((void**)&d, 64), cudaSuccess);
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){2048, 1, 1}, NULL, d, 1, 1),
               cudaErrorInvalidConfiguration);
  cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidConfiguration);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidConfiguration);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
  char other;
  void* args[] = {&d, &(int){1}, &(int){1}};
  cr_assert_eq(cudaLaunchKernel(&other, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL),
               cudaErrorInvalidDeviceFunction);
  cr_assert_str_eq(cudaGetErrorName(cudaErrorStreamCaptureImplicit), "cudaErrorStreamCaptureImplicit");
  cudaStream_t s;
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(cudaStreamDestroy(s), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
}

/* cudaDeviceReset destroys the device's streams and events; the next call
 * reinitialises the device, on every thread, with a new primary context. */
static cudaError_t after_reset_result;

static void* launch_after_reset(void* arg) {
  int* d = arg;
  after_reset_result = nvcc_launch((dim3){1, 1, 1}, (dim3){4, 1, 1}, NULL, d, 4, 3);
  if (after_reset_result == cudaSuccess)
    after_reset_result = cudaDeviceSynchronize();
  return NULL;
}

Test(sim_runtime, a_device_reset_destroys_streams_and_reinitialises) {
  cudaStream_t s;
  cudaEvent_t e;
  int* d;
  cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  /* The driver the runtime loaded (this test does not link it). */
  CUresult (*get_ctx)(CUcontext*) = (CUresult(*)(CUcontext*))dlsym(RTLD_DEFAULT, "cuCtxGetCurrent");
  cr_assert_not_null(get_ctx);
  CUcontext before, after;
  cr_assert_eq(get_ctx(&before), CUDA_SUCCESS);
  cr_assert_eq(cudaDeviceReset(), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
  cr_assert_eq(cudaEventQuery(e), cudaErrorInvalidResourceHandle);
  cr_assert_eq(cudaMalloc((void**)&d, 64), cudaSuccess);
  cr_assert_eq(cudaMemset(d, 0, 64), cudaSuccess);
  cr_assert_eq(get_ctx(&after), CUDA_SUCCESS);
  cr_assert_neq(after, before, "a new primary context is current");
  cudaStream_t t;
  cr_assert_eq(cudaStreamCreate(&t), cudaSuccess);
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){4, 1, 1}, t, d, 4, 2), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(t), cudaSuccess);
  /* A thread that used the runtime before the reset gets the new context too. */
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, launch_after_reset, d), 0);
  pthread_join(th, NULL);
  cr_assert_eq(after_reset_result, cudaSuccess);
  int h[4];
  cr_assert_eq(cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(h[3], 23);
}

Test(sim_runtime, capture_and_graph_update_through_the_runtime) {
  int* d;
  int out[8];
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t x;
  cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cr_assert_eq(cudaMalloc((void**)&d, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaMemset(d, 0, sizeof(out)), cudaSuccess);
  for (int v = 1; v <= 2; v++) {
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    enum cudaStreamCaptureStatus st;
    cr_assert_eq(cudaStreamIsCapturing(s, &st), cudaSuccess);
    cr_assert_eq(st, cudaStreamCaptureStatusActive);
    cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){8, 1, 1}, s, d, 8, v), cudaSuccess);
    void* p;
    cr_assert_eq(cudaMalloc(&p, 16), cudaErrorStreamCaptureUnsupported);
    cr_assert_eq(cudaGetLastError(), cudaErrorStreamCaptureUnsupported);
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
    cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){8, 1, 1}, s, d, 8, v), cudaSuccess);
    cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
    if (v == 1) {
      cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
    } else {
      cudaGraphExecUpdateResultInfo info;
      cr_assert_eq(cudaGraphExecUpdate(x, g, &info), cudaSuccess);
    }
    cr_assert_eq(cudaGraphDestroy(g), cudaSuccess);
    cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
  }
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  cr_assert_eq(cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(out[7], 12);
  cr_assert_eq(cudaGraphExecDestroy(x), cudaSuccess);
}

Test(sim_runtime, pointer_attributes_and_pinned_memory) {
  int *d, *h, stack = 0;
  struct cudaPointerAttributes a;
  cr_assert_eq(cudaMalloc((void**)&d, 64), cudaSuccess);
  cr_assert_eq(cudaMallocHost((void**)&h, 64), cudaSuccess);
  cr_assert_eq(cudaPointerGetAttributes(&a, d), cudaSuccess);
  cr_assert_eq(a.type, cudaMemoryTypeDevice);
  cr_assert_eq(cudaPointerGetAttributes(&a, h), cudaSuccess);
  cr_assert_eq(a.type, cudaMemoryTypeHost);
  cr_assert_eq(cudaPointerGetAttributes(&a, &stack), cudaSuccess);
  cr_assert_eq(a.type, cudaMemoryTypeUnregistered);
  struct cudaDeviceProp p;
  cr_assert_eq(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  cr_assert_eq(p.multiProcessorCount, 132);
  cr_assert_eq(p.major * 10 + p.minor, 90);
  cr_assert_eq(cudaFreeHost(h), cudaSuccess);
  cr_assert_eq(cudaFree(d), cudaSuccess);
}

Test(sim_runtime, launch_ex_with_attributes) {
  int* d;
  int out[4];
  cr_assert_eq(cudaMalloc((void**)&d, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaMemset(d, 0, sizeof(out)), cudaSuccess);
  cudaLaunchAttribute attr = {.id = cudaLaunchAttributeCooperative};
  attr.val.cooperative = 1;
  cudaLaunchConfig_t c = {.gridDim = {1, 1, 1}, .blockDim = {4, 1, 1}, .attrs = &attr,
                          .numAttrs = 1};
  void* args[] = {&d, &(int){4}, &(int){7}};
  cr_assert_eq(cudaLaunchKernelExC(&c, &host_stub, args), cudaSuccess);
  c.gridDim.x = 100000;   /* a cooperative grid must fit on the device at once */
  cr_assert_eq(cudaLaunchKernelExC(&c, &host_stub, args), cudaErrorCooperativeLaunchTooLarge);
  cr_assert_eq(cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(out[3], 7);
  cudaFunction_t f;
  cr_assert_eq(cudaGetFuncBySymbol(&f, &host_stub), cudaSuccess);
  struct cudaFuncAttributes fa;
  cr_assert_eq(cudaFuncGetAttributes(&fa, &host_stub), cudaSuccess);
  cr_assert_eq(fa.maxThreadsPerBlock, 1024);
}

/* ---- Simulated time and device faults through the runtime ---- */

/* The sim driver's private table, reached as the runtime reaches it. */
static const simcu_private_t* sim_table(void) {
  CUresult (*get_table)(const void**, const CUuuid*) = NULL;
  enum cudaDriverEntryPointQueryResult st;
  cr_assert_eq(cudaGetDriverEntryPointByVersion("cuGetExportTable", (void**)&get_table, 12000,
                                                cudaEnableDefault, &st), cudaSuccess);
  const void* t = NULL;
  CUuuid id = {SIMCU_PRIVATE_UUID};
  cr_assert_eq(get_table(&t, &id), CUDA_SUCCESS);
  return t;
}

/* SIMCU_HOST_NS stands for the program's own work per op: charged once per
 * <<<>>> launch, in __cudaPushCallConfiguration, which an interposer that
 * holds launches does not take away; a direct cudaLaunchKernel pays only the
 * runtime's and the driver's costs. */
Test(sim_runtime, host_ns_is_charged_once_per_triple_chevron_launch) {
  char path[] = "/tmp/simcu-costs-XXXXXX";
  cr_assert_eq(sim_test_temp_file(path, "runtime 300\nlaunch 2000\n"), 0);
  setenv("SIMCU_COSTS", path, 1);
  setenv("SIMCU_HOST_NS", "7000", 1);
  int* d;
  cr_assert_eq(cudaMalloc((void**)&d, 64 * sizeof(int)), cudaSuccess);
  unlink(path);
  const simcu_private_t* sim = sim_table();
  void* args[] = {&d, &(int){64}, &(int){1}};
  /* First launches load the image; measure the ones after. */
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){64, 1, 1}, NULL, d, 64, 1), cudaSuccess);
  cr_assert_eq(cudaLaunchKernel(&host_stub, (dim3){1, 1, 1}, (dim3){64, 1, 1}, args, 0, NULL),
               cudaSuccess);
  uint64_t t = sim->host_ns();
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){64, 1, 1}, NULL, d, 64, 1), cudaSuccess);
  uint64_t chevron = sim->host_ns() - t;
  t = sim->host_ns();
  cr_assert_eq(cudaLaunchKernel(&host_stub, (dim3){1, 1, 1}, (dim3){64, 1, 1}, args, 0, NULL),
               cudaSuccess);
  uint64_t direct = sim->host_ns() - t;
  cr_assert_eq(direct, 300 + 2000, "one runtime call, one driver launch");
  cr_assert_eq(chevron, 7000 + 300 + 2000);
  cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
}

static sem_t gate;
static void wait_gate(void* p) {
  (void)p;
  sem_wait(&gate);
}

/* A fault in a kernel body is reported asynchronously and sticks: the launch
 * succeeds, the sync returns it, later work is not run, and every later call
 * that uses the device returns it too. */
Test(sim_runtime, a_device_fault_is_sticky) {
  int* d;
  cudaStream_t s;
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(cudaMalloc((void**)&d, 64 * sizeof(int)), cudaSuccess);
  cr_assert_eq(cudaMemset(d, 0, 64 * sizeof(int)), cudaSuccess);
  /* The gate holds the stream, so both launches are accepted before the fault. */
  sem_init(&gate, 0, 0);
  cr_assert_eq(cudaLaunchHostFunc(s, wait_gate, NULL), cudaSuccess);
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){64, 1, 1}, s, d, 64, -1), cudaSuccess,
               "the fault is not the launch's error");
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){64, 1, 1}, s, d, 64, 5), cudaSuccess);
  sem_post(&gate);
  cr_assert_eq(cudaStreamSynchronize(s), cudaErrorIllegalAddress);
  cr_assert_eq(cudaGetLastError(), cudaErrorIllegalAddress);
  cr_assert_eq(nvcc_launch((dim3){1, 1, 1}, (dim3){64, 1, 1}, s, d, 64, 5), cudaErrorIllegalAddress);
  cr_assert_eq(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
  void* p = NULL;
  cr_assert_eq(cudaMalloc(&p, 16), cudaErrorIllegalAddress);
  cr_assert_eq(d[0], 0, "work after the fault ran");   /* the sim's device memory is host-addressable */
  int n = 0;
  cr_assert_eq(cudaGetDeviceCount(&n), cudaSuccess, "device queries still answer");
  cr_assert_str_eq(cudaGetErrorName(cudaErrorIllegalAddress), "cudaErrorIllegalAddress");
}

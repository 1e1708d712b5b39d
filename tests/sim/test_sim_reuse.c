/* Tests of handle reuse on the sim: as real drivers do, a destroyed stream's
 * value comes back from a later cuStreamCreate once its work is done, and an
 * unloaded module's function values come back for other kernels of the next
 * module; SIMCU_NO_REUSE=1 keeps every value unique. Interposers that key
 * tables by these values must cope with the former. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "drv_setup.h"
#include "simcu.h"

static const char ptx_a[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_one(.param .u64 a)\n{\n ret;\n}\n";
static const char ptx_b[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_two(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_one, 8);
SIMCU_KERNEL(k_one) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) = 1;
}

SIMCU_PARAMS(k_two, 8, 4);
SIMCU_KERNEL(k_two) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) = SIMCU_ARG(1, int);
}

static void start(int reuse) {
  if (!reuse)
    setenv("SIMCU_NO_REUSE", "1", 1);
  drv_setup();
}

Test(sim_reuse, a_destroyed_stream_value_comes_back) {
  start(1);
  CUstream first, s;
  OK(cuStreamCreate(&first, 0));
  OK(cuStreamDestroy(first));
  for (int i = 0; i < 100; i++) {
    OK(cuStreamCreate(&s, i % 2 ? CU_STREAM_NON_BLOCKING : 0));
    cr_assert_eq(s, first, "round %d", i);
    unsigned flags;
    OK(cuStreamGetFlags(s, &flags));
    cr_assert_eq(flags, i % 2 ? CU_STREAM_NON_BLOCKING : 0u, "the new stream's own flags");
    OK(cuStreamDestroy(s));
  }
}

Test(sim_reuse, a_stream_is_reused_only_once_its_work_is_done) {
  start(1);
  CUmodule m;
  CUfunction f;
  CUdeviceptr d;
  CUstream s, t;
  CUevent e;
  OK(cuModuleLoadData(&m, ptx_b));
  OK(cuModuleGetFunction(&f, m, "k_two"));
  OK(cuMemAlloc(&d, sizeof(int)));
  OK(cuEventCreate(&e, 0));
  /* While a destroyed stream's work is pending, its value is not handed out. */
  OK(cuStreamCreate(&s, 0));
  drv_gate_close(s);
  OK(cuStreamDestroy(s));
  OK(cuStreamCreate(&t, 0));
  cr_assert_neq(t, s, "reused while its work was pending");
  drv_gate_open();
  OK(cuCtxSynchronize());
  OK(cuStreamDestroy(t));
  CUstream u;
  OK(cuStreamCreate(&u, 0));
  cr_assert(u == s || u == t, "a finished stream's value comes back");

  OK(cuStreamCreate(&s, 0));
  unsigned long long old_id, new_id;
  OK(cuStreamGetId(s, &old_id));
  int v = 7;
  OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, (void*[]){&d, &v}, NULL));
  OK(cuEventRecord(e, s));
  OK(cuStreamDestroy(s));   /* its work still runs */
  OK(cuCtxSynchronize());
  OK(cuStreamCreate(&t, 0));
  cr_assert_eq(t, s);
  OK(cuStreamGetId(t, &new_id));
  cr_assert_neq(new_id, old_id, "a reused value is a new stream");
  /* The event recorded on the old stream stays usable. */
  OK(cuEventQuery(e));
  OK(cuStreamWaitEvent(t, e, 0));
  v = 9;
  OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, t, (void*[]){&d, &v}, NULL));
  OK(cuStreamSynchronize(t));
  cr_assert_eq(*(int*)(uintptr_t)d, 9);
}

Test(sim_reuse, an_unloaded_function_value_serves_the_next_kernel) {
  start(1);
  CUmodule ma, mb;
  CUfunction fa, fb;
  CUdeviceptr d;
  const char* name;
  OK(cuMemAlloc(&d, sizeof(int)));
  for (int round = 0; round < 20; round++) {
    OK(cuModuleLoadData(&ma, ptx_a));
    OK(cuModuleGetFunction(&fa, ma, "k_one"));
    OK(cuModuleUnload(ma));
    OK(cuModuleLoadData(&mb, ptx_b));
    OK(cuModuleGetFunction(&fb, mb, "k_two"));
    cr_assert_eq(fb, fa, "round %d", round);
    cr_assert_eq(mb, ma);
    OK(cuFuncGetName(&name, fb));
    cr_assert_str_eq(name, "k_two");
    size_t off, size;
    OK(cuFuncGetParamInfo(fb, 1, &off, &size));
    cr_assert_eq(size, 4, "the new kernel's parameter layout");
    int v = 100 + round;
    OK(cuLaunchKernel(fb, 1, 1, 1, 1, 1, 1, 0, NULL, (void*[]){&d, &v}, NULL));
    OK(cuCtxSynchronize());
    cr_assert_eq(*(int*)(uintptr_t)d, v, "the new kernel's body ran");
    OK(cuModuleUnload(mb));
  }
}

/* A graph keeps naming the function of its nodes after the function's module
 * is unloaded; CUDA leaves using it undefined. The sim answers
 * CUDA_ERROR_INVALID_VALUE (what instantiation, launch and upload document
 * for an invalid graph) and runs nothing, also when a later load hands out
 * the same handle value: an equal value is not the same function. A node
 * update naming a loaded function makes the executable launchable again. */
static void unloaded_function_in_graph(int reuse) {
  start(reuse);
  CUmodule ma, mb;
  CUfunction fa, fb;
  CUdeviceptr d;
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc(&d, sizeof(int)));
  OK(cuMemsetD32(d, 0, 1));
  OK(cuModuleLoadData(&ma, ptx_a));
  OK(cuModuleGetFunction(&fa, ma, "k_one"));
  CUDA_KERNEL_NODE_PARAMS p = {.func = fa, .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1,
                               .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1,
                               .kernelParams = (void*[]){&d}};
  CUgraph g;
  CUgraphNode node;
  CUgraphExec x, x2;
  OK(cuGraphCreate(&g, 0));
  OK(cuGraphAddKernelNode(&node, g, NULL, 0, &p));
  OK(cuGraphInstantiate(&x, g, 0));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  cr_assert_eq(*(int*)(uintptr_t)d, 1);
  OK(cuModuleUnload(ma));
  for (int loaded = 0; loaded < 2; loaded++) {
    cr_assert_eq(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE, "after unload (reloaded: %d)", loaded);
    cr_assert_eq(cuGraphUpload(x, s), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(cuGraphInstantiate(&x2, g, 0), CUDA_ERROR_INVALID_VALUE);
    CUDA_KERNEL_NODE_PARAMS got;
    cr_assert_eq(cuGraphKernelNodeGetParams(node, &got), CUDA_ERROR_INVALID_VALUE);
    CUgraphExecUpdateResultInfo info;
    cr_assert_eq(cuGraphExecUpdate(x, g, &info), CUDA_ERROR_INVALID_VALUE);
    cr_assert_eq(info.result, CU_GRAPH_EXEC_UPDATE_ERROR);
    cr_assert_eq(info.errorNode, node);
    OK(cuStreamSynchronize(s));
    cr_assert_eq(*(int*)(uintptr_t)d, 1, "nothing ran");
    if (loaded == 0) {
      OK(cuModuleLoadData(&mb, ptx_b));
      OK(cuModuleGetFunction(&fb, mb, "k_two"));
      cr_assert_eq(fb == fa, reuse, "the value comes back only with reuse");
    }
  }
  /* The node now names k_two: the executable runs again. */
  int v = 42;
  CUDA_KERNEL_NODE_PARAMS pb = p;
  pb.func = fb;
  pb.kernelParams = (void*[]){&d, &v};
  OK(cuGraphExecKernelNodeSetParams(x, node, &pb));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  cr_assert_eq(*(int*)(uintptr_t)d, 42);
  /* So does the graph once its node is set to it. */
  OK(cuGraphKernelNodeSetParams(node, &pb));
  OK(cuGraphInstantiate(&x2, g, 0));
  v = 7;
  OK(cuGraphExecKernelNodeSetParams(x2, node, &pb));
  OK(cuGraphLaunch(x2, s));
  OK(cuStreamSynchronize(s));
  cr_assert_eq(*(int*)(uintptr_t)d, 7);
}

Test(sim_reuse, a_graph_naming_an_unloaded_function_fails_cleanly) {
  unloaded_function_in_graph(1);
}

Test(sim_reuse, a_graph_naming_an_unloaded_function_fails_cleanly_without_reuse) {
  unloaded_function_in_graph(0);
}

/* A primary context reset destroys the context, its streams and its events.
 * Threads that keep the old context current get CONTEXT_IS_DESTROYED, the
 * old handles INVALID_HANDLE, and the new primary context has another value,
 * so code that keeps a context or a stream's context across a reset is
 * caught; a stream value may come back with other flags. */
static CUcontext other_ctx;
static pthread_barrier_t reset_bar;
static CUresult other_result;

static void* other_thread(void* arg) {
  (void)arg;
  cuCtxSetCurrent(other_ctx);
  pthread_barrier_wait(&reset_bar);   /* the main thread resets */
  pthread_barrier_wait(&reset_bar);
  CUstream s;
  other_result = cuStreamCreate(&s, 0);
  return NULL;
}

Test(sim_reuse, a_context_reset_destroys_the_context_and_its_streams_and_events) {
  start(1);
  CUcontext c1, c2, cur, sc;
  OK(cuCtxGetCurrent(&c1));
  other_ctx = c1;
  pthread_barrier_init(&reset_bar, NULL, 2);
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, other_thread, NULL), 0);
  CUstream nb, blk;
  CUevent e;
  OK(cuStreamCreate(&nb, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&blk, CU_STREAM_DEFAULT));
  OK(cuEventCreate(&e, 0));
  OK(cuEventRecord(e, nb));
  OK(cuStreamGetCtx(nb, &sc));
  cr_assert_eq(sc, c1);
  pthread_barrier_wait(&reset_bar);
  OK(cuDevicePrimaryCtxReset(0));
  pthread_barrier_wait(&reset_bar);
  pthread_join(th, NULL);
  cr_assert_eq(other_result, CUDA_ERROR_CONTEXT_IS_DESTROYED, "another thread's current context");
  cr_assert_eq(cuStreamSynchronize(nb), CUDA_ERROR_CONTEXT_IS_DESTROYED);
  OK(cuCtxGetCurrent(&cur));
  cr_assert_eq(cur, c1, "the destroyed context stays current until replaced");
  unsigned flags;
  int active;
  OK(cuDevicePrimaryCtxGetState(0, &flags, &active));
  cr_assert_eq(active, 1, "a reset does not release the retain");
  OK(cuDevicePrimaryCtxRetain(&c2, 0));
  cr_assert_neq(c2, c1, "the new primary context is a new context");
  cr_assert_eq(cuCtxSetCurrent(c1), CUDA_ERROR_INVALID_CONTEXT, "the old one is no context");
  cr_assert_eq(cuCtxSynchronize_v2(c1), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuCtxSetCurrent(c2));
  OK(cuCtxSynchronize_v2(c2));
  cr_assert_eq(cuStreamSynchronize(nb), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuStreamSynchronize(blk), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuStreamGetCtx(nb, &sc), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuEventRecord(e, NULL), CUDA_ERROR_INVALID_HANDLE);
  OK(cuStreamGetCtx(CU_STREAM_LEGACY, &sc));
  cr_assert_eq(sc, c2);
  /* A new stream may take an old value, with its own flags and context. */
  CUstream t;
  OK(cuStreamCreate(&t, CU_STREAM_DEFAULT));
  cr_assert(t == nb || t == blk, "a destroyed stream's value comes back");
  OK(cuStreamGetFlags(t, &flags));
  cr_assert_eq(flags, (unsigned)CU_STREAM_DEFAULT);
  OK(cuStreamGetCtx(t, &sc));
  cr_assert_eq(sc, c2);
  CUmodule m;
  CUfunction f;
  CUdeviceptr d;
  OK(cuModuleLoadData(&m, ptx_a));
  OK(cuModuleGetFunction(&f, m, "k_one"));
  OK(cuMemAlloc(&d, sizeof(int)));
  OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, t, (void*[]){&d}, NULL));
  OK(cuStreamSynchronize(t));
  cr_assert_eq(*(int*)(uintptr_t)d, 1, "the new context runs work");
}

Test(sim_reuse, no_reuse_keeps_values_unique) {
  start(0);
  CUstream s, t;
  OK(cuStreamCreate(&s, 0));
  OK(cuStreamDestroy(s));
  OK(cuStreamCreate(&t, 0));
  cr_assert_neq(t, s);
  cr_assert_eq(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE, "the old value stays dead");
  CUmodule ma, mb;
  CUfunction fa, fb;
  OK(cuModuleLoadData(&ma, ptx_a));
  OK(cuModuleGetFunction(&fa, ma, "k_one"));
  OK(cuModuleUnload(ma));
  OK(cuModuleLoadData(&mb, ptx_b));
  OK(cuModuleGetFunction(&fb, mb, "k_two"));
  cr_assert_neq(fb, fa);
  const char* name;
  cr_assert_eq(cuFuncGetName(&name, fa), CUDA_ERROR_INVALID_HANDLE);
}

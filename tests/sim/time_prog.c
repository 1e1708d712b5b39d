/* time_prog: a fixed single-threaded program for the determinism tests of
 * test_sim_time.c. It mixes what makes simulated time hard to keep
 * independent of real scheduling: kernels whose CPU bodies take real time,
 * cross-stream event waits taken while that work may or may not have run,
 * the legacy stream against blocking streams, a graph, polling queries,
 * synchronous copies and a host function. Its SIMCU_REPORT must carry the
 * same sim_end_ns and sim_host_ns on every run and with SIMCU_SYNC=1. */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim_test.h"
#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_work(.param .u64 a, .param .u32 n, .param .u32 spin)\n{\n ret;\n}\n";

/* a[i] += i, after spinning for `spin` iterations per block (real time only). */
SIMCU_PARAMS(k_work, 8, 4, 4);
SIMCU_KERNEL(k_work) {
  int* a = SIMCU_ARG(0, int*);
  int n = SIMCU_ARG(1, int);
  unsigned spin = SIMCU_ARG(2, unsigned);
  volatile unsigned sink = 0;
  for (unsigned i = 0; i < spin; i++)
    sink += i;
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      a[i] += i;
  }
}

#define CK(call)                                                                  \
  do {                                                                            \
    CUresult r_ = (call);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                     \
      fprintf(stderr, "time_prog: %s failed: %d\n", #call, (int)r_);              \
      exit(1);                                                                    \
    }                                                                             \
  } while (0)

static CUfunction f;

static void work(CUstream s, CUdeviceptr a, int n, unsigned spin) {
  void* args[] = {&a, &n, &spin};
  CK(cuLaunchKernel(f, (unsigned)(n + 127) / 128, 1, 1, 128, 1, 1, 0, s, args, NULL));
}

static void host_fn(void* p) {
  (*(int*)p)++;
}

int main(void) {
  CK(sim_test_start(ptx, "k_work", &f, NULL));
  CUstream a, b, blocking;
  CUevent e, t0, t1;
  CUdeviceptr d;
  const int n = 1 << 16;
  int host = 0, h[4];
  CK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CK(cuStreamCreate(&blocking, CU_STREAM_DEFAULT));
  CK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  CK(cuEventCreate(&t0, 0));
  CK(cuEventCreate(&t1, 0));
  CK(cuMemAlloc(&d, n * sizeof(int)));
  CK(cuMemsetD32(d, 0, n));
  for (int round = 0; round < 20; round++) {
    /* A slow body on a, then b waits for it: on worker threads the wait is
     * taken while a's kernel still runs; inline it has long finished. */
    CK(cuEventRecord(t0, a));
    work(a, d, n, 3000);
    CK(cuEventRecord(e, a));
    CK(cuStreamWaitEvent(b, e, 0));
    work(b, d, n / 4, 0);
    /* Blocking and legacy streams order against each other. */
    work(blocking, d, n / 2, 300);
    work(NULL, d, 128, 0);
    work(blocking, d, 128, 0);
    if (round % 4 == 0) {
      CK(cuLaunchHostFunc(blocking, host_fn, &host));
      CK(cuStreamSynchronize(blocking));
    }
    /* Poll b until it is done in simulated time. */
    while (cuStreamQuery(b) == CUDA_ERROR_NOT_READY)
      ;
    CK(cuEventRecord(t1, a));
    CK(cuEventSynchronize(t1));
    float ms;
    CK(cuEventElapsedTime(&ms, t0, t1));
    CK(cuMemcpyDtoH(h, d, sizeof(h)));
  }
  /* A graph of the same shape, launched a few times. */
  CUgraph g;
  CUgraphExec x;
  CK(cuStreamBeginCapture(a, CU_STREAM_CAPTURE_MODE_GLOBAL));
  work(a, d, n, 1000);
  work(a, d, 128, 0);
  work(a, d, 128, 0);
  CK(cuStreamEndCapture(a, &g));
  CK(cuGraphInstantiate(&x, g, 0));
  for (int i = 0; i < 5; i++) {
    CK(cuGraphLaunch(x, a));
    CK(cuEventRecord(e, a));
    CK(cuStreamWaitEvent(NULL, e, 0));
    work(NULL, d, 128, 0);
  }
  CK(cuCtxSynchronize());
  printf("host functions %d, h[3] %d\n", host, h[3]);
  return 0;
}

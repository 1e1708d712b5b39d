/* stress_sim.c: many host threads driving the simulated driver at once
 * (streams, events across threads, captures, graph launches, the legacy and
 * per-thread streams, short-lived streams whose values other threads get
 * back while events still name them). Exits 0 when every thread got the
 * results that stream order demands. A plain program, not Criterion, so it also runs under TSan
 * (Criterion's runner does not).
 *
 * Every capture ends before any thread touches the legacy stream (a barrier):
 * a legacy-stream op while another thread captures on a blocking stream is
 * CUDA_ERROR_STREAM_CAPTURE_IMPLICIT and invalidates that capture, as in CUDA,
 * so without the barrier the outcome would depend on thread timing. */
#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "simcu.h"

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                             unsigned by, unsigned bz, unsigned smem, CUstream s, void** params,
                             void** extra);
CUresult cuStreamSynchronize_ptsz(CUstream s);

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_inc(.param .u64 a, .param .u32 n)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_inc, 8, 4);
SIMCU_KERNEL(k_inc) {
  int* a = SIMCU_ARG(0, int*);
  int n = SIMCU_ARG(1, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      a[i] += 1;
  }
}

#define THREADS 6
#define ROUNDS 40
#define N 256

static CUfunction f;
static CUevent shared_ev[THREADS];
static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

/* On failure: counts it, and returns CK_RET from the enclosing function. */
#define CK(call)                                                                   \
  do {                                                                             \
    CUresult r_ = (call);                                                          \
    if (r_ != CUDA_SUCCESS) {                                                      \
      fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #call, (int)r_);     \
      pthread_mutex_lock(&fail_lock);                                              \
      failures++;                                                                  \
      pthread_mutex_unlock(&fail_lock);                                            \
      return CK_RET;                                                               \
    }                                                                              \
  } while (0)

static CUcontext ctx;
static pthread_barrier_t captured;   /* every thread's capture has ended */

/* Captures its graph: 0, or -1 after counting a failure. */
static int setup(CUstream* s, CUdeviceptr* a, CUgraph* g, CUgraphExec* x, int id, int* n) {
#undef CK_RET
#define CK_RET -1
  CK(cuCtxSetCurrent(ctx));   /* a new thread has no current context */
  CK(cuStreamCreate(s, id % 2 ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
  CK(cuMemAlloc(a, N * sizeof(int)));
  CK(cuMemsetD32Async(*a, 0, N, *s));
  void* args[] = {a, n};
  /* A captured graph of 3 increments, launched every round. */
  CK(cuStreamBeginCapture(*s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  for (int k = 0; k < 3; k++)
    CK(cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, *s, args, NULL));
  CK(cuStreamEndCapture(*s, g));
  CK(cuGraphInstantiate(x, *g, 0));
  return 0;
}

static void* worker(void* arg) {
#undef CK_RET
#define CK_RET NULL
  int id = (int)(long)arg;
  CUstream s;
  CUdeviceptr a;
  CUgraph g;
  CUgraphExec x;
  int n = N, h[N];
  int ok = setup(&s, &a, &g, &x, id, &n) == 0;
  pthread_barrier_wait(&captured);
  if (!ok)
    return NULL;
  void* args[] = {&a, &n};
  CUdeviceptr b;
  CUevent tmp_done;
  int tmp_rounds = 0, hb[N];
  CK(cuMemAlloc(&b, N * sizeof(int)));
  CK(cuMemsetD32(b, 0, N));
  CK(cuEventCreate(&tmp_done, CU_EVENT_DISABLE_TIMING));
  void* bargs[] = {&b, &n};
  for (int r = 0; r < ROUNDS; r++) {
    if (r % 4 == 1) {
      /* A stream that lives for one op: destroyed with its work pending, its
       * value comes back to whichever thread creates a stream next. */
      CUstream tmp;
      CK(cuStreamCreate(&tmp, CU_STREAM_NON_BLOCKING));
      CK(cuStreamWaitEvent(tmp, shared_ev[id], 0));
      CK(cuStreamWaitEvent(tmp, tmp_done, 0));   /* after the previous short-lived stream */
      CK(cuLaunchKernel(f, 1, 1, 1, N, 1, 1, 0, tmp, bargs, NULL));
      CK(cuEventRecord(tmp_done, tmp));
      CK(cuStreamDestroy(tmp));
      tmp_rounds++;
    }
    CK(cuLaunchKernel(f, 2, 1, 1, N / 2, 1, 1, 0, s, args, NULL));
    CK(cuGraphLaunch(x, s));
    CK(cuEventRecord(shared_ev[id], s));
    CK(cuStreamWaitEvent(s, shared_ev[(id + 1) % THREADS], 0));   /* another thread's event */
    if (r % 8 == 0)
      CK(cuStreamQuery(s) == CUDA_ERROR_NOT_READY ? CUDA_SUCCESS : cuStreamQuery(s));
  }
  /* The per-thread default stream is this thread's own. */
  CK(cuStreamSynchronize(s));
  CK(cuLaunchKernel_ptsz(f, 1, 1, 1, N, 1, 1, 0, NULL, args, NULL));
  CK(cuStreamSynchronize_ptsz(NULL));
  CK(cuMemcpyDtoH(h, a, sizeof(h)));
  for (int i = 0; i < N; i++)
    if (h[i] != ROUNDS * 4 + 1) {
      fprintf(stderr, "thread %d: a[%d] = %d, want %d\n", id, i, h[i], ROUNDS * 4 + 1);
      CK(CUDA_ERROR_UNKNOWN);
    }
  /* The short-lived streams ran in order (each after the previous one's
   * event, recorded before the next began). */
  CK(cuEventSynchronize(tmp_done));
  CK(cuMemcpyDtoH(hb, b, sizeof(hb)));
  for (int i = 0; i < N; i++)
    if (hb[i] != tmp_rounds) {
      fprintf(stderr, "thread %d: b[%d] = %d, want %d\n", id, i, hb[i], tmp_rounds);
      CK(CUDA_ERROR_UNKNOWN);
    }
  CK(cuEventDestroy(tmp_done));
  CK(cuMemFree(b));
  CK(cuGraphExecDestroy(x));
  CK(cuGraphDestroy(g));
  CK(cuMemFree(a));
  CK(cuStreamDestroy(s));
  return NULL;
}

int main(void) {
  CUmodule m;
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
      cuCtxSetCurrent(ctx) != CUDA_SUCCESS || cuModuleLoadData(&m, ptx) != CUDA_SUCCESS ||
      cuModuleGetFunction(&f, m, "k_inc") != CUDA_SUCCESS)
    return 1;
  for (int i = 0; i < THREADS; i++)
    if (cuEventCreate(&shared_ev[i], CU_EVENT_DISABLE_TIMING) != CUDA_SUCCESS)
      return 1;
  if (pthread_barrier_init(&captured, NULL, THREADS) != 0)
    return 1;
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, worker, (void*)i);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  if (cuCtxSynchronize() != CUDA_SUCCESS)
    return 1;
  for (int i = 0; i < THREADS; i++)
    cuEventDestroy(shared_ev[i]);
  pthread_barrier_destroy(&captured);
  printf("stress: %d threads x %d rounds, %d failures\n", THREADS, ROUNDS, failures);
  return failures != 0;
}

// Graph mode's flush rules, one mode each: a CUDA program that knows nothing of
// grape, built so that a missing flush gives a wrong result or a hang on the
// asynchronous simulated device. Every mode repeats its step so that the path
// becomes known and the shim holds it (test_graph.py checks that it did), and
// checks each step's result. Prints "ok <mode>" at the end.
//
// The writes before each flush point alternate between two paths, one the
// prefix of the other (writes()): a known path with no longer known path
// after it is replayed as soon as its last op is held, so only the shorter
// path, held until the flush point, tests the flush. The longer one comes
// first, so that it is learnt whole (a region that runs past the end of a
// known path replays that path and starts anew).
//
// usage: graph_rules MODE [ITERS]
//   d2h        kernels, then a device-to-host copy of their result into pinned memory
//              (an op of the region: held, a node of the graph), then a sync
//   d2h_pageable  kernels, then a copy of their result into pageable memory, read
//              at once with no sync (such a copy returns only once done)
//   event      kernels on A, an event record, a wait on B, a kernel on B that reads
//   legacy     held kernels on a blocking stream, then the legacy stream reads (and back)
//   legacy_mid the same read from the middle of a legacy-stream chunk that left its
//              known path (its launches recorded after they reach the driver)
//   pinned_mid from the middle of a chunk that left its known path, a kernel whose
//              parameter points into pinned memory: a barrier (collective.h), a
//              region of its own (test_graph.py reads its path's count)
//   hostfn     held kernels write managed memory that a host function then reads
//   spin       a host thread spins on managed memory that a held kernel writes (pinned
//              memory would make the kernel a barrier: collective.h)
//   waitevent  held kernels on S set a flag that T's running kernel waits for;
//              S then waits on T's event (the held work must go first)
//   eventsync  held kernels on S set a flag that T's kernel waits for; the host
//              then synchronises T's event (a call that waits on the GPU: the
//              watchdog must still submit S's held work meanwhile)
//   invalid    a known path whose next launch has an invalid configuration
//   threads    4 threads, 2 streams each, events between them
//   fork       held paths, then a forked child that exits, then more paths
//   funcattr   a held launch under a raised dynamic shared memory limit, then the
//              program lowers the limit (the launch must still run, no error)
//   newthread  held work, then a new thread whose first runtime call flushes it
//              (before the runtime has made a context current on that thread)
//   sticky     a device fault: every later launch returns the sticky error
//              (prints what each call returned: compared with no shim)
//   implicit   a legacy-stream launch while a blocking stream captures: the
//              driver's error, not a held success (prints the results)
//   long       one long run of launches with no sync (cut by GRAPE_CHUNK only)
//   reset      hot paths on a stream, cudaDeviceReset, a new stream (the same
//              handle value, another kind) with hot paths again, three times
//   prefix     two recurring paths, one the prefix of the other (prints nothing
//              more: the test compares the report's path counts with observe mode)
//   changes    a replayed path whose launches change in place: a 4-byte parameter
//              before an alignment gap, a grid dimension, the function, a block
//              dimension, the dynamic shared memory, the stream (each step's
//              result tells whether the replay ran what was launched)
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "simcu.h"

extern "C" __global__ void set_val(int* p, int v) { *p = v; }
extern "C" __global__ void copy_add(const int* src, int* dst, int a) { *dst = *src + a; }
extern "C" __global__ void smem_set(int* p, int v) {
  extern __shared__ int sh[];
  sh[0] = v;
  *p = sh[0];
}
// out[blockIdx.x] = v * 1000 + w * 10 + u (+ 5 for put_alt): two adjacent
// 4-byte parameters, a pointer, and a 4-byte one before the block's
// alignment gap.
extern "C" __global__ void put(int v, int w, int* out, int u) { out[blockIdx.x] = v * 1000 + w * 10 + u; }
extern "C" __global__ void put_alt(int v, int w, int* out, int u) {
  out[blockIdx.x] = v * 1000 + w * 10 + u + 5;
}
// out[0] = v * 1000 + blockDim.x * 10 + (dynamic shared bytes) / 16.
extern "C" __global__ void put_shape(int v, int* out) {
  unsigned dyn;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dyn));
  if (threadIdx.x == 0)
    out[0] = v * 1000 + blockDim.x * 10 + dyn / 16;
}
extern "C" __global__ void fault(int* p) { p[-(1 << 30)] = 0; }
extern "C" __global__ void pin_put(int* p, int v) { *p = v; }   // p: pinned host memory
// Waits (up to about 3 s) for *flag == want; *out = 1 if it came, 0 if not.
extern "C" __global__ void spin_until(volatile int* flag, int want, int* out) {
  long long t0 = clock64();
  while (*flag != want && clock64() - t0 < 6000000000LL)
    ;
  *out = *flag == want;
}

// CPU bodies for the sim (a real GPU never looks at these).
extern "C" {
SIMCU_KERNEL(set_val) {
  int* p = SIMCU_ARG(0, int*);
  *p = SIMCU_ARG(1, int);
}
SIMCU_KERNEL(copy_add) {
  const int* src = SIMCU_ARG(0, const int*);
  int* dst = SIMCU_ARG(1, int*);
  *dst = *src + SIMCU_ARG(2, int);
}
SIMCU_KERNEL(smem_set) {
  int* sh = (int*)simcu_blk->shared;
  sh[0] = SIMCU_ARG(1, int);
  *SIMCU_ARG(0, int*) = sh[0];
}
SIMCU_KERNEL(put) {
  SIMCU_ARG(2, int*)[simcu_blk->idx.x] = SIMCU_ARG(0, int) * 1000 + SIMCU_ARG(1, int) * 10 + SIMCU_ARG(3, int);
}
SIMCU_KERNEL(put_alt) {
  SIMCU_ARG(2, int*)[simcu_blk->idx.x] = SIMCU_ARG(0, int) * 1000 + SIMCU_ARG(1, int) * 10 + SIMCU_ARG(3, int) + 5;
}
SIMCU_KERNEL(put_shape) {
  *SIMCU_ARG(1, int*) = SIMCU_ARG(0, int) * 1000 + (int)simcu_blk->block.x * 10 + (int)(simcu_blk->shared_bytes / 16);
}
SIMCU_KERNEL(pin_put) {
  *SIMCU_ARG(0, int*) = SIMCU_ARG(1, int);
}
SIMCU_KERNEL(fault) {
  (void)simcu_args;
  SIMCU_FAULT(SIMCU_FAULT_ILLEGAL_ADDRESS);
}
SIMCU_KERNEL(spin_until) {
  volatile int* flag = SIMCU_ARG(0, volatile int*);
  int want = SIMCU_ARG(1, int);
  int* out = SIMCU_ARG(2, int*);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do {
    if (*flag == want)
      break;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1000000000LL + (t.tv_nsec - t0.tv_nsec) < 3000000000LL);
  *out = *flag == want;
}
}

#define CHECK(x)                                                                         \
  do {                                                                                   \
    cudaError_t e_ = (x);                                                                \
    if (e_ != cudaSuccess) {                                                             \
      fprintf(stderr, "graph_rules: %s failed at line %d: %s\n", #x, __LINE__,           \
              cudaGetErrorName(e_));                                                     \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

#define EXPECT(cond, ...)                                                \
  do {                                                                   \
    if (!(cond)) {                                                       \
      fprintf(stderr, "graph_rules: " __VA_ARGS__);                      \
      fprintf(stderr, "\n");                                             \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

static int iters = 12;
static int *x, *x2, *y, *h;   // device ints, and one pinned host int
// Managed ints the host reads while held kernels may write them: a kernel
// with a pointer into pinned memory is never held (a collective or spin
// kernel may wait on the host through it), so the rules of held work are
// tested on managed memory.
static int* m;

// x = v, x2 = x; on the first two and every odd step one more op (x2 = x2 +
// 0): two known paths, the first the prefix of the second.
static void writes(cudaStream_t s, int* x_, int* x2_, int v, int i) {
  set_val<<<1, 1, 0, s>>>(x_, v);
  copy_add<<<1, 1, 0, s>>>(x_, x2_, 0);
  if (i < 2 || i % 2)
    copy_add<<<1, 1, 0, s>>>(x2_, x2_, 0);
}

static void alloc_common(void) {
  CHECK(cudaMalloc((void**)&x, sizeof(int)));
  CHECK(cudaMalloc((void**)&x2, sizeof(int)));
  CHECK(cudaMalloc((void**)&y, sizeof(int)));
  CHECK(cudaMallocHost((void**)&h, 4 * sizeof(int)));
  CHECK(cudaMallocManaged((void**)&m, 4 * sizeof(int), cudaMemAttachGlobal));
}

static void mode_d2h(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < iters; i++) {
    writes(s, x, x2, 100 + i, i);
    CHECK(cudaMemcpyAsync(h, x2, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(*h == 100 + i, "d2h: step %d read %d, want %d", i, *h, 100 + i);
  }
}

static void mode_d2h_pageable(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  int* host = (int*)malloc(sizeof(int));
  for (int i = 0; i < iters; i++) {
    writes(s, x, x2, 100 + i, i);
    *host = -1;
    CHECK(cudaMemcpyAsync(host, x2, sizeof(int), cudaMemcpyDeviceToHost, s));
    EXPECT(*host == 100 + i, "d2h_pageable: step %d read %d, want %d", i, *host, 100 + i);
  }
  CHECK(cudaStreamSynchronize(s));
  free(host);
}

static void mode_event(void) {
  cudaStream_t a, b;
  cudaEvent_t e;
  CHECK(cudaStreamCreate(&a));
  CHECK(cudaStreamCreate(&b));
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  for (int i = 0; i < iters; i++) {
    writes(a, x, x2, i, i);
    CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
    copy_add<<<1, 1, 0, b>>>(x2, y, 1000);
    CHECK(cudaMemcpyAsync(h, y, sizeof(int), cudaMemcpyDeviceToHost, b));
    CHECK(cudaStreamSynchronize(b));
    EXPECT(*h == 1000 + i, "event: step %d read %d, want %d", i, *h, 1000 + i);
    CHECK(cudaStreamSynchronize(a));
  }
}

static void mode_legacy(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));   // a blocking stream
  for (int i = 0; i < iters; i++) {
    // Held on s; the legacy stream's kernel must run after them.
    writes(s, x, x2, i, i);
    copy_add<<<1, 1, 0, 0>>>(x2, y, 5);
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemcpy(h, y, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(*h == i + 5, "legacy after blocking: step %d read %d, want %d", i, *h, i + 5);
    // Held on the legacy stream; s's kernel must run after them.
    writes(0, x, x2, 2 * i, i);
    copy_add<<<1, 1, 0, s>>>(x2, y, 7);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(h, y, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(*h == 2 * i + 7, "blocking after legacy: step %d read %d, want %d", i, *h, 2 * i + 7);
  }
}

static void mode_legacy_mid(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));   // a blocking stream
  int* z;
  CHECK(cudaMalloc((void**)&z, sizeof(int)));
  for (int i = 0; i < iters; i++) {
    // One launch more each step: the legacy stream's chunk leaves the path
    // the last step learnt, and the rest of it goes to the driver as it comes.
    for (int j = 0; j <= i + 1; j++)
      set_val<<<1, 1, 0, 0>>>(z, j);
    // Held on s while the legacy chunk runs eagerly; the legacy stream's next
    // kernel must run after them.
    writes(s, x, x2, i, i);
    copy_add<<<1, 1, 0, 0>>>(x2, y, 5);
    CHECK(cudaStreamSynchronize(0));
    CHECK(cudaMemcpy(h, y, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(*h == i + 5, "legacy mid-chunk after blocking: step %d read %d, want %d", i, *h, i + 5);
    CHECK(cudaStreamSynchronize(s));
  }
  CHECK(cudaFree(z));
}

static void mode_pinned_mid(void) {
  cudaStream_t b;
  CHECK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  int* z;
  CHECK(cudaMalloc((void**)&z, sizeof(int)));
  for (int i = 0; i < iters; i++) {
    for (int j = 0; j <= i + 1; j++)   // one more each step: the chunk leaves its path
      set_val<<<1, 1, 0, b>>>(z, j);
    pin_put<<<1, 1, 0, b>>>(h, 100 + i);
    CHECK(cudaStreamSynchronize(b));
    EXPECT(*h == 100 + i, "pinned mid-chunk: step %d read %d, want %d", i, *h, 100 + i);
  }
  CHECK(cudaFree(z));
  CHECK(cudaStreamDestroy(b));
}

static int host_seen[64];
static void CUDART_CB read_pinned(void* arg) {
  int i = (int)(long)arg;
  host_seen[i % 64] = m[1];
}

static void mode_hostfn(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < iters; i++) {
    writes(s, m, m + 1, 10 * i, i);
    CHECK(cudaLaunchHostFunc(s, read_pinned, (void*)(long)i));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(host_seen[i % 64] == 10 * i, "hostfn: step %d saw %d, want %d", i, host_seen[i % 64],
           10 * i);
  }
}

static void mode_spin(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  volatile int* flag = m;
  for (int i = 0; i < iters; i++) {
    *flag = 0;
    set_val<<<1, 1, 0, s>>>(x, i);
    set_val<<<1, 1, 0, s>>>((int*)flag, i + 1);
    // No CUDA call while waiting: only the watchdog can release held work.
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
      clock_gettime(CLOCK_MONOTONIC, &t);
      EXPECT(t.tv_sec - t0.tv_sec < 10, "spin: step %d: the flag never came (deadlock)", i);
    } while (*flag != i + 1);
    copy_add<<<1, 1, 0, s>>>(x, y, 0);
    CHECK(cudaStreamSynchronize(s));
  }
}

// Two non-blocking streams and an event without timing (eventsync, waitevent).
static void two_streams_event(cudaStream_t* s, cudaStream_t* t, cudaEvent_t* e) {
  CHECK(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(t, cudaStreamNonBlocking));
  CHECK(cudaEventCreateWithFlags(e, cudaEventDisableTiming));
}

static void mode_eventsync(void) {
  cudaStream_t s, t;
  cudaEvent_t e;
  two_streams_event(&s, &t, &e);
  for (int i = 0; i < iters; i++) {
    set_val<<<1, 1, 0, s>>>(x2, i);
    set_val<<<1, 1, 0, s>>>(x, i + 1);         // the flag: held, S's path goes on below
    spin_until<<<1, 1, 0, t>>>(x, i + 1, y);   // waits (up to about 3 s) for S's flag
    CHECK(cudaEventRecord(e, t));             // T's work goes to the driver
    CHECK(cudaEventSynchronize(e));           // ends no S region: the watchdog submits its flag
    copy_add<<<1, 1, 0, s>>>(y, x2, 0);
    CHECK(cudaMemcpyAsync(h, x2, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(*h == 1, "eventsync: step %d: the waiting kernel never saw the flag", i);
  }
}

static void mode_waitevent(void) {
  cudaStream_t s, t;
  cudaEvent_t e;
  two_streams_event(&s, &t, &e);
  for (int i = 0; i < iters; i++) {
    spin_until<<<1, 1, 0, t>>>(x, i + 1, y);   // runs at once: waits for s's flag
    CHECK(cudaEventRecord(e, t));
    set_val<<<1, 1, 0, s>>>(x2, i);
    set_val<<<1, 1, 0, s>>>(x, i + 1);         // the flag
    CHECK(cudaStreamWaitEvent(s, e, 0));      // s's held work was issued before this wait
    copy_add<<<1, 1, 0, s>>>(y, x2, 0);
    CHECK(cudaMemcpyAsync(h, x2, sizeof(int), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    EXPECT(*h == 1, "waitevent: step %d: the waiting kernel never saw the flag", i);
  }
}

static void mode_invalid(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < iters; i++) {
    set_val<<<1, 1, 0, s>>>(x, i);
    copy_add<<<1, 1, 0, s>>>(x, y, 1);
    CHECK(cudaStreamSynchronize(s));
  }
  // The known path's first op is held; its second has an invalid block.
  set_val<<<1, 1, 0, s>>>(x, 42);
  copy_add<<<1, 2048, 0, s>>>(x, y, 1);
  cudaError_t launch = cudaGetLastError();
  printf("invalid block: %s\n", cudaGetErrorName(launch));
  copy_add<<<1, 1, 1 << 30, s>>>(x, y, 1);
  printf("invalid shared memory: %s\n", cudaGetErrorName(cudaGetLastError()));
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, x, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(*h == 42, "invalid: the held op before the invalid launch did not run (%d)", *h);
}

typedef struct worker_s {
  int id;
  int* buf;   // 4 device ints of its own
} worker_t;

static void* worker_main(void* arg) {
  worker_t* w = (worker_t*)arg;
  cudaStream_t a, b;
  cudaEvent_t e;
  int* host;
  CHECK(cudaStreamCreate(&a));
  CHECK(cudaStreamCreate(&b));
  CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CHECK(cudaMallocHost((void**)&host, sizeof(int)));
  for (int i = 0; i < iters; i++) {
    int v = 1000 * w->id + i;
    set_val<<<1, 1, 0, a>>>(w->buf, v);
    copy_add<<<1, 1, 0, a>>>(w->buf, w->buf + 1, 1);
    CHECK(cudaEventRecord(e, a));
    CHECK(cudaStreamWaitEvent(b, e, 0));
    copy_add<<<1, 1, 0, b>>>(w->buf + 1, w->buf + 2, 1);
    copy_add<<<1, 1, 0, b>>>(w->buf + 2, w->buf + 3, 1);
    CHECK(cudaMemcpyAsync(host, w->buf + 3, sizeof(int), cudaMemcpyDeviceToHost, b));
    CHECK(cudaStreamSynchronize(b));
    EXPECT(*host == v + 3, "threads: worker %d step %d read %d, want %d", w->id, i, *host, v + 3);
  }
  CHECK(cudaStreamSynchronize(a));
  return NULL;
}

static void mode_threads(void) {
  pthread_t th[4];
  worker_t w[4];
  for (int t = 0; t < 4; t++) {
    w[t].id = t;
    CHECK(cudaMalloc((void**)&w[t].buf, 4 * sizeof(int)));
    pthread_create(&th[t], NULL, worker_main, &w[t]);
  }
  for (int t = 0; t < 4; t++)
    pthread_join(th[t], NULL);
}

static void mode_fork(void) {
  mode_d2h();
  fflush(stdout);
  pid_t pid = fork();
  EXPECT(pid >= 0, "fork failed");
  if (pid == 0)
    exit(0);   // a child that does no CUDA work (as data-loader workers do)
  int st;
  waitpid(pid, &st, 0);
  EXPECT(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed");
  mode_d2h();
}

// The FlashAttention idiom: the limit is set right before each launch. On
// every third step it is lowered after a launch that needed the higher one:
// that launch was issued under 60 KB and must run as issued.
static void mode_funcattr(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < iters; i++) {
    CHECK(cudaFuncSetAttribute(smem_set, cudaFuncAttributeMaxDynamicSharedMemorySize, 60 * 1024));
    set_val<<<1, 1, 0, s>>>(x, i);
    smem_set<<<1, 1, 60 * 1024, s>>>(y, i);
    CHECK(cudaGetLastError());
    if (i % 3 == 2)
      CHECK(cudaFuncSetAttribute(smem_set, cudaFuncAttributeMaxDynamicSharedMemorySize, 50 * 1024));
    copy_add<<<1, 1, 0, s>>>(x, x2, 1);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(h, y, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(*h == i, "funcattr: step %d: the held launch wrote %d", i, *h);
  }
}

static void* first_call_reads(void* arg) {
  int* out = (int*)arg;
  // This thread's first runtime call: a synchronous copy, which orders
  // against every stream (the held work on the main thread's stream).
  cudaError_t e = cudaMemcpy(out, x2, sizeof(int), cudaMemcpyDeviceToHost);
  if (e != cudaSuccess)
    *out = -1000 - (int)e;
  return NULL;
}

static void mode_newthread(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < iters; i++) {
    writes(s, x, x2, 300 + i, i);
    int seen = 0;
    pthread_t t;
    pthread_create(&t, NULL, first_call_reads, &seen);
    pthread_join(t, NULL);
    CHECK(cudaStreamSynchronize(s));
    EXPECT(seen == 300 + i, "newthread: step %d: the new thread read %d", i, seen);
  }
  CHECK(cudaGetLastError());
}

static void mode_sticky(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < iters; i++) {
    writes(s, x, x2, i, i);
    CHECK(cudaStreamSynchronize(s));
  }
  fault<<<1, 1, 0, s>>>(x);
  printf("fault launch: %s\n", cudaGetErrorName(cudaGetLastError()));
  printf("sync: %s\n", cudaGetErrorName(cudaStreamSynchronize(s)));
  // What each launch itself returns (a held launch would say success).
  for (int i = 0; i < 4; i++) {
    void* a_set[] = {&x, &i};
    int zero = 0;
    void* a_add[] = {&x, &x2, &zero};
    printf("launch %d: %s\n", 2 * i,
           cudaGetErrorName(cudaLaunchKernel((const void*)set_val, 1, 1, a_set, 0, s)));
    printf("launch %d: %s\n", 2 * i + 1,
           cudaGetErrorName(cudaLaunchKernel((const void*)copy_add, 1, 1, a_add, 0, s)));
  }
  printf("last error: %s\n", cudaGetErrorName(cudaGetLastError()));
  printf("sync: %s\n", cudaGetErrorName(cudaStreamSynchronize(s)));
  printf("ok sticky\n");
  exit(0);   // the context is unusable: main's final checks would fail
}

static void mode_implicit(void) {
  cudaStream_t b;
  CHECK(cudaStreamCreate(&b));   // blocking
  for (int i = 0; i < iters; i++) {
    writes(0, x, x2, i, i);
    CHECK(cudaStreamSynchronize(0));
  }
  CHECK(cudaStreamBeginCapture(b, cudaStreamCaptureModeGlobal));
  set_val<<<1, 1, 0, b>>>(y, 1);
  set_val<<<1, 1, 0, 0>>>(x, 7);   // would make the legacy stream depend on b
  printf("legacy launch during capture: %s\n", cudaGetErrorName(cudaGetLastError()));
  copy_add<<<1, 1, 0, 0>>>(x, x2, 0);
  printf("legacy launch during capture: %s\n", cudaGetErrorName(cudaGetLastError()));
  cudaGraph_t g = NULL;
  printf("end capture: %s\n", cudaGetErrorName(cudaStreamEndCapture(b, &g)));
  if (g != NULL)
    cudaGraphDestroy(g);
  cudaGetLastError();
  printf("sync: %s\n", cudaGetErrorName(cudaDeviceSynchronize()));
  CHECK(cudaMemcpy(h, x2, sizeof(int), cudaMemcpyDeviceToHost));
  printf("x2 = %d\n", *h);
}

// No sync for many ops: only GRAPE_CHUNK cuts the region (the test sets it).
static void mode_long(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < 64 * iters; i++) {
    set_val<<<1, 1, 0, s>>>(x, i);
    copy_add<<<1, 1, 0, s>>>(x, x2, 1);
  }
  CHECK(cudaStreamSynchronize(s));
  CHECK(cudaMemcpy(h, x2, sizeof(int), cudaMemcpyDeviceToHost));
  EXPECT(*h == 64 * iters, "long: read %d, want %d", *h, 64 * iters);
}

// Each round's stream is new after a reset, blocking on odd rounds: the
// legacy stream's kernel must then wait for the work held on it.
static void mode_reset(void) {
  for (int round = 0; round < 3; round++) {
    int *a, *b, *host;
    CHECK(cudaMalloc((void**)&a, sizeof(int)));
    CHECK(cudaMalloc((void**)&b, sizeof(int)));
    CHECK(cudaMallocHost((void**)&host, sizeof(int)));
    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, round % 2 ? cudaStreamDefault : cudaStreamNonBlocking));
    for (int i = 0; i < iters; i++) {
      int v = 100 * round + i;
      writes(s, a, b, v, i);
      if (round % 2 == 0)
        CHECK(cudaStreamSynchronize(s));
      copy_add<<<1, 1, 0, 0>>>(b, a, 1);
      CHECK(cudaStreamSynchronize(0));
      CHECK(cudaMemcpy(host, a, sizeof(int), cudaMemcpyDeviceToHost));
      EXPECT(*host == v + 1, "reset: round %d step %d read %d, want %d", round, i, *host, v + 1);
    }
    CHECK(cudaDeviceReset());   // destroys s, a, b and host
  }
  alloc_common();
}

// P = (set_val, copy_add) and P + memset + copy_add, in a fixed pattern.
static void mode_prefix(void) {
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  for (int i = 0; i < 4 * iters; i++) {
    set_val<<<1, 1, 0, s>>>(x, i);
    copy_add<<<1, 1, 0, s>>>(x, x2, 1);
    if (i % 5 < 2) {
      CHECK(cudaMemsetAsync(y, 0, sizeof(int), s));
      copy_add<<<1, 1, 0, s>>>(x2, y, 1);
    }
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(h, x2, sizeof(int), cudaMemcpyDeviceToHost));
    EXPECT(*h == i + 1, "prefix: step %d read %d", i, *h);
  }
}

// Each step: out cleared, then put(v, w, out, u) on g blocks and put(v + 1,
// w, out + 4, u) on one, synchronised and read back. v changes every other
// step, g every third, w every fifth, u every fourth, and every seventh step
// runs put_alt first: most steps replay the known path with one launch
// changed in place. Then put_shape(v, out + 5) with a block of 32 or 64
// threads (every sixth step) and 0, 16 or 32 bytes of dynamic shared memory
// (every fifth); every ninth step the second put goes to the legacy stream
// instead (ordered after the memset, read after the copy's implicit wait).
static void mode_changes(void) {
  cudaStream_t s;
  int* out;
  int got[8];
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMalloc((void**)&out, sizeof(got)));
  for (int i = 0; i < 8 * iters; i++) {
    int v = i / 2, g = 1 + (i / 3) % 3, w = 1 + (i / 5) % 2, u = (i / 4) % 2, alt = i % 7 == 6;
    CHECK(cudaMemsetAsync(out, 0, sizeof(got), s));
    if (alt)
      put_alt<<<g, 1, 0, s>>>(v, w, out, u);
    else
      put<<<g, 1, 0, s>>>(v, w, out, u);
    int blk = 32 * (1 + (i / 6) % 2), sh = 16 * ((i / 5) % 3), moved = i % 9 == 8;
    put<<<1, 1, 0, moved ? (cudaStream_t)0 : s>>>(v + 1, w, out + 4, u);
    put_shape<<<1, blk, sh, s>>>(v, out + 5);
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaMemcpy(got, out, sizeof(got), cudaMemcpyDeviceToHost));
    for (int b = 0; b < 4; b++)
      EXPECT(got[b] == (b < g ? v * 1000 + w * 10 + u + 5 * alt : 0), "changes: step %d block %d read %d", i, b,
             got[b]);
    EXPECT(got[4] == (v + 1) * 1000 + w * 10 + u, "changes: step %d second launch read %d", i, got[4]);
    EXPECT(got[5] == v * 1000 + blk * 10 + sh / 16, "changes: step %d shape launch read %d", i, got[5]);
  }
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: graph_rules MODE [ITERS]\n");
    return 2;
  }
  if (argc > 2)
    iters = atoi(argv[2]);
  alloc_common();
  const char* m = argv[1];
  if (!strcmp(m, "d2h"))
    mode_d2h();
  else if (!strcmp(m, "d2h_pageable"))
    mode_d2h_pageable();
  else if (!strcmp(m, "event"))
    mode_event();
  else if (!strcmp(m, "legacy"))
    mode_legacy();
  else if (!strcmp(m, "legacy_mid"))
    mode_legacy_mid();
  else if (!strcmp(m, "pinned_mid"))
    mode_pinned_mid();
  else if (!strcmp(m, "hostfn"))
    mode_hostfn();
  else if (!strcmp(m, "spin"))
    mode_spin();
  else if (!strcmp(m, "waitevent"))
    mode_waitevent();
  else if (!strcmp(m, "eventsync"))
    mode_eventsync();
  else if (!strcmp(m, "invalid"))
    mode_invalid();
  else if (!strcmp(m, "threads"))
    mode_threads();
  else if (!strcmp(m, "fork"))
    mode_fork();
  else if (!strcmp(m, "funcattr"))
    mode_funcattr();
  else if (!strcmp(m, "newthread"))
    mode_newthread();
  else if (!strcmp(m, "sticky"))
    mode_sticky();
  else if (!strcmp(m, "implicit"))
    mode_implicit();
  else if (!strcmp(m, "long"))
    mode_long();
  else if (!strcmp(m, "reset"))
    mode_reset();
  else if (!strcmp(m, "prefix"))
    mode_prefix();
  else if (!strcmp(m, "changes"))
    mode_changes();
  else
    return 2;
  CHECK(cudaDeviceSynchronize());
  printf("ok %s\n", m);
  return 0;
}

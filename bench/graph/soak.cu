// soak: does a long run keep the shim's memory and per-launch cost bounded?
// Three phases on the CUDA runtime, with a checkpoint line on stdout every
// tenth of a phase:
//   launches  LAUNCHES launches in regions of REGION (a stream sync after
//             each), every grid drawn at random (1..64 blocks): each region
//             is a path of its own, all with one graph key (data-dependent
//             shapes, a dynamic-shape model's case);
//   churn     STREAMS streams created, used for one launch, synchronised and
//             destroyed;
//   idle      STREAMS streams created and used once, then kept alive, idle;
//   rounds    ROUND_STREAMS non-blocking streams created once, then ROUNDS
//             rounds of REGION launches on each and one device sync: every
//             stream works in every round and is idle between rounds.
// A checkpoint line: "checkpoint <phase> <ops so far> <rss KiB> <ns>", where
// ns is the launching thread's CPU time per op since the last checkpoint
// (an op: a launch; in the stream phases, a stream's whole life). In the
// rounds phase the line comes just before each round's sync, when every
// stream holds its round's work (the phase's peak), and ns is per launch.
// Run it
// without the shim and under it (bench/graph/run_soak.py) on the sim with
// SIMCU_SYNC=1 (no worker thread per stream: 100,000 live streams would be
// 100,000 threads) and SIMCU_NO_REUSE=1 (every stream a new handle value, as
// a driver may hand out); the difference is the shim's.
// usage: soak LAUNCHES STREAMS [REGION [ROUNDS [ROUND_STREAMS]]]
//        (ROUNDS 3, ROUND_STREAMS STREAMS unless given)
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "simcu.h"

// Counts its launches in a[0] (the first thread of the first block): the
// sim's CPU time per launch stays small, whatever the grid.
__global__ void touch(int* a, int n) {
  if (blockIdx.x == 0 && threadIdx.x == 0 && n > 0)
    a[0] += 1;
}

extern "C" {
SIMCU_KERNEL(_Z5touchPii) {
  if (simcu_blk->idx.x == 0 && SIMCU_ARG(1, int) > 0)
    SIMCU_ARG(0, int*)[0] += 1;
}
}

#define MAX_BLOCKS 64
#define THREADS 32

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "soak: %s failed: %s\n", #call, cudaGetErrorString(e_));     \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static long rss_kib(void) {
  long pages = 0, resident = 0;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
    resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static double last_cpu;
static long last_ops;

static void checkpoint(const char* phase, long ops) {
  double now = cpu_ns();
  double per = ops > last_ops ? (now - last_cpu) / (double)(ops - last_ops) : 0;
  printf("checkpoint %s %ld %ld %.0f\n", phase, ops, rss_kib(), per);
  fflush(stdout);
  last_cpu = now;
  last_ops = ops;
}

static void start_phase(const char* phase) {
  last_ops = 0;
  last_cpu = cpu_ns();
  checkpoint(phase, 0);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: soak LAUNCHES STREAMS [REGION [ROUNDS [ROUND_STREAMS]]]\n");
    return 2;
  }
  long launches = atol(argv[1]), streams = atol(argv[2]);
  int region = argc > 3 ? atoi(argv[3]) : 4;
  long rounds = argc > 4 ? atol(argv[4]) : 3;
  long round_streams = argc > 5 ? atol(argv[5]) : streams;
  if (launches < 0 || streams < 0 || region < 1 || rounds < 0 || round_streams < 0) {
    fprintf(stderr, "soak: bad arguments\n");
    return 2;
  }
  int* a;
  const int n = MAX_BLOCKS * THREADS;
  CHECK(cudaMalloc((void**)&a, n * sizeof(int)));
  CHECK(cudaMemset(a, 0, n * sizeof(int)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  uint64_t rng = 42;

  start_phase("launches");
  long step = launches / 10 > 0 ? launches / 10 : 1;
  for (long i = 0; i < launches;) {
    for (int r = 0; r < region && i < launches; r++, i++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      unsigned blocks = 1 + (unsigned)((rng >> 33) % MAX_BLOCKS);
      touch<<<blocks, THREADS, 0, s>>>(a, n);
      if ((i + 1) % step == 0) {
        CHECK(cudaStreamSynchronize(s));
        checkpoint("launches", i + 1);
      }
    }
    CHECK(cudaStreamSynchronize(s));
  }

  start_phase("churn");
  step = streams / 10 > 0 ? streams / 10 : 1;
  for (long i = 0; i < streams; i++) {
    cudaStream_t t;
    CHECK(cudaStreamCreate(&t));
    touch<<<1, THREADS, 0, t>>>(a, n);
    CHECK(cudaStreamSynchronize(t));
    CHECK(cudaStreamDestroy(t));
    if ((i + 1) % step == 0)
      checkpoint("churn", i + 1);
  }

  start_phase("idle");
  cudaStream_t* live = (cudaStream_t*)calloc(streams ? streams : 1, sizeof(*live));
  if (live == NULL)
    return 1;
  for (long i = 0; i < streams; i++) {
    CHECK(cudaStreamCreate(&live[i]));
    touch<<<1, THREADS, 0, live[i]>>>(a, n);
    CHECK(cudaStreamSynchronize(live[i]));
    if ((i + 1) % step == 0)
      checkpoint("idle", i + 1);
  }
  for (long i = 0; i < streams; i++)
    CHECK(cudaStreamDestroy(live[i]));
  free(live);

  start_phase("rounds");
  live = (cudaStream_t*)calloc(round_streams ? round_streams : 1, sizeof(*live));
  if (live == NULL)
    return 1;
  for (long i = 0; i < round_streams; i++)
    CHECK(cudaStreamCreateWithFlags(&live[i], cudaStreamNonBlocking));
  for (long k = 0; k < rounds; k++) {
    for (long i = 0; i < round_streams; i++)
      for (int r = 0; r < region; r++)
        touch<<<1, THREADS, 0, live[i]>>>(a, n);
    checkpoint("rounds", (k + 1) * round_streams * region);
    CHECK(cudaDeviceSynchronize());
  }
  for (long i = 0; i < round_streams; i++)
    CHECK(cudaStreamDestroy(live[i]));
  free(live);

  int h[4];
  CHECK(cudaMemcpy(h, a, sizeof(h), cudaMemcpyDeviceToHost));
  CHECK(cudaStreamDestroy(s));
  CHECK(cudaFree(a));
  printf("checksum %d %d\n", h[0], h[1]);
  return 0;
}

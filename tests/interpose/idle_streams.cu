// Streams that worked and were synchronised are idle: N non-blocking
// streams, ROUNDS rounds of 4 launches on each and one device sync. Prints
// the resident memory just before each round's sync (every stream then holds
// its round's work: the peak), the heap in use after the last sync (every
// stream idle) and the sum the kernels made.
// usage: idle_streams N ROUNDS
#include <cuda_runtime.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "simcu.h"

__global__ void add(int* a) {
  if (blockIdx.x == 0 && threadIdx.x == 0)
    a[0] += 1;
}

extern "C" {
SIMCU_KERNEL(_Z3addPi) {
  if (simcu_blk->idx.x == 0)
    SIMCU_ARG(0, int*)[0] += 1;
}
}

#define CHECK(call)                                                                \
  do {                                                                             \
    cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                       \
      fprintf(stderr, "idle_streams: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      exit(1);                                                                     \
    }                                                                              \
  } while (0)

static long rss_kib(void) {
  long pages = 0, resident = -1;
  FILE* f = fopen("/proc/self/statm", "r");
  if (f == NULL)
    return -1;
  if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
    resident = -1;
  fclose(f);
  return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

int main(int argc, char** argv) {
  long n = argc > 1 ? atol(argv[1]) : 20000, rounds = argc > 2 ? atol(argv[2]) : 3;
  if (n < 1 || rounds < 1) {
    fprintf(stderr, "usage: idle_streams N ROUNDS\n");
    return 2;
  }
  int* a;
  CHECK(cudaMalloc((void**)&a, sizeof(int)));
  CHECK(cudaMemset(a, 0, sizeof(int)));
  cudaStream_t* s = (cudaStream_t*)calloc(n, sizeof(*s));
  if (s == NULL)
    return 1;
  for (long i = 0; i < n; i++)
    CHECK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
  long before = rss_kib(), held = 0;
  for (long k = 0; k < rounds; k++) {
    for (long i = 0; i < n; i++)
      for (int j = 0; j < 4; j++)
        add<<<1, 32, 0, s[i]>>>(a);
    long now = rss_kib();
    held = now > held ? now : held;
    CHECK(cudaDeviceSynchronize());
  }
  struct mallinfo2 m = mallinfo2();
  printf("streams %ld rounds %ld rss_before_kib %ld held_rss_kib %ld idle_heap_bytes %zu\n", n,
         rounds, before, held, m.uordblks + m.hblkhd);
  int h = 0;
  CHECK(cudaMemcpy(&h, a, sizeof(h), cudaMemcpyDeviceToHost));
  for (long i = 0; i < n; i++)
    CHECK(cudaStreamDestroy(s[i]));
  free(s);
  CHECK(cudaFree(a));
  printf("sum %d\n", h);
  return 0;
}

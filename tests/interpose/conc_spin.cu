// Two ranks and a collective: a stand-in collective kernel that spins on
// memory both processes map, with a CPU barrier between the ranks, as a
// data-parallel job's all-reduce beside a gloo or TCPStore barrier.
//
//   conc_spin RANK FILE RFD WFD
//
// RANK 0 or 1; FILE a file of at least 4096 bytes both ranks map shared and
// register with cudaHostRegister (the flags); RFD and WFD the ends of the
// pipes to the peer (the CPU barrier: one byte each way). Per step, on one
// stream: two ordinary kernels (after the warm-up, a known path graph mode
// holds), then `allreduce`, which publishes the step in this rank's flag and
// spins until the peer's flag has it too, then one more kernel. Two kernels
// on a second stream go just before `allreduce` and one after it, then that
// stream's sync: the first two are held when the collective is launched,
// which submits them first, so the device sees every stream's work in the
// program's issue order (the report counts them as flushed by a collective). Rank 0 waits
// in the CPU barrier before that kernel and its sync; rank 1 synchronises
// first. If rank 0's allreduce were held (the region goes on after it, so it
// would stay held through the barrier), rank 1's would spin for a flag that
// never comes, rank 1 would never reach the barrier and rank 0 would wait
// there forever (only a watchdog flush could end it). A spin gives up after 20 s and says
// so; the program then exits 1. Prints "ok rank R".
#include <cuda_runtime.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "simcu.h"

#define STEPS 12

__global__ void work(int* x, int v) {
  *x += v;
}

__global__ void work2(int* x, int v) {   // the second stream's: a path of its own
  *x += v;
}

// flags[0], flags[1]: each rank's last step; flags[2]: set when a spin gave up.
__global__ void allreduce(volatile int* flags, int rank, int step) {
  flags[rank] = step;
  while (flags[1 - rank] < step && flags[2] == 0)
    ;
}

extern "C" {
SIMCU_KERNEL(_Z4workPii) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) += SIMCU_ARG(1, int);
}
SIMCU_KERNEL(_Z5work2Pii) {
  (void)simcu_blk;
  *SIMCU_ARG(0, int*) += SIMCU_ARG(1, int);
}
SIMCU_KERNEL(_Z9allreducePViii) {
  (void)simcu_blk;
  volatile int* flags = SIMCU_ARG(0, volatile int*);
  int rank = SIMCU_ARG(1, int), step = SIMCU_ARG(2, int);
  flags[rank] = step;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  while (flags[1 - rank] < step && flags[2] == 0) {
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec >= 20)
      flags[2] = 1;   /* the peer never came: the deadlock this test exists for */
  }
}
}

#define CHECK(x)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "conc_spin: %s failed at line %d: %s\n", #x, __LINE__, cudaGetErrorName(e_)); \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)

static void barrier(int rfd, int wfd) {
  char c = 1;
  if (write(wfd, &c, 1) != 1 || read(rfd, &c, 1) != 1) {
    fprintf(stderr, "conc_spin: the CPU barrier broke\n");
    exit(1);
  }
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: conc_spin RANK FILE RFD WFD\n");
    return 2;
  }
  int rank = atoi(argv[1]), rfd = atoi(argv[3]), wfd = atoi(argv[4]);
  int fd = open(argv[2], O_RDWR);
  volatile int* map = fd >= 0 ? (volatile int*)mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                              : (volatile int*)MAP_FAILED;
  if (map == (volatile int*)MAP_FAILED) {
    perror("conc_spin: mmap");
    return 1;
  }
  CHECK(cudaHostRegister((void*)map, 4096, cudaHostRegisterMapped));
  int* flags;
  CHECK(cudaHostGetDevicePointer((void**)&flags, (void*)map, 0));
  int* x;
  CHECK(cudaMalloc((void**)&x, sizeof(int)));
  int* y;
  CHECK(cudaMalloc((void**)&y, sizeof(int)));
  cudaStream_t s, s2;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  for (int step = 1; step <= STEPS; step++) {
    work<<<1, 1, 0, s>>>(x, step);
    work<<<1, 1, 0, s>>>(x, 1);
    work2<<<1, 1, 0, s2>>>(y, step);   // held on another stream: submitted before the collective
    work2<<<1, 1, 0, s2>>>(y, 3);
    allreduce<<<1, 1, 0, s>>>(flags, rank, step);
    work2<<<1, 1, 0, s2>>>(y, 5);   // s2's region goes on: its first two kernels stay held
    if (rank == 0) {
      barrier(rfd, wfd);
      work<<<1, 1, 0, s>>>(x, 2);   // the region goes on: what it holds stays held
      CHECK(cudaStreamSynchronize(s));
    } else {
      work<<<1, 1, 0, s>>>(x, 2);
      CHECK(cudaStreamSynchronize(s));
      barrier(rfd, wfd);
    }
    CHECK(cudaStreamSynchronize(s2));
    if (map[2] != 0) {
      fprintf(stderr, "conc_spin: rank %d step %d: the peer's flag never came (deadlock)\n", rank, step);
      return 1;
    }
  }
  printf("ok rank %d\n", rank);
  return 0;
}

/* A small job for the tests of `grape run` and `grape report`: driver-API
 * launches whose kernels have CPU bodies on the simulated device (no nvcc
 * needed), as one process of a multi-rank job would make them.
 *
 *   job N            N iterations of two kernels and a sync; prints the sum
 *   job N wait       the same, then "ready" and sleeps until a signal ends it
 *   job_mpi N        (built with MPI) the same on every rank, rank r running
 *                    N * (r + 1) iterations, then, after a device sync, the
 *                    ranks add their sums with MPI_Allreduce; each prints
 *                    "rank R of W: sum S, total T"
 *
 * The rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID) also sets the iterations
 * without MPI, so that torchrun's and srun's ranks differ too. The sum is checked against the
 * arithmetic done on the host. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef JOB_MPI
#include <mpi.h>
#endif

#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry job_add(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry job_scale(.param .u64 a, .param .u32 k)\n{\n ret;\n}\n";

SIMCU_PARAMS(job_add, 8, 4);
SIMCU_KERNEL(job_add) {
  (void)simcu_blk;
  *SIMCU_ARG(0, long long*) += SIMCU_ARG(1, int);
}
SIMCU_PARAMS(job_scale, 8, 4);
SIMCU_KERNEL(job_scale) {
  if (simcu_blk->idx.x == 0)   /* one block writes; the others are work for the clock */
    *SIMCU_ARG(0, long long*) = *SIMCU_ARG(0, long long*) * SIMCU_ARG(1, int) % 1000003;
}

#define CK(c)                                               \
  do {                                                      \
    CUresult r_ = (c);                                      \
    if (r_ != CUDA_SUCCESS) {                               \
      fprintf(stderr, "job: %s failed: %d\n", #c, (int)r_); \
      return 2;                                             \
    }                                                       \
  } while (0)

static int env_rank(void) {
  const char* vars[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
    if (getenv(vars[i]) != NULL)
      return atoi(getenv(vars[i]));
  return 0;
}

int main(int argc, char** argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10;
  int wait = argc > 2 && strcmp(argv[2], "wait") == 0;
  int rank = env_rank(), world = 1;
#ifdef JOB_MPI
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
#endif
  iters *= rank + 1;
  CUcontext ctx;
  CUmodule m;
  CUfunction add, scale;
  CUstream s;
  CUdeviceptr x;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&add, m, "job_add"));
  CK(cuModuleGetFunction(&scale, m, "job_scale"));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&x, sizeof(long long)));
  CK(cuMemsetD8(x, 0, sizeof(long long)));
  long long want = 0;
  for (int i = 1; i <= iters; i++) {
    int k = 3;
    void* a_add[] = {&x, &i};
    void* a_scale[] = {&x, &k};
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_add, NULL));
    CK(cuLaunchKernel(scale, 4, 1, 1, 64, 1, 1, 0, s, a_scale, NULL));
    CK(cuStreamSynchronize(s));
    want = (want + i) * 3 % 1000003;
  }
  CK(cuCtxSynchronize());
  long long got = -1;
  CK(cuMemcpyDtoH(&got, x, sizeof(got)));
  if (got != want) {
    fprintf(stderr, "job: sum %lld, want %lld\n", got, want);
    return 1;
  }
  long long total = got;
#ifdef JOB_MPI
  MPI_Allreduce(&got, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  MPI_Finalize();
#endif
  printf("rank %d of %d: sum %lld, total %lld\n", rank, world, got, total);
  fflush(stdout);
  if (wait) {
    printf("ready\n");
    fflush(stdout);
    for (;;)
      pause();
  }
  return 0;
}

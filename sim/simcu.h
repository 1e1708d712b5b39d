/* simcu.h: how a CUDA kernel gets a CPU body on the simulated device (sim/).
 *
 * A body is an ordinary C function exported under the name
 * "simcu_body_" + <the kernel's mangled name>. The sim calls it once per block
 * of the grid, in blockIdx order (x fastest), on the stream's worker thread;
 * the body loops over the block's threads itself, so __syncthreads needs no
 * emulation as long as each phase of the kernel is one loop over the threads.
 *
 * DESIGN: binding by symbol name keeps the program unchanged for a real GPU:
 * the bodies are extra exported functions that the real driver never looks
 * at. The sim finds them with dlsym in the global scope, in every loaded
 * object, and in the shared objects named by SIMCU_KERNELS (colon-separated).
 * Programs export bodies from their executable by linking with
 * -Wl,--export-dynamic (nvcc: -Xlinker --export-dynamic).
 *
 *   SIMCU_KERNEL(_Z3addPfif) {                 // __global__ void add(float*, int, float)
 *     float *a = SIMCU_ARG(0, float *);
 *     int n = SIMCU_ARG(1, int);
 *     SIMCU_FOR_THREADS(t) { int i = SIMCU_GLOBAL_X(t); if (i < n) a[i] += SIMCU_ARG(2, float); }
 *   }
 *
 * SIMCU_PARAMS(name, sizes...) optionally declares the parameter sizes; the
 * sim uses them only when the kernel image carries no parameter table.
 *
 * SIMCU_COST(name) optionally declares what one launch of the kernel costs
 * the simulated device (sim/README.md, "The device model"): the time one
 * block takes on its share of a multiprocessor and the bytes the whole
 * launch moves to and from device memory. The sim calls it at launch, before
 * the body runs, with the launch shape and arguments. Without it a kernel
 * costs what every kernel costs: a time per thread, and no memory traffic.
 *
 * SIMCU_FAULT(code) inside a body raises a device-side fault, as an illegal
 * memory access or a trap does on a GPU; the body should return right after.
 * The kernel's remaining blocks do not run, and the fault becomes the
 * context's sticky error, reported asynchronously: the launch itself
 * succeeded, later stream work is not run, and syncs and every later call
 * that uses the context return the code (sim/README.md).
 */
#ifndef SIMCU_H
#define SIMCU_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct simcu_dim3_s {
  unsigned x, y, z;
} simcu_dim3_t;

/* What one body call sees: the launch shape and the block being run. */
typedef struct simcu_block_s {
  simcu_dim3_t grid;      /* gridDim */
  simcu_dim3_t block;     /* blockDim */
  simcu_dim3_t idx;       /* blockIdx */
  void* shared;           /* dynamic shared memory of this block (zeroed), or NULL */
  size_t shared_bytes;    /* its size: the launch's sharedMemBytes */
  int* fault;             /* set through SIMCU_FAULT */
} simcu_block_t;

typedef void (*simcu_body_fn)(const simcu_block_t* blk, void** args);

/* What a launch costs (SIMCU_COST): cta_ns, the simulated time one block
 * takes (ns, on the multiprocessor share its occupancy gives it); bytes, the
 * device-memory traffic of the whole launch. */
typedef struct simcu_cost_s {
  double cta_ns;
  double bytes;
} simcu_cost_t;

/* Called with the launch shape (idx is zero, shared is NULL) and arguments. */
typedef void (*simcu_cost_fn)(const simcu_block_t* launch, void** args, simcu_cost_t* out);

#define SIMCU_BODY_PREFIX "simcu_body_"
#define SIMCU_PARAMS_PREFIX "simcu_params_"
#define SIMCU_COST_PREFIX "simcu_cost_"

#define SIMCU_KERNEL(mangled)                                                     \
  __attribute__((visibility("default"))) void simcu_body_##mangled(               \
      const simcu_block_t* simcu_blk, void** simcu_args)

/* First element: number of parameters; then each parameter's size in bytes. */
#define SIMCU_PARAMS(mangled, ...)                                                \
  __attribute__((visibility("default"))) const unsigned simcu_params_##mangled[] = \
      {(sizeof((unsigned[]){__VA_ARGS__}) / sizeof(unsigned)), __VA_ARGS__}

#define SIMCU_ARG(i, type) (*(type*)simcu_args[i])

#define SIMCU_COST(mangled)                                                       \
  __attribute__((visibility("default"))) void simcu_cost_##mangled(                \
      const simcu_block_t* simcu_blk, void** simcu_args, simcu_cost_t* simcu_cost)

/* Device faults (the values of CUresult / cudaError_t, which agree). */
#define SIMCU_FAULT_ILLEGAL_ADDRESS 700       /* an out-of-bounds load or store */
#define SIMCU_FAULT_ASSERT 710                /* a failed device-side assert() */
#define SIMCU_FAULT_ILLEGAL_INSTRUCTION 715
#define SIMCU_FAULT_MISALIGNED_ADDRESS 716
#define SIMCU_FAULT_LAUNCH_FAILED 719         /* "unspecified launch failure", e.g. a trap */
/* Raises a device fault from a body; any other code counts as LAUNCH_FAILED. */
#define SIMCU_FAULT(code) (*simcu_blk->fault = (int)(code))

/* Iterates t over the linear thread index of the block (x fastest). */
#define SIMCU_FOR_THREADS(t)                                                      \
  for (unsigned t = 0; t < simcu_blk->block.x * simcu_blk->block.y * simcu_blk->block.z; t++)
#define SIMCU_TID_X(t) ((t) % simcu_blk->block.x)
#define SIMCU_TID_Y(t) (((t) / simcu_blk->block.x) % simcu_blk->block.y)
#define SIMCU_TID_Z(t) ((t) / (simcu_blk->block.x * simcu_blk->block.y))
/* blockIdx.x * blockDim.x + threadIdx.x */
#define SIMCU_GLOBAL_X(t) (simcu_blk->idx.x * simcu_blk->block.x + SIMCU_TID_X(t))
#define SIMCU_GLOBAL_Y(t) (simcu_blk->idx.y * simcu_blk->block.y + SIMCU_TID_Y(t))

#ifdef __cplusplus
}
#endif
#endif

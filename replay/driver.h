/* replay/'s one door to a CUDA driver: the entry points offline replay calls,
 * resolved from a dlopen'd libcuda.so.1 (the real one or the simulated one)
 * through cuGetProcAddress_v2, as the CUDA runtime does.
 *
 * DESIGN: grape links no CUDA library. The table is one X-macro list, so the
 * member types come from cuda.h's own prototypes (__typeof__) and cannot
 * drift from the ABI of the version asked for (REPLAY_CUDA_VERSION). */
#ifndef GRAPE_REPLAY_DRIVER_H
#define GRAPE_REPLAY_DRIVER_H

#include <cuda.h>
#include <stddef.h>

/* The ABI the prototypes in the toolkit's cuda.h describe. */
#define REPLAY_CUDA_VERSION 13000

#define REPLAY_DRIVER_CALLS(X)                                                      \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuDeviceGet) X(cuDeviceGetCount) \
  X(cuDeviceGetName) X(cuDeviceGetAttribute) X(cuDevicePrimaryCtxRetain)           \
  X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent) X(cuModuleLoadData) X(cuModuleUnload) \
  X(cuModuleGetFunction) X(cuFuncGetAttribute) X(cuFuncSetAttribute) X(cuMemAlloc)  \
  X(cuMemAllocManaged) X(cuMemAllocHost) X(cuMemFree) X(cuMemFreeHost) X(cuMemsetD8) \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)     \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventElapsedTime) X(cuGraphCreate)        \
  X(cuGraphDestroy) X(cuGraphAddKernelNode) X(cuGraphAddMemsetNode)                \
  X(cuGraphAddMemcpyNode) X(cuGraphAddEventRecordNode) X(cuGraphKernelNodeSetAttribute) \
  X(cuGraphInstantiateWithFlags) X(cuGraphUpload) X(cuGraphLaunch) X(cuGraphExecDestroy)

typedef struct grape_drv_s {
#define REPLAY_MEMBER(name) __typeof__(name)* name;
  REPLAY_DRIVER_CALLS(REPLAY_MEMBER)
#undef REPLAY_MEMBER
} grape_drv_t;

/* dlopens lib and resolves every call of the table.
 * @return 0, or -ENOENT (the library or cuGetProcAddress_v2 is missing) /
 * -ENOSYS (an entry point is missing) with err filled. */
int grape__drv_open(const char* lib, grape_drv_t* d, char* err, size_t errlen);

/* "CUDA_ERROR_INVALID_VALUE (1)" for rc, into buf. */
const char* grape__drv_err(const grape_drv_t* d, CUresult rc, char* buf, size_t cap);

#endif

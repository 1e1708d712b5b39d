/* rt_fatbin.h: registers PTX kernels with the sim's runtime the way nvcc's
 * generated host code does (a fatbin container around the PTX, its wrapper,
 * __cudaRegisterFatBinary/Function/End), for runtime tests built without
 * nvcc. The kernels' CPU bodies are the test's own SIMCU_KERNEL exports. */
#ifndef GRAPE_TESTS_RT_FATBIN_H
#define GRAPE_TESTS_RT_FATBIN_H

#include <cuda_runtime_api.h>

/* nvcc's launch plumbing (declared by crt/host_runtime.h, which is C++). */
void** __cudaRegisterFatBinary(void* wrapper);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                            dim3* bDim, dim3* gDim, int* wSize);
unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shm, struct CUstream_st* s);
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shm, void* stream);
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** args, size_t shm,
                               cudaStream_t s);

/* Registers one PTX module (sm_90) whose entries names[i] have the host stubs
 * stubs[i]; returns the fatbin handle (NULL when out of memory). The module
 * stays registered until the process exits. */
void** rt_register_ptx(const char* ptx, const char* const* names, const void* const* stubs, int n);

#endif

/* static_runtime_lib.c: a library with NVIDIA's CUDA runtime linked into it
 * (libcudart_static.a), as cuDNN, cuSOLVER, cuFFT, cuSPARSE, NCCL and CuPy
 * carry it. Built twice under two names (static_runtime.c loads both). */
#include <cuda_runtime_api.h>

__attribute__((visibility("default"))) int static_runtime_device_count(int* n) {
  return (int)cudaGetDeviceCount(n);
}

// gemm_kernels.cu: the kernels of the sim's cuBLAS stand-ins (sim/cublas/),
// compiled by nvcc into the fatbin libcublasLt.so.13 loads with
// cuModuleLoadData. Each thread of a block takes every blockDim.x-th element
// of its tile; the arithmetic is gemm_math.h's, shared with the CPU bodies.
// C linkage keeps the names plain for cuModuleGetFunction; the names say what
// a kernel is (tensor-op or SIMT, persistent, split-K reduce), as cuBLAS's do.
#include "gemm_math.h"

extern "C" __global__ void simcublas_sm90_gemm_tensorop(simcublas_params_t p) {
  sc_gemm_block(&p, blockIdx.x, gridDim.x, blockIdx.z, threadIdx.x, blockDim.x);
}

extern "C" __global__ void simcublas_sm90_gemm_tensorop_persistent(simcublas_params_t p) {
  sc_gemm_block(&p, blockIdx.x, gridDim.x, blockIdx.z, threadIdx.x, blockDim.x);
}

extern "C" __global__ void simcublas_sm90_gemm_simt(simcublas_params_t p) {
  sc_gemm_block(&p, blockIdx.x, gridDim.x, blockIdx.z, threadIdx.x, blockDim.x);
}

extern "C" __global__ void simcublas_sm90_splitk_reduce(simcublas_params_t p) {
  sc_reduce_at(&p, (int64_t)blockIdx.x * blockDim.x + threadIdx.x);
}

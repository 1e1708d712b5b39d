// Test kernels for tests/cubin: assorted parameter lists whose layouts the
// tests compare with the host C layout (layout.h). Built by nvcc at build time.
#include "layout.h"

// A device function that stays a function symbol: not a kernel (no STO_CUDA_ENTRY).
__device__ __noinline__ int helper(const int* b) {
  return b[0] * 3 + b[1];
}

extern "C" __global__ void k_ptrs(float* a, const int* b, double* c) {
  a[0] = (float)(helper(b) + c[0]);
}

__global__ void k_scalars(int a, double b, char c, short d, char e, long long f, int* out) {
  out[0] = (int)(a + b + c + d + e + f);
}

__global__ void k_vec(vec4_t v, char c, vec4_t w, float* out) {
  out[0] = v.x + w.w + c;
}

__global__ void k_struct(pad_s p, char c, pad_s q, int* out) {
  out[0] = (int)(p.c + p.d + p.s + c + q.d);
}

template <typename T, int N>
__global__ void k_tmpl(T* out, T v, short s) {
  out[N] = v + (T)s;
}
template __global__ void k_tmpl<double, 4>(double*, double, short);
template __global__ void k_tmpl<char, 1>(char*, char, short);

__global__ void k_big(big_s b, int* out) {
  out[0] = b.bytes[7] + b.tail;
}

__global__ void __launch_bounds__(SMEM_THREADS) k_smem(float* a) {
  __shared__ float s[SMEM_FLOATS];
  s[threadIdx.x] = a[threadIdx.x];
  __syncthreads();
  a[threadIdx.x] = s[SMEM_FLOATS - 1 - threadIdx.x];
}

extern "C" __global__ void k_noparams(void) {}

// Variables of device memory (cuModuleGetGlobal's): zeroed, initialised,
// constant; kept in the image though no kernel reads them.
__device__ int layout_counter[4];
__device__ int layout_inited[2] = {7, 9};
__constant__ float layout_cf[3] = {1.f, 2.f, 3.f};

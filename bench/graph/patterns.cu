// patterns: small programs of the shapes real jobs take that graph mode must
// neither slow nor change: one pattern per run, each step a few small
// kernels ending where the host reads a value back. Graph mode's result must
// equal eager's (the checksum of every value read back), whatever the
// costs; bench/graph/patterns.py runs them against eager under the sim's
// cost profiles and reports the regimes where graph mode is slower.
//   alt        two paths alternating step by step, a copy back and a sync
//   rand       the path (2-5 launches, one more or not) drawn from the value
//              read back
//   dims       the same kernels on a grid that changes every step
//   multi      four streams joined by events, a copy back to page-locked
//              memory on one of them
//   memops     memsets and device-to-device copies between kernels
//   scalar     one 13-launch path whose float argument cycles through 5
//              values
//   hostwrite  the host writes page-locked input before each step
// usage: patterns PATTERN STEPS   (prints "checksum <hex> host <last value>")
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <cuda_runtime.h>

#include "simcu.h"

__global__ void addk(float* x, float v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] += v; }
__global__ void mulk(float* x, float v, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] *= v; }
__global__ void axpyk(float* y, const float* x, float a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }
__global__ void sumk(const float* x, float* out, int n) { if (blockIdx.x == 0 && threadIdx.x == 0) { float s = 0; for (int i = 0; i < n; i++) s += x[i]; *out = s; } }

// CPU bodies for the sim.
extern "C" {
SIMCU_KERNEL(_Z4addkPffi) { float* x = SIMCU_ARG(0, float*); float v = SIMCU_ARG(1, float); int n = SIMCU_ARG(2, int);
  SIMCU_FOR_THREADS(t) { unsigned i = SIMCU_GLOBAL_X(t); if ((int)i < n) x[i] += v; } }
SIMCU_KERNEL(_Z4mulkPffi) { float* x = SIMCU_ARG(0, float*); float v = SIMCU_ARG(1, float); int n = SIMCU_ARG(2, int);
  SIMCU_FOR_THREADS(t) { unsigned i = SIMCU_GLOBAL_X(t); if ((int)i < n) x[i] *= v; } }
SIMCU_KERNEL(_Z5axpykPfPKffi) { float* y = SIMCU_ARG(0, float*); const float* x = SIMCU_ARG(1, const float*); float a = SIMCU_ARG(2, float); int n = SIMCU_ARG(3, int);
  SIMCU_FOR_THREADS(t) { unsigned i = SIMCU_GLOBAL_X(t); if ((int)i < n) y[i] += a * x[i]; } }
SIMCU_KERNEL(_Z4sumkPKfPfi) { const float* x = SIMCU_ARG(0, const float*); float* out = SIMCU_ARG(1, float*); int n = SIMCU_ARG(2, int);
  if (simcu_blk->idx.x == 0) { SIMCU_FOR_THREADS(t) { if (t == 0) { float s = 0; for (int i = 0; i < n; i++) s += x[i]; *out = s; } } } }
}

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)

static uint64_t h = 1469598103934665603ull;
static void mix(float f) { uint32_t u; memcpy(&u, &f, 4); h = (h ^ u) * 1099511628211ull; }

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "alt";
  int iters = argc > 2 ? atoi(argv[2]) : 20;
  const int N = 1024;
  float *a, *b, *s;
  CK(cudaMalloc(&a, N * 4)); CK(cudaMalloc(&b, N * 4)); CK(cudaMalloc(&s, 64));
  CK(cudaMemset(a, 0, N * 4)); CK(cudaMemset(b, 0, N * 4));
  float* hs; CK(cudaMallocHost(&hs, 64));
  cudaStream_t st[4];
  for (int k = 0; k < 4; k++) CK(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
  cudaEvent_t ev[4];
  for (int k = 0; k < 4; k++) CK(cudaEventCreateWithFlags(&ev[k], cudaEventDisableTiming));
  float host = 0;
  for (int i = 0; i < iters; i++) {
    if (!strcmp(mode, "alt")) {            // two paths alternating, D2H + sync
      addk<<<4, 256>>>(a, 1.0f, N);
      if (i % 2) mulk<<<4, 256>>>(a, 0.5f, N); else axpyk<<<4, 256>>>(b, a, 0.25f, N);
      axpyk<<<4, 256>>>(a, b, 0.125f, N);
      sumk<<<1, 1>>>(a, s, N);
      CK(cudaMemcpy(&host, s, 4, cudaMemcpyDeviceToHost));
    } else if (!strcmp(mode, "rand")) {    // data-dependent path from the value read back
      uint32_t r = (uint32_t)(host * 1000.0f) * 2654435761u + i;
      int k = 2 + (r >> 28) % 4;
      for (int j = 0; j < k; j++) addk<<<4, 256>>>(a, 0.001f * j, N);
      if (r & 1) mulk<<<4, 256>>>(a, 0.999f, N);
      sumk<<<1, 1>>>(a, s, N);
      CK(cudaMemcpy(&host, s, 4, cudaMemcpyDeviceToHost));
    } else if (!strcmp(mode, "dims")) {    // grid changes every iteration
      int g = 1 + (i * 7) % 4;
      addk<<<g, 256>>>(a, 1.0f, g * 256);
      mulk<<<g, 256>>>(a, 0.75f, g * 256);
      axpyk<<<g, 256>>>(b, a, 0.5f, g * 256);
      sumk<<<1, 1>>>(b, s, N);
      CK(cudaStreamSynchronize(0));
      CK(cudaMemcpy(&host, s, 4, cudaMemcpyDeviceToHost));
    } else if (!strcmp(mode, "multi")) {   // four streams joined by events, async D2H to pinned
      for (int k = 0; k < 4; k++) {
        addk<<<1, 256, 0, st[k]>>>(a + k * 256, 1.0f + k, 256);
        mulk<<<1, 256, 0, st[k]>>>(a + k * 256, 0.9f, 256);
        CK(cudaEventRecord(ev[k], st[k]));
      }
      for (int k = 1; k < 4; k++) CK(cudaStreamWaitEvent(st[0], ev[k], 0));
      sumk<<<1, 1, 0, st[0]>>>(a, s, N);
      CK(cudaMemcpyAsync(hs, s, 4, cudaMemcpyDeviceToHost, st[0]));
      CK(cudaStreamSynchronize(st[0]));
      host = hs[0];
    } else if (!strcmp(mode, "memops")) {  // memsets and D2D copies between kernels
      CK(cudaMemsetAsync(b, 0, N * 4, st[1]));
      addk<<<4, 256, 0, st[1]>>>(b, (float)i, N);
      CK(cudaMemcpyAsync(a, b, N * 2, cudaMemcpyDeviceToDevice, st[1]));
      axpyk<<<4, 256, 0, st[1]>>>(a, b, 0.5f, N);
      sumk<<<1, 1, 0, st[1]>>>(a, s, N);
      CK(cudaMemcpyAsync(hs, s, 4, cudaMemcpyDeviceToHost, st[1]));
      CK(cudaStreamSynchronize(st[1]));
      host = hs[0];
    } else if (!strcmp(mode, "scalar")) {  // one long path, a scalar that changes every time
      for (int j = 0; j < 12; j++) addk<<<4, 256>>>(a, (float)(i % 5) * 0.01f + j, N);
      sumk<<<1, 1>>>(a, s, N);
      CK(cudaMemcpy(&host, s, 4, cudaMemcpyDeviceToHost));
    } else if (!strcmp(mode, "hostwrite")) { // host changes pinned input between iterations
      hs[1] = (float)i;
      CK(cudaMemcpyAsync(s + 1, hs + 1, 4, cudaMemcpyHostToDevice, st[2]));
      addk<<<4, 256, 0, st[2]>>>(a, 1.0f, N);
      axpyk<<<4, 256, 0, st[2]>>>(b, a, 0.5f, N);
      sumk<<<1, 1, 0, st[2]>>>(b, s, N);
      CK(cudaMemcpyAsync(hs, s, 8, cudaMemcpyDeviceToHost, st[2]));
      CK(cudaStreamSynchronize(st[2]));
      host = hs[0] + hs[1];
    }
    mix(host);
  }
  printf("checksum %016llx host %.6g\n", (unsigned long long)h, host);
  return 0;
}

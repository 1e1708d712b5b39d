// Kernels for sim_timed, built by nvcc into a fatbin with no CPU bodies: the
// sim can only run them timed (SIMCU_KERNELS=timed), as a framework's.

// Writes v over p[0..n): on the sim, timed, it must write nothing.
extern "C" __global__ void k_fill(float* p, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = v;
}

// Keeps 96 values live through a loop, so ptxas gives it 128 registers: a
// block of 1024 threads then needs 131,072 of the SM's 65,536.
extern "C" __global__ void k_greedy(float* p, int n) {
  float acc[96];
#pragma unroll
  for (int j = 0; j < 96; j++)
    acc[j] = p[(threadIdx.x * 7 + j * 131) % n];
  for (int it = 0; it < n; it++) {
#pragma unroll
    for (int j = 0; j < 96; j++)
      acc[j] = acc[j] * acc[(j + 1) % 96] + p[(it + j) % n];
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 96; j++)
    s += acc[j];
  p[threadIdx.x] = s;
}

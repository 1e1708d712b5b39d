// dynrnn: an RNN-style loop over a batch of sequences of data-dependent length.
//
// Each step launches the kernels of one of several paths, chosen from values
// read back from the device after the previous step (a synchronisation):
//   dense:  step_dense                       (at least half the batch active)
//   sparse: compact, copy h, step_sparse     (fewer than half active)
//   either, preceded by renorm               (when max |h| exceeded a bound)
// followed by stats, whose two integers are copied back to pinned memory and
// synchronised on. The loop ends when no sequence is active. The same paths
// recur across steps and iterations, which is what grape's replay caches.
//
// With --graph, each dense step and its stats kernel are captured into a CUDA
// graph (cudaStreamBeginCapture), the executable graph is refreshed with
// cudaGraphExecUpdate and launched: the program's own graphs, same kernels,
// same checksum.
//
// Prints one line "checksum <hex>" (FNV-1a of every iteration's final state).
// Usage: dynrnn [--iters N] [--graph]   (default 4 iterations)
#include <cuda_runtime.h>
#include "common.h"
#include "dynrnn_math.h"

__global__ void step_dense(const int32_t* hin, int32_t* hout, const int32_t* x,
                           const int32_t* W, const int32_t* len, int t) {
  int b = blockIdx.x, j = threadIdx.x;
  if (t < len[b])
    hout[b * RNN_H + j] = rnn_cell(W, hin + b * RNN_H, x[b * RNN_T + t], j);
  else
    hout[b * RNN_H + j] = hin[b * RNN_H + j];
}

__global__ void compact(const int32_t* len, int t, int32_t* idx) {
  if (threadIdx.x == 0) {
    int n = 0;
    for (int b = 0; b < RNN_B; b++)
      if (t < len[b])
        idx[n++] = b;
  }
}

__global__ void step_sparse(const int32_t* hin, int32_t* hout, const int32_t* x,
                            const int32_t* W, const int32_t* idx, int t) {
  int b = idx[blockIdx.x], j = threadIdx.x;
  hout[b * RNN_H + j] = rnn_cell(W, hin + b * RNN_H, x[b * RNN_T + t], j);
}

__global__ void stats(const int32_t* len, const int32_t* h, int t, int32_t* flags) {
  if (threadIdx.x == 0)
    rnn_stats(len, h, t, flags);
}

__global__ void renorm(int32_t* h, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    h[i] /= 2;
}

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 4);
  int use_graph = ex_flag(argc, argv, "--graph");
  cudaGraphExec_t gx = NULL;
  const size_t hbytes = RNN_B * RNN_H * sizeof(int32_t);
  int32_t *d_h[2], *d_x, *d_W, *d_len, *d_idx, *d_flags, *flags;
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CHECK(cudaMalloc((void**)&d_h[0], hbytes));
  CHECK(cudaMalloc((void**)&d_h[1], hbytes));
  CHECK(cudaMalloc((void**)&d_x, RNN_B * RNN_T * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_W, RNN_H * RNN_H * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_len, RNN_B * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_idx, RNN_B * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_flags, 2 * sizeof(int32_t)));
  CHECK(cudaMallocHost((void**)&flags, 2 * sizeof(int32_t)));

  static int32_t len[RNN_B], x[RNN_B * RNN_T], W[RNN_H * RNN_H], h[RNN_B * RNN_H];
  uint64_t sum = EX_FNV_INIT;
  long steps = 0, dense = 0, sparse = 0, renorms = 0;
  for (int it = 0; it < iters; it++) {
    rnn_inputs(it, len, x, W);
    CHECK(cudaMemcpy(d_len, len, sizeof(len), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_x, x, sizeof(x), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(d_W, W, sizeof(W), cudaMemcpyHostToDevice));
    CHECK(cudaMemsetAsync(d_h[0], 0, hbytes, s));

    int cur = 0, active = RNN_B, maxabs = 0;
    for (int t = 0; active > 0 && t < RNN_T; t++) {
      if (maxabs > RNN_RENORM_AT) {
        renorm<<<(RNN_B * RNN_H + 127) / 128, 128, 0, s>>>(d_h[cur], RNN_B * RNN_H);
        renorms++;
      }
      int stats_done = 0;
      if (active >= RNN_B / 2 && use_graph) {
        cudaGraph_t g;
        CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
        step_dense<<<RNN_B, RNN_H, 0, s>>>(d_h[cur], d_h[1 - cur], d_x, d_W, d_len, t);
        stats<<<1, 1, 0, s>>>(d_len, d_h[1 - cur], t + 1, d_flags);
        CHECK(cudaStreamEndCapture(s, &g));
        if (gx == NULL) {
          CHECK(cudaGraphInstantiate(&gx, g, 0));
        } else {
          cudaGraphExecUpdateResultInfo info;
          CHECK(cudaGraphExecUpdate(gx, g, &info));
        }
        CHECK(cudaGraphDestroy(g));
        CHECK(cudaGraphLaunch(gx, s));
        stats_done = 1;
        dense++;
      } else if (active >= RNN_B / 2) {
        step_dense<<<RNN_B, RNN_H, 0, s>>>(d_h[cur], d_h[1 - cur], d_x, d_W, d_len, t);
        dense++;
      } else {
        compact<<<1, 1, 0, s>>>(d_len, t, d_idx);
        CHECK(cudaMemcpyAsync(d_h[1 - cur], d_h[cur], hbytes, cudaMemcpyDeviceToDevice, s));
        step_sparse<<<active, RNN_H, 0, s>>>(d_h[cur], d_h[1 - cur], d_x, d_W, d_idx, t);
        sparse++;
      }
      CHECK(cudaGetLastError());
      cur = 1 - cur;
      if (!stats_done)
        stats<<<1, 1, 0, s>>>(d_len, d_h[cur], t + 1, d_flags);
      CHECK(cudaMemcpyAsync(flags, d_flags, 2 * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      active = flags[0];
      maxabs = flags[1];
      steps++;
    }
    CHECK(cudaMemcpy(h, d_h[cur], hbytes, cudaMemcpyDeviceToHost));
    sum = ex_fnv(sum, h, hbytes);
  }
  fprintf(stderr, "dynrnn: %d iterations, %ld steps (%ld dense, %ld sparse, %ld renorm)\n",
          iters, steps, dense, sparse, renorms);
  if (gx != NULL)
    CHECK(cudaGraphExecDestroy(gx));
  CHECK(cudaFreeHost(flags));
  CHECK(cudaFree(d_flags));
  CHECK(cudaFree(d_idx));
  CHECK(cudaFree(d_len));
  CHECK(cudaFree(d_W));
  CHECK(cudaFree(d_x));
  CHECK(cudaFree(d_h[1]));
  CHECK(cudaFree(d_h[0]));
  CHECK(cudaStreamDestroy(s));
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

// beam: beam-search-like decoding with 4 beams over a 64-token vocabulary.
//
// Each step scores every (beam, token) pair, keeps the best 4, and reorders
// the beam states; the best beam's token and score are read back (a sync).
// The host then decides from device results:
//   token < BEAM_EOS (an end)    -> stop early
//   token % 7 == 0 (a "special") -> the next step runs a penalize kernel too
// so the kernel sequences between syncs differ with the data and recur.
//
// The score kernel is launched through the driver: cuLaunchKernel is fetched
// with cudaGetDriverEntryPointByVersion (the cuGetProcAddress route, as torch
// and Triton do) and the kernel's CUfunction with cudaGetFuncBySymbol. The
// other kernels use <<<>>> (the runtime route).
//
// Prints one line "checksum <hex>" (FNV-1a of every step's token and score and
// of the final states). Usage: beam [--iters N]   (default 6 decodes)
#include <cuda.h>
#include <cuda_runtime.h>
#include "beam_math.h"
#include "common.h"

__global__ void score(const uint32_t* h, const int32_t* cum, int32_t* scores) {
  int k = blockIdx.x, v = threadIdx.x;
  scores[k * BEAM_V + v] = beam_score(h[k], cum[k], v);
}

__global__ void penalize(int32_t* scores) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if ((i % BEAM_V) % 7 == 0)
    scores[i] -= BEAM_PENALTY;
}

__global__ void topk(const int32_t* scores, int32_t* cum, int32_t* parent, int32_t* token,
                     int32_t* info) {
  if (threadIdx.x == 0)
    beam_topk(scores, cum, parent, token, info);
}

__global__ void reorder(const uint32_t* hin, const int32_t* parent, const int32_t* token,
                        uint32_t* hout) {
  int k = threadIdx.x;
  hout[k] = beam_next(hin[parent[k]], token[k]);
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 6);
  launch_fn cu_launch = NULL;
  cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void**)&cu_launch, 12000,
                                         cudaEnableDefault, &q));
  cudaFunction_t score_fn;
  CHECK(cudaGetFuncBySymbol(&score_fn, (const void*)score));

  cudaStream_t s;
  CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint32_t* d_h[2];
  int32_t *d_cum, *d_scores, *d_parent, *d_token, *d_info, *info;
  CHECK(cudaMalloc((void**)&d_h[0], BEAM_K * sizeof(uint32_t)));
  CHECK(cudaMalloc((void**)&d_h[1], BEAM_K * sizeof(uint32_t)));
  CHECK(cudaMalloc((void**)&d_cum, BEAM_K * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_scores, BEAM_K * BEAM_V * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_parent, BEAM_K * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_token, BEAM_K * sizeof(int32_t)));
  CHECK(cudaMalloc((void**)&d_info, 2 * sizeof(int32_t)));
  CHECK(cudaHostAlloc((void**)&info, 2 * sizeof(int32_t), cudaHostAllocDefault));

  uint64_t sum = EX_FNV_INIT;
  long steps = 0, penalized = 0, early = 0;
  for (int it = 0; it < iters; it++) {
    uint32_t h0[BEAM_K];
    int32_t cum0[BEAM_K];
    beam_start(it, h0, cum0);
    CHECK(cudaMemcpyAsync(d_h[0], h0, sizeof(h0), cudaMemcpyHostToDevice, s));
    CHECK(cudaMemcpyAsync(d_cum, cum0, sizeof(cum0), cudaMemcpyHostToDevice, s));
    int cur = 0, pen = 0;
    for (int t = 0; t < BEAM_STEPS; t++) {
      void* args[] = {&d_h[cur], &d_cum, &d_scores};
      if (cu_launch((CUfunction)score_fn, BEAM_K, 1, 1, BEAM_V, 1, 1, 0, (CUstream)s, args,
                    NULL) != CUDA_SUCCESS) {
        fprintf(stderr, "cuLaunchKernel failed\n");
        return 1;
      }
      if (pen) {
        penalize<<<BEAM_K, BEAM_V, 0, s>>>(d_scores);
        penalized++;
      }
      topk<<<1, 1, 0, s>>>(d_scores, d_cum, d_parent, d_token, d_info);
      reorder<<<1, BEAM_K, 0, s>>>(d_h[cur], d_parent, d_token, d_h[1 - cur]);
      CHECK(cudaGetLastError());
      cur = 1 - cur;
      CHECK(cudaMemcpyAsync(info, d_info, 2 * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      sum = ex_fnv(sum, info, 2 * sizeof(int32_t));
      steps++;
      if (info[0] < BEAM_EOS) {
        early++;
        break;
      }
      pen = info[0] % 7 == 0;
    }
    uint32_t h[BEAM_K];
    CHECK(cudaMemcpy(h, d_h[cur], sizeof(h), cudaMemcpyDeviceToHost));
    sum = ex_fnv(sum, h, sizeof(h));
  }
  fprintf(stderr, "beam: %d decodes, %ld steps, %ld penalized, %ld stopped early\n", iters, steps,
          penalized, early);
  CHECK(cudaFreeHost(info));
  CHECK(cudaFree(d_info));
  CHECK(cudaFree(d_token));
  CHECK(cudaFree(d_parent));
  CHECK(cudaFree(d_scores));
  CHECK(cudaFree(d_cum));
  CHECK(cudaFree(d_h[1]));
  CHECK(cudaFree(d_h[0]));
  CHECK(cudaStreamDestroy(s));
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

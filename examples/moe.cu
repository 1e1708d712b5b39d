// moe: decode steps of a small mixture-of-experts transformer whose hot path
// is independent GEMMs through cuBLAS: the work concurrent execution is for.
//
// A batch holds up to 8 sequences; one decode step on one created stream:
//   embed the current tokens; per layer (2):
//     Q, K and V projections: three cublasGemmEx calls that all read the
//       activations and write separate outputs (no kernel between them);
//     attention stand-in, O projection (cublasGemmEx), residual add;
//     router: top-1 of 4 experts per token; the choice is read back
//       (cudaMemcpyAsync to pinned memory, cudaStreamSynchronize) and the host
//       sorts the tokens by expert and uploads the order;
//     gather the tokens by expert; one up projection per expert that got
//       tokens (cublasGemmEx on that expert's rows: sizes from the data), an
//       activation, one down projection per expert, then scatter-add back;
//   the LM head (cublasGemmEx) and a sampling kernel; the sampled tokens are
//   read back. A sequence ends on an end token or at its length limit; the
//   host then drops its row, so later steps have fewer rows.
//
// DESIGN: activations and weights are small integers in bfloat16 and the
// GEMMs accumulate in float (moe_math.h), so every GEMM is exact whatever
// kernel cuBLAS picks: the checksum is the same with NVIDIA's cuBLAS on a GPU
// and with the sim's (LD_LIBRARY_PATH=build/sim:build/sim/cublas). Weights are
// generated from moe_math.h's hash, so the reference needs no files.
//
// Prints "checksum <hex>" (FNV-1a of every step's sampled tokens and of every
// layer's expert sizes) and a summary on stderr.
// Usage: moe [--iters N]   (N batches; default 3)
#include "bf16_gemm.h"

__global__ void embed(const int32_t* tok, bf16* x, moe_rows_t rows) {
  int r = blockIdx.x, j = threadIdx.x;
  x[r * MOE_D + j] = moe_bf16(moe_embed(tok[rows.slot[r]], j));
}

// o = attention stand-in of q (width D) with its group's k and v (width KV).
__global__ void attn(const float* q, const float* k, const float* v, bf16* o) {
  int r = blockIdx.x, j = threadIdx.x, g = j % MOE_KV;
  o[r * MOE_D + j] = moe_bf16(moe_attn(q[r * MOE_D + j], k[r * MOE_KV + g], v[r * MOE_KV + g]));
}

__global__ void residual(bf16* x, const float* h) {
  int i = blockIdx.x * MOE_D + threadIdx.x;
  x[i] = moe_bf16(moe_residual(moe_int(x[i]), h[i]));
}

__global__ void route(const bf16* x, int32_t* expert, int layer) {
  int r = blockIdx.x;
  if (threadIdx.x == 0)
    expert[r] = moe_route(x + r * MOE_D, layer);
}

// xg's row i is x's row perm[i].
__global__ void gather(const bf16* x, const int32_t* perm, bf16* xg) {
  int i = blockIdx.x, j = threadIdx.x;
  xg[i * MOE_D + j] = x[perm[i] * MOE_D + j];
}

__global__ void act(const float* u, bf16* a) {
  int i = blockIdx.x * MOE_F + threadIdx.x;
  a[i] = moe_bf16(moe_act(u[i]));
}

// x's row perm[i] += y's row i.
__global__ void scatter(bf16* x, const float* y, const int32_t* perm) {
  int i = blockIdx.x, j = threadIdx.x, d = perm[i] * MOE_D + j;
  x[d] = moe_bf16(moe_combine(moe_int(x[d]), y[i * MOE_D + j]));
}

__global__ void sample(const float* logits, int32_t* tok, moe_rows_t rows, uint32_t seed,
                       int step) {
  int r = threadIdx.x;
  tok[rows.slot[r]] = moe_sample(logits + r * MOE_V, seed, step, rows.slot[r]);
}

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 3);
  bf16 *Wq[MOE_L], *Wk[MOE_L], *Wv[MOE_L], *Wo[MOE_L], *Wup[MOE_L][MOE_E], *Wdown[MOE_L][MOE_E];
  for (int l = 0; l < MOE_L; l++) {
    Wq[l] = weights(MOE_W_Q(l), MOE_D, MOE_D);
    Wk[l] = weights(MOE_W_K(l), MOE_D, MOE_KV);
    Wv[l] = weights(MOE_W_V(l), MOE_D, MOE_KV);
    Wo[l] = weights(MOE_W_O(l), MOE_D, MOE_D);
    for (int e = 0; e < MOE_E; e++) {
      Wup[l][e] = weights(MOE_W_UP(l, e), MOE_D, MOE_F);
      Wdown[l][e] = weights(MOE_W_DOWN(l, e), MOE_F, MOE_D);
    }
  }
  bf16* Wlm = weights(MOE_W_LM, MOE_D, MOE_V);
  bf16 *x = dev<bf16>(MOE_B * MOE_D), *o = dev<bf16>(MOE_B * MOE_D);
  bf16 *xg = dev<bf16>(MOE_B * MOE_D), *a = dev<bf16>(MOE_B * MOE_F);
  float *q = dev<float>(MOE_B * MOE_D), *k = dev<float>(MOE_B * MOE_KV);
  float *v = dev<float>(MOE_B * MOE_KV), *h = dev<float>(MOE_B * MOE_D);
  float *u = dev<float>(MOE_B * MOE_F), *y = dev<float>(MOE_B * MOE_D);
  float* logits = dev<float>(MOE_B * MOE_V);
  int32_t *tok = dev<int32_t>(MOE_B), *expert = dev<int32_t>(MOE_B), *perm = dev<int32_t>(MOE_B);
  int32_t *h_tok, *h_expert, *h_perm;   // pinned: read back and uploaded each step
  CHECK(cudaMallocHost((void**)&h_tok, MOE_B * sizeof(int32_t)));
  CHECK(cudaMallocHost((void**)&h_expert, MOE_B * sizeof(int32_t)));
  CHECK(cudaMallocHost((void**)&h_perm, MOE_B * sizeof(int32_t)));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  CUBLAS(cublasCreate(&blas));
  CUBLAS(cublasSetStream(blas, s));

  uint64_t sum = EX_FNV_INIT;
  long steps = 0, sizes[MOE_E + 1] = {0};   // expert batches by size class: 0, 1, 2, 3-4, 5+
  for (int b = 0; b < iters; b++) {
    int len[MOE_B], limit[MOE_B], nact = MOE_B;
    moe_rows_t rows;
    for (int sl = 0; sl < MOE_B; sl++) {
      h_tok[sl] = moe_first_token(b, sl);
      limit[sl] = moe_limit(b, sl);
      len[sl] = 0;
      rows.slot[sl] = sl;
    }
    CHECK(cudaMemcpyAsync(tok, h_tok, MOE_B * sizeof(int32_t), cudaMemcpyHostToDevice, s));
    uint32_t seed = moe_seed(b);
    for (int step = 0; nact > 0; step++, steps++) {
      int T = nact;
      embed<<<T, MOE_D, 0, s>>>(tok, x, rows);
      for (int l = 0; l < MOE_L; l++) {
        gemm(Wq[l], x, q, T, MOE_D, MOE_D);   // three independent GEMMs
        gemm(Wk[l], x, k, T, MOE_D, MOE_KV);
        gemm(Wv[l], x, v, T, MOE_D, MOE_KV);
        attn<<<T, MOE_D, 0, s>>>(q, k, v, o);
        gemm(Wo[l], o, h, T, MOE_D, MOE_D);
        residual<<<T, MOE_D, 0, s>>>(x, h);
        route<<<T, 32, 0, s>>>(x, expert, l);
        CHECK(cudaMemcpyAsync(h_expert, expert, T * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
        CHECK(cudaStreamSynchronize(s));
        int count[MOE_E] = {0}, off[MOE_E + 1];
        for (int r = 0; r < T; r++)
          count[h_expert[r]]++;
        off[0] = 0;
        for (int e = 0; e < MOE_E; e++) {
          off[e + 1] = off[e] + count[e];
          sum = ex_fnv(sum, &count[e], sizeof(count[e]));
          sizes[count[e] >= 5 ? 4 : (count[e] >= 3 ? 3 : count[e])]++;
        }
        int fill[MOE_E];
        memcpy(fill, off, sizeof(fill));
        for (int r = 0; r < T; r++)   // rows by expert, in row order within one
          h_perm[fill[h_expert[r]]++] = r;
        CHECK(cudaMemcpyAsync(perm, h_perm, T * sizeof(int32_t), cudaMemcpyHostToDevice, s));
        gather<<<T, MOE_D, 0, s>>>(x, perm, xg);
        for (int e = 0; e < MOE_E; e++)   // independent: one per expert with tokens
          if (count[e] > 0)
            gemm(Wup[l][e], xg + off[e] * MOE_D, u + off[e] * MOE_F, count[e], MOE_D, MOE_F);
        act<<<T, MOE_F, 0, s>>>(u, a);
        for (int e = 0; e < MOE_E; e++)
          if (count[e] > 0)
            gemm(Wdown[l][e], a + off[e] * MOE_F, y + off[e] * MOE_D, count[e], MOE_F, MOE_D);
        scatter<<<T, MOE_D, 0, s>>>(x, y, perm);
      }
      gemm(Wlm, x, logits, T, MOE_D, MOE_V);
      sample<<<1, T, 0, s>>>(logits, tok, rows, seed, step);
      CHECK(cudaGetLastError());
      CHECK(cudaMemcpyAsync(h_tok, tok, MOE_B * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      int keep = 0;
      for (int r = 0; r < T; r++) {
        int sl = rows.slot[r];
        sum = ex_fnv(sum, &h_tok[sl], sizeof(h_tok[sl]));
        len[sl]++;
        if (h_tok[sl] >= MOE_EOS && len[sl] < limit[sl])
          rows.slot[keep++] = sl;
      }
      nact = keep;
    }
  }
  fprintf(stderr,
          "moe: %d batches, %ld steps, %ld GEMMs; expert batches of 0/1/2/3-4/5+ tokens: "
          "%ld/%ld/%ld/%ld/%ld\n",
          iters, steps, gemms, sizes[0], sizes[1], sizes[2], sizes[3], sizes[4]);
  CUBLAS(cublasDestroy(blas));
  CHECK(cudaStreamDestroy(s));
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

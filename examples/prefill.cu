// prefill: chunked prefill of prompts through mixture-of-experts layers at
// serving sizes, device-bound, its GEMMs through cuBLAS: the showcase for
// concurrent GEMMs (docs/concurrency.md).
//
// Model (Qwen-MoE-like): width 2048, grouped-query attention with K and V of
// 256, 4 layers, 8 routed experts of width 1024 (top-2) and one shared expert
// whose gate|up projection is 2 x 5632 wide. Prompts are cut into chunks of
// 512 tokens (the scheduler's token budget); a prompt's last chunk is padded
// to a multiple of 64, so chunks have 8 lengths. One created stream; per
// chunk:
//   upload the tokens and the chunk's routing (one host-to-device copy);
//   embed; per layer:
//     Q, K and V projections: three cublasGemmEx calls reading the
//       activations (independent);
//     attention stand-in, O projection, residual add;
//     gather each expert's tokens (capacity 2T/8 each); per expert its up
//       projection (64-128 tokens), and the shared expert's gate|up
//       projection over all T tokens, a persistent GEMM at T >= 448: nine
//       independent GEMMs, where the persistent one has eight co-runners;
//     activations; per expert its down projection and the shared expert's
//       down projection (independent);
//     combine the experts' outputs into the activations;
//   read back the last token's activations (the first token's logits would
//   come from it) and synchronise.
//
// DESIGN: values and exactness as moe's (prefill_math.h): the checksum is the
// same under every plan and graph order, on the sim and on a GPU. Routing is a
// hash of the token id, computed on the host, so the path never depends on a
// result: SIMCU_TIME_ONLY=1 gives full-size timings quickly, and --small (all
// widths / 16, chunks / 8) gives checksums quickly. The layers share one set of
// weights (155 MB instead of 620): the sim models no cache, so the device
// time is the same as with four sets.
//
// Prints "checksum <hex>" (FNV-1a of each chunk's length and its last token's
// activations) and a summary on stderr.
// Usage: prefill [--iters N] [--small] [--len L] [--sm-target S] [--lt]
//   N prompts (default 3); L: every prompt L tokens long (default: 1/2 to 7/2
//   chunks, hashed), so that a bench can time one chunk length alone; S: the
//   shared expert's gate|up GEMM asks cuBLAS for S SMs (cublasSetSmCountTarget,
//   restored after the call): what go mode would set, done by hand; --lt:
//   every GEMM through cublasLtMatmul as PyTorch issues it (a descriptor, the
//   heuristic's first algorithm for a workspace of CUBLASLT_WORKSPACE_SIZE
//   KiB, as PyTorch reads it: 32 MiB unless set; 0: none; with S, the shared
//   expert's descriptor carries CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET). Either
//   way, after each call the program's handle, descriptor and algorithm must
//   be as it made them (a shim may make the call with a target of its own):
//   otherwise prefill exits 3.
#include <cublasLt.h>

#include "bf16_gemm.h"
#include "prefill_math.h"

static cudaStream_t stream;
static cublasLtHandle_t lt;
static void* lt_ws;
static size_t lt_ws_size;

#define CHECK_OWN(cond, ...)          \
  do {                                \
    if (!(cond)) {                    \
      fprintf(stderr, __VA_ARGS__);   \
      exit(3);                        \
    }                                 \
  } while (0)

// gemm()'s product through cuBLASLt, as at::cuda::blas issues it: a
// descriptor (fp32 compute), column-major layouts, a preference bounding
// the workspace, the heuristic's first algorithm, the call; target > 0 asks
// for that many SMs on the descriptor.
static void gemm_lt(const bf16* W, const bf16* X, float* Y, int rows, int k, int n, int target) {
  const float one = 1.0f, zero = 0.0f;
  cublasLtMatmulDesc_t desc;
  cublasLtMatrixLayout_t la, lb, lc;
  cublasLtMatmulPreference_t pref;
  CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  if (target > 0)
    CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &target,
                                          sizeof(target)));
  CUBLAS(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, n, k, n));
  CUBLAS(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, k, rows, k));
  CUBLAS(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, n, rows, n));
  CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = lt_ws_size;
  CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                              sizeof(ws)));
  cublasLtMatmulHeuristicResult_t res;
  int count = 0;
  CUBLAS(cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &count));
  CHECK_OWN(count > 0, "prefill: no cuBLASLt algorithm for %d x %d x %d\n", n, rows, k);
  cublasLtMatmulAlgo_t algo = res.algo;
  CUBLAS(cublasLtMatmul(lt, desc, &one, W, la, X, lb, &zero, Y, lc, Y, lc, &algo, lt_ws,
                        lt_ws_size, stream));
  int32_t now = -1;
  size_t got = 0;
  CUBLAS(cublasLtMatmulDescGetAttribute(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &now,
                                        sizeof(now), &got));
  CHECK_OWN(now == (target > 0 ? target : 0),
            "prefill: the descriptor's SM-count target is %d after the call, not %d\n", (int)now,
            target > 0 ? target : 0);
  CHECK_OWN(memcmp(&algo, &res.algo, sizeof(algo)) == 0,
            "prefill: the algorithm passed to cublasLtMatmul was changed by the call\n");
  CUBLAS(cublasLtMatmulPreferenceDestroy(pref));
  CUBLAS(cublasLtMatrixLayoutDestroy(lc));
  CUBLAS(cublasLtMatrixLayoutDestroy(lb));
  CUBLAS(cublasLtMatrixLayoutDestroy(la));
  CUBLAS(cublasLtMatmulDescDestroy(desc));
  gemms++;
}

// One GEMM of the model, on the route chosen; target > 0 (the shared
// expert's gate|up, --sm-target): asked for that many SMs, on the handle
// (set and restored here) or on the Lt descriptor.
static void mm(const bf16* W, const bf16* X, float* Y, int rows, int k, int n, int target) {
  if (lt != NULL) {
    gemm_lt(W, X, Y, rows, k, n, target);
    return;
  }
  if (target > 0)
    CUBLAS(cublasSetSmCountTarget(blas, target));
  gemm(W, X, Y, rows, k, n);
  int handle_target = -1;
  CUBLAS(cublasGetSmCountTarget(blas, &handle_target));
  CHECK_OWN(handle_target == target, "prefill: the handle's SM-count target is %d after the call, not %d\n",
            handle_target, target);
  if (target > 0)
    CUBLAS(cublasSetSmCountTarget(blas, 0));
}

__global__ void embed(const int32_t* tok, bf16* x, int d) {
  int r = blockIdx.x;
  for (int j = threadIdx.x; j < d; j += blockDim.x)
    x[r * d + j] = moe_bf16(moe_embed(tok[r], j));
}

// o = attention stand-in of q (width d) with its group's k and v (width kv).
__global__ void attn(const float* q, const float* k, const float* v, bf16* o, int d, int kv) {
  int r = blockIdx.x;
  for (int j = threadIdx.x; j < d; j += blockDim.x)
    o[r * d + j] = moe_bf16(moe_attn(q[r * d + j], k[r * kv + j % kv], v[r * kv + j % kv]));
}

__global__ void residual(bf16* x, const float* h, int d) {
  int r = blockIdx.x;
  for (int j = threadIdx.x; j < d; j += blockDim.x)
    x[r * d + j] = moe_bf16(moe_residual(moe_int(x[r * d + j]), h[r * d + j]));
}

// xg's row i is x's row perm[i], or zeros for an expert's unused capacity.
__global__ void gather(const bf16* x, const int32_t* perm, bf16* xg, int d) {
  int i = blockIdx.x, p = perm[i];
  for (int j = threadIdx.x; j < d; j += blockDim.x)
    xg[i * d + j] = p >= 0 ? x[p * d + j] : moe_bf16(0);
}

// Rows below nrouted: the routed experts' hidden rows; then the shared
// expert's, from its gate|up rows (2s wide).
__global__ void act(const float* u, bf16* a, int f, int nrouted, const float* us, bf16* as,
                    int s) {
  int i = blockIdx.x;
  if (i < nrouted) {
    for (int j = threadIdx.x; j < f; j += blockDim.x)
      a[i * f + j] = moe_bf16(moe_act(u[i * f + j]));
  } else {
    int t = i - nrouted;
    for (int j = threadIdx.x; j < s; j += blockDim.x)
      as[t * s + j] = moe_bf16(pf_gated(us[t * 2 * s + j], us[t * 2 * s + s + j]));
  }
}

// Token r's update from the shared expert (ys) and its routed experts' rows
// of y (slot[2r], slot[2r+1]; -1 where it was dropped).
__global__ void combine(bf16* x, const float* y, const float* ys, const int32_t* slot, int d) {
  int r = blockIdx.x, s0 = slot[2 * r], s1 = slot[2 * r + 1];
  for (int j = threadIdx.x; j < d; j += blockDim.x)
    x[r * d + j] = moe_bf16(pf_combine(moe_int(x[r * d + j]), ys[r * d + j],
                                       s0 >= 0 ? &y[s0 * d + j] : NULL,
                                       s1 >= 0 ? &y[s1 * d + j] : NULL));
}

// What the host uploads per chunk, sized for the longest chunk so that every
// chunk's copy is the same: the tokens, and per layer each expert's rows
// (perm: E x capacity, -1 unused) and each token's two expert rows (slot).
struct route_buf {
  int32_t* tok;
  int32_t* perm[PF_L];
  int32_t* slot[PF_L];
  size_t words;
};

static size_t route_words(int tmax) {
  return (size_t)tmax + (size_t)PF_L * (PF_E * pf_capacity(tmax) + 2 * tmax);
}

static void route_layout(route_buf* r, int32_t* base, int tmax) {
  int32_t* p = base;
  r->tok = p;
  p += tmax;
  for (int l = 0; l < PF_L; l++) {
    r->perm[l] = p;
    p += PF_E * pf_capacity(tmax);
    r->slot[l] = p;
    p += 2 * tmax;
  }
  r->words = (size_t)(p - base);
}

// Routes chunk tokens tok[0..t) of every layer; returns the tokens dropped at
// an expert's capacity.
static long route_chunk(route_buf* h, int t) {
  int cap = pf_capacity(t);
  long dropped = 0;
  for (int l = 0; l < PF_L; l++) {
    int fill[PF_E] = {0};
    for (int i = 0; i < PF_E * cap; i++)
      h->perm[l][i] = -1;
    for (int r = 0; r < t; r++)
      for (int k = 0; k < 2; k++) {
        int e = pf_expert(h->tok[r], l, k);
        if (fill[e] < cap) {
          h->perm[l][e * cap + fill[e]] = r;
          h->slot[l][2 * r + k] = e * cap + fill[e]++;
        } else {
          h->slot[l][2 * r + k] = -1;
          dropped++;
        }
      }
  }
  return dropped;
}

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 3);
  pf_dims_t m = ex_flag(argc, argv, "--small") ? PF_SMALL : PF_FULL;
  int cmax = pf_capacity(m.tmax), fixed_len = 0, sm_target = 0;
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--len") == 0)
      fixed_len = atoi(argv[i + 1]);
    if (strcmp(argv[i], "--sm-target") == 0)
      sm_target = atoi(argv[i + 1]);
  }
  bf16* Wq = weights(MOE_W_Q(0), m.d, m.d);
  bf16* Wk = weights(MOE_W_K(0), m.d, m.kv);
  bf16* Wv = weights(MOE_W_V(0), m.d, m.kv);
  bf16* Wo = weights(MOE_W_O(0), m.d, m.d);
  bf16 *Wup[PF_E], *Wdown[PF_E];
  for (int e = 0; e < PF_E; e++) {
    Wup[e] = weights(200 + e, m.d, m.f);
    Wdown[e] = weights(300 + e, m.f, m.d);
  }
  bf16* Wsgu = weights(400, m.d, 2 * m.s);
  bf16* Wsd = weights(401, m.s, m.d);
  bf16 *x = dev<bf16>((size_t)m.tmax * m.d), *o = dev<bf16>((size_t)m.tmax * m.d);
  bf16* xg = dev<bf16>((size_t)PF_E * cmax * m.d);
  bf16* a = dev<bf16>((size_t)PF_E * cmax * m.f);
  bf16* as = dev<bf16>((size_t)m.tmax * m.s);
  float *q = dev<float>((size_t)m.tmax * m.d), *k = dev<float>((size_t)m.tmax * m.kv);
  float *v = dev<float>((size_t)m.tmax * m.kv), *h = dev<float>((size_t)m.tmax * m.d);
  float* u = dev<float>((size_t)PF_E * cmax * m.f);
  float* y = dev<float>((size_t)PF_E * cmax * m.d);
  float* us = dev<float>((size_t)m.tmax * 2 * m.s);
  float* ys = dev<float>((size_t)m.tmax * m.d);
  route_buf hr, dr;   // pinned host copy and its device twin
  int32_t *h_route, *d_route;
  CHECK(cudaMallocHost((void**)&h_route, route_words(m.tmax) * sizeof(int32_t)));
  d_route = dev<int32_t>(route_words(m.tmax));
  route_layout(&hr, h_route, m.tmax);
  route_layout(&dr, d_route, m.tmax);
  bf16* h_last;   // the last token's activations, read back per chunk
  CHECK(cudaMallocHost((void**)&h_last, m.d * sizeof(bf16)));
  CHECK(cudaStreamCreate(&stream));
  cudaStream_t s = stream;
  CUBLAS(cublasCreate(&blas));
  CUBLAS(cublasSetStream(blas, s));
  if (ex_flag(argc, argv, "--lt")) {
    CUBLAS(cublasLtCreate(&lt));
    const char* kib = getenv("CUBLASLT_WORKSPACE_SIZE");   // PyTorch's knob, KiB
    lt_ws_size = (kib != NULL ? (size_t)atol(kib) : (size_t)32 << 10) << 10;
    if (lt_ws_size > 0)
      lt_ws = dev<uint8_t>(lt_ws_size);
  }

  uint64_t sum = EX_FNV_INIT;
  long chunks = 0, tokens = 0, dropped = 0;
  for (int b = 0; b < iters; b++) {
    int len = fixed_len > 0 ? fixed_len : pf_prompt_len(b, m.tmax);
    for (int p0 = 0; p0 < len; p0 += m.tmax, chunks++) {
      int t = len - p0 < m.tmax ? len - p0 : m.tmax;
      t = (t + m.tstep - 1) / m.tstep * m.tstep;   // padded, as graph batch sizes are
      int cap = pf_capacity(t);
      for (int r = 0; r < t; r++)
        hr.tok[r] = p0 + r < len ? pf_token(b, p0 + r) : 0;
      dropped += route_chunk(&hr, t);
      tokens += t;
      CHECK(cudaMemcpyAsync(d_route, h_route, hr.words * sizeof(int32_t), cudaMemcpyHostToDevice,
                            s));
      embed<<<t, 256, 0, s>>>(dr.tok, x, m.d);
      for (int l = 0; l < PF_L; l++) {
        mm(Wq, x, q, t, m.d, m.d, 0);   // three independent GEMMs
        mm(Wk, x, k, t, m.d, m.kv, 0);
        mm(Wv, x, v, t, m.d, m.kv, 0);
        attn<<<t, 256, 0, s>>>(q, k, v, o, m.d, m.kv);
        mm(Wo, o, h, t, m.d, m.d, 0);
        residual<<<t, 256, 0, s>>>(x, h, m.d);
        gather<<<PF_E * cap, 256, 0, s>>>(x, dr.perm[l], xg, m.d);
        for (int e = 0; e < PF_E; e++)   // nine independent GEMMs
          mm(Wup[e], xg + (size_t)e * cap * m.d, u + (size_t)e * cap * m.f, cap, m.d, m.f, 0);
        mm(Wsgu, x, us, t, m.d, 2 * m.s, sm_target);
        act<<<PF_E * cap + t, 256, 0, s>>>(u, a, m.f, PF_E * cap, us, as, m.s);
        for (int e = 0; e < PF_E; e++)   // nine independent GEMMs
          mm(Wdown[e], a + (size_t)e * cap * m.f, y + (size_t)e * cap * m.d, cap, m.f, m.d, 0);
        mm(Wsd, as, ys, t, m.s, m.d, 0);
        combine<<<t, 256, 0, s>>>(x, y, ys, dr.slot[l], m.d);
      }
      CHECK(cudaGetLastError());
      CHECK(cudaMemcpyAsync(h_last, x + (size_t)(t - 1) * m.d, m.d * sizeof(bf16),
                            cudaMemcpyDeviceToHost, s));
      CHECK(cudaStreamSynchronize(s));
      sum = ex_fnv(sum, &t, sizeof(t));
      sum = ex_fnv(sum, h_last, m.d * sizeof(bf16));
    }
  }
  fprintf(stderr, "prefill: %d prompts, %ld chunks, %ld tokens, %ld GEMMs, %ld routed slots dropped\n",
          iters, chunks, tokens, gemms, dropped);
  if (lt != NULL) {
    CUBLAS(cublasLtDestroy(lt));
    if (lt_ws != NULL)
      CHECK(cudaFree(lt_ws));
  }
  CUBLAS(cublasDestroy(blas));
  CHECK(cudaStreamDestroy(s));
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

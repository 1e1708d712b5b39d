// decode: the decode loop of a small transformer language model, as LLM
// serving runs it: the workload CUDA graphs matter most for.
//
// Each batch holds up to 8 sequences, each in its own KV-cache slot. One
// decode step runs 100 kernels on one created stream: embed the current
// tokens, 6 layers of 16 kernels
//   RMSNorm, Q, K and V GEMMs, rotary embedding, KV-cache append,
//   attention scores (one thread per cached position: the block grows by one
//   each step), integer softmax, weighted sum of values, output GEMM,
//   residual add, RMSNorm, gate|up GEMM, gated activation, down GEMM,
//   residual add,
// then a final RMSNorm, the LM-head GEMM and a sampling kernel (argmax of
// logits plus seeded noise). The sampled tokens are copied to pinned memory
// and synchronised on (one copy and one sync per step). A sequence ends on an
// end token or at its length limit (both from the data); the host then
// compacts the active rows, so later steps launch smaller grids and pass a
// different row -> slot map. When no sequence is left, the KV cache is read
// back and the next batch starts.
//
// Each slot's token and position live in device memory, as serving engines
// keep them in input tensors: the kernels read the position there, and the
// sampling kernel advances it. So from one step to the next only the blocks
// of attn_scores change (and addresses, see below); when the batch shrinks,
// every grid and the row -> slot map change.
//
// Activations come from a small caching allocator, as frameworks hand them
// out: blocks rounded to 512 bytes, the free block of the size with the
// lowest address first (as PyTorch's allocator orders them), cudaMalloc only
// when none is free. A buffer is free again as soon as the step drops it (the
// stream orders its reuse), so most steps get the same addresses as the step
// before. They change when the number of active rows changes (other sizes),
// and on and after every 32nd step, which holds the buffers it drops until
// it ends (as a deferred collection does) and so needs more of them.
//
// DESIGN: everything the sim and a GPU must agree on is integer arithmetic
// in decode_math.h; the allocator's addresses never reach the results, so
// they may differ between runs without changing the checksum.
//
// With --graphs-by-hand, the program does what a skilled user writes by hand
// to run the same steps as CUDA graphs: static activation buffers (one per
// buffer the step takes, sized for a full batch, so addresses never change),
// one graph built at the first step with the graph API (the step's 100
// kernels and the copy of the sampled tokens, in a chain), and at every later
// step only the nodes whose launch dimensions or parameters changed updated
// (cudaGraphExecKernelNodeSetParams: attn_scores' block every step, every
// node when the batch shrinks), then one graph launch. The nodes of the next
// step are updated while the device runs this one, for the batch less the
// sequences that reach their length limit (an update affects later launches
// only, not the one in flight); after the sync only what an end token changed
// is updated again. Same kernels, same
// checksum; plain CUDA runtime API, so it runs on a GPU too. It launches no
// kernel with <<<>>>, so the sim charges it no framework work per op
// (SIMCU_HOST_NS): like a framework that replays its graphs and skips its
// per-op dispatch, and unlike a transparent interposer, which cannot.
//
// Prints one line "checksum <hex>" (FNV-1a of every step's sampled tokens and
// of the KV cache after each batch) and a summary on stderr.
// Each batch and each step is an NVTX range ("batch", "step"), as a serving
// engine or PyTorch's record_function marks them: header-only NVTX v3, no-ops
// unless a tool (nsys, grape run) names an injection library.
// Usage: decode [--iters N] [--graphs-by-hand]   (N batches; default 8)
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <tuple>
#include <utility>
#include "common.h"
#include "decode_math.h"

#define GC_EVERY 32     // every 32nd step releases its buffers at its end
#define POOL_ROUND 512  // allocation granularity, bytes
#define POOL_MAX 1024   // most blocks the allocator holds
// --graphs-by-hand: one static buffer per buffer a step takes, each big
// enough for the largest (a full batch's attention scores).
#define SLOT_INTS (DEC_B * DEC_NH * DEC_T)
static_assert(SLOT_INTS >= DEC_B * 2 * DEC_F && SLOT_INTS >= DEC_B * DEC_V &&
                  SLOT_INTS >= DEC_B * DEC_D,
              "a slot holds every buffer of a step");

__global__ void embed(const int32_t* E, const int32_t* tok, int32_t* x, dec_rows_t rows) {
  int r = blockIdx.x, j = threadIdx.x;
  x[r * DEC_D + j] = E[tok[rows.slot[r]] * DEC_D + j];
}

__global__ void rmsnorm(const int32_t* x, const int32_t* g, int32_t* y) {
  __shared__ int32_t rms;
  int r = blockIdx.x, j = threadIdx.x;
  if (j == 0)
    rms = dec_rms(x + r * DEC_D);
  __syncthreads();
  y[r * DEC_D + j] = dec_norm(x[r * DEC_D + j], g[j], rms);
}

// c = a @ W for the block's row; W is k x m, one thread per output column.
__global__ void gemm(const int32_t* a, const int32_t* W, int32_t* c, int k, int m) {
  int r = blockIdx.x, j = threadIdx.x;
  c[r * m + j] = dec_gemm(a + r * k, W, k, m, j);
}

// One thread per pair of a row: rotates the pair in q and in k.
__global__ void rope(int32_t* q, int32_t* k, const int32_t* pos, dec_rows_t rows) {
  int r = blockIdx.x, p = threadIdx.x;
  int h = p / (DEC_HD / 2), i = p % (DEC_HD / 2);
  int off = r * DEC_D + h * DEC_HD + 2 * i, t = pos[rows.slot[r]];
  dec_rope(q + off, i, t);
  dec_rope(k + off, i, t);
}

// kc, vc: this layer's cache at slot 0, position 0.
__global__ void kv_append(const int32_t* k, const int32_t* v, int32_t* kc, int32_t* vc,
                          const int32_t* pos, dec_rows_t rows) {
  int r = blockIdx.x, j = threadIdx.x, sl = rows.slot[r];
  int dst = sl * DEC_KV_SLOT + pos[sl] * DEC_D + j;
  kc[dst] = k[r * DEC_D + j];
  vc[dst] = v[r * DEC_D + j];
}

// Grid (head, row), one thread per cached position: blockDim.x = t + 1.
__global__ void attn_scores(const int32_t* q, const int32_t* kc, int32_t* s, dec_rows_t rows) {
  int h = blockIdx.x, r = blockIdx.y, p = threadIdx.x;
  s[(r * DEC_NH + h) * DEC_T + p] =
      dec_score(q + r * DEC_D + h * DEC_HD, kc + rows.slot[r] * DEC_KV_SLOT + p * DEC_D + h * DEC_HD);
}

// One thread per head; the loop runs over the cached positions.
__global__ void attn_softmax(int32_t* s, const int32_t* pos, dec_rows_t rows) {
  int r = blockIdx.x, h = threadIdx.x;
  dec_softmax(s + (r * DEC_NH + h) * DEC_T, pos[rows.slot[r]]);
}

__global__ void attn_pv(const int32_t* w, const int32_t* vc, int32_t* o, const int32_t* pos,
                        dec_rows_t rows) {
  int r = blockIdx.x, j = threadIdx.x, sl = rows.slot[r];
  o[r * DEC_D + j] = dec_pv(w + (r * DEC_NH + j / DEC_HD) * DEC_T, vc + sl * DEC_KV_SLOT + j, pos[sl]);
}

__global__ void add(const int32_t* a, const int32_t* b, int32_t* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  c[i] = dec_add(a[i], b[i]);
}

__global__ void act_mul(const int32_t* gu, int32_t* a) {
  int r = blockIdx.x, j = threadIdx.x;
  a[r * DEC_F + j] = dec_act(gu[r * 2 * DEC_F + j], gu[r * 2 * DEC_F + DEC_F + j]);
}

// One thread per row: the next token of its sequence, into the slot's
// current token and into out (what the host copies back); the slot moves on
// to the next position.
__global__ void sample(const int32_t* logits, const int32_t* seed, int32_t* tok, int32_t* pos,
                       int32_t* out, dec_rows_t rows) {
  int r = threadIdx.x, sl = rows.slot[r];
  int32_t v = dec_sample(logits + r * DEC_V, (uint32_t)seed[sl], pos[sl]);
  tok[sl] = v;
  pos[sl]++;
  out[r] = v;
}

// ---- launches: <<<>>>, or the nodes of a graph built by hand ----

#define HAND_ARG_BYTES 128   // most parameter bytes of a kernel here

typedef struct hand_s {
  cudaGraph_t g;
  cudaGraphExec_t x;           // NULL until the first step's graph is built
  cudaGraphNode_t node[DEC_KERNELS_PER_STEP];
  struct {                     // what each kernel node holds now
    const void* k;
    dim3 grid, block;
    unsigned char args[HAND_ARG_BYTES];
    size_t nargs;
  } held[DEC_KERNELS_PER_STEP];
  cudaGraphNode_t copy;        // the sampled tokens to the host
  size_t copy_bytes;
  int next;                    // the step's next kernel
  long launches, updates;
} hand_t;

typedef struct launcher_s {
  cudaStream_t s;
  hand_t* hand;                // NULL: launch with <<<>>>
} launcher_t;

// The step's next kernel as a node: added while the graph is built, else
// updated when its launch dimensions or parameter bytes differ from the node's.
static void hand_kernel(hand_t* H, const void* k, dim3 g, dim3 b, void** argv,
                        const size_t* sizes, size_t n) {
  if (H->next == DEC_KERNELS_PER_STEP) {
    fprintf(stderr, "decode: a step launched more than %d kernels\n", DEC_KERNELS_PER_STEP);
    exit(1);
  }
  int i = H->next++;
  unsigned char args[HAND_ARG_BYTES];
  size_t nargs = 0;
  for (size_t a = 0; a < n; a++) {
    if (nargs + sizes[a] > sizeof(args)) {
      fprintf(stderr, "decode: more than %d parameter bytes\n", HAND_ARG_BYTES);
      exit(1);
    }
    memcpy(args + nargs, argv[a], sizes[a]);
    nargs += sizes[a];
  }
  cudaKernelNodeParams p;
  memset(&p, 0, sizeof(p));
  p.func = (void*)k;
  p.gridDim = g;
  p.blockDim = b;
  p.kernelParams = argv;
  if (H->x == NULL) {
    CHECK(cudaGraphAddKernelNode(&H->node[i], H->g, i > 0 ? &H->node[i - 1] : NULL, i > 0, &p));
  } else if (H->held[i].k != k || H->held[i].nargs != nargs ||
             memcmp(&H->held[i].grid, &g, sizeof(g)) != 0 ||
             memcmp(&H->held[i].block, &b, sizeof(b)) != 0 ||
             memcmp(H->held[i].args, args, nargs) != 0) {
    CHECK(cudaGraphExecKernelNodeSetParams(H->x, H->node[i], &p));
    H->updates++;
  } else {
    return;
  }
  H->held[i].k = k;
  H->held[i].grid = g;
  H->held[i].block = b;
  memcpy(H->held[i].args, args, nargs);
  H->held[i].nargs = nargs;
}

template <typename T, size_t... I>
static void hand_args(hand_t* H, const void* k, dim3 g, dim3 b, T& v, std::index_sequence<I...>) {
  void* argv[] = {(void*)&std::get<I>(v)...};
  size_t sizes[] = {sizeof(std::get<I>(v))...};
  hand_kernel(H, k, g, b, argv, sizes, sizeof...(I));
}

// k<<<g, b, 0, s>>>(a...), or the step's next node with those parameters
// (converted to the kernel's parameter types first, as a launch does).
template <typename... P, typename... A>
static void launch(launcher_t* L, void (*k)(P...), dim3 g, dim3 b, A... a) {
  if (L->hand == NULL) {
    k<<<g, b, 0, L->s>>>(a...);
    return;
  }
  std::tuple<P...> v(a...);
  hand_args(L->hand, (const void*)k, g, b, v, std::index_sequence_for<P...>{});
}

// Ends a step of the graph built by hand: its copy of the n sampled tokens
// from out to h_out (added, or resized when n changed), the graph built at
// the first step, and one launch.
static void hand_step_end(hand_t* H, const int32_t* out, int32_t* h_out, int n, cudaStream_t s) {
  size_t bytes = (size_t)n * sizeof(int32_t);
  if (H->x == NULL) {
    CHECK(cudaGraphAddMemcpyNode1D(&H->copy, H->g, &H->node[H->next - 1], 1, h_out, out, bytes,
                                   cudaMemcpyDeviceToHost));
    CHECK(cudaGraphInstantiate(&H->x, H->g, 0));
  } else if (bytes != H->copy_bytes) {
    CHECK(cudaGraphExecMemcpyNodeSetParams1D(H->x, H->copy, h_out, out, bytes,
                                             cudaMemcpyDeviceToHost));
    H->updates++;
  }
  H->copy_bytes = bytes;
  H->next = 0;
  CHECK(cudaGraphLaunch(H->x, s));
  H->launches++;
}

// ---- the caching allocator ----

typedef struct pool_s {
  struct {
    int32_t* ptr;
    size_t size;
  } blk[POOL_MAX];        // every block ever allocated
  int nblk;
  int free_[POOL_MAX];    // indexes into blk: the free blocks, unordered
  int nfree;
  int held[POOL_MAX];     // blocks dropped while deferring, in drop order
  int nheld;
  int defer;              // hold dropped blocks until pool_release
  uint64_t sig;           // FNV-1a of the addresses handed out this step (main resets it)
  long mallocs, gets;
  int fixed;              // --graphs-by-hand: the k-th get of every step is block k
  int next;               // (fixed) the step's next block; main resets it
} pool_t;

// A block of at least n_ints int32s: the free one of that rounded size with
// the lowest address, else a new one.
static int32_t* pool_get(pool_t* P, int n_ints) {
  if (P->fixed) {
    if (n_ints > SLOT_INTS) {
      fprintf(stderr, "decode: a buffer larger than a slot\n");
      exit(1);
    }
    if (P->next == P->nblk) {
      if (P->nblk == POOL_MAX) {
        fprintf(stderr, "decode: allocator full (%d blocks)\n", POOL_MAX);
        exit(1);
      }
      CHECK(cudaMalloc((void**)&P->blk[P->nblk].ptr, SLOT_INTS * sizeof(int32_t)));
      P->blk[P->nblk++].size = SLOT_INTS * sizeof(int32_t);
      P->mallocs++;
    }
    P->gets++;
    P->sig = ex_fnv(P->sig, &P->blk[P->next].ptr, sizeof(P->blk[P->next].ptr));
    return P->blk[P->next++].ptr;
  }
  size_t size = ((size_t)n_ints * sizeof(int32_t) + POOL_ROUND - 1) / POOL_ROUND * POOL_ROUND;
  int b = -1, at = -1;
  for (int i = 0; i < P->nfree; i++) {
    int c = P->free_[i];
    if (P->blk[c].size == size &&
        (b < 0 || (uintptr_t)P->blk[c].ptr < (uintptr_t)P->blk[b].ptr)) {
      b = c;
      at = i;
    }
  }
  if (b >= 0) {
    P->free_[at] = P->free_[--P->nfree];
  } else {
    if (P->nblk == POOL_MAX) {
      fprintf(stderr, "decode: allocator full (%d blocks)\n", POOL_MAX);
      exit(1);
    }
    b = P->nblk++;
    CHECK(cudaMalloc((void**)&P->blk[b].ptr, size));
    P->blk[b].size = size;
    P->mallocs++;
  }
  P->gets++;
  P->sig = ex_fnv(P->sig, &P->blk[b].ptr, sizeof(P->blk[b].ptr));
  return P->blk[b].ptr;
}

// Drops a block from pool_get: free at once, or held while deferring. Later
// work on the stream may reuse it: the stream orders that after its last use.
static void pool_put(pool_t* P, int32_t* ptr) {
  if (P->fixed)
    return;   // a static buffer stays the step's
  int b = 0;
  while (P->blk[b].ptr != ptr)
    b++;
  if (P->defer)
    P->held[P->nheld++] = b;
  else
    P->free_[P->nfree++] = b;
}

// Ends deferring: the held blocks are free again.
static void pool_release(pool_t* P) {
  for (int i = 0; i < P->nheld; i++)
    P->free_[P->nfree++] = P->held[i];
  P->nheld = 0;
  P->defer = 0;
}

// ---- one decode step ----

typedef struct model_s {
  const int32_t* w;   // weights (decode_math.h layout)
  int32_t* kv;        // KV cache: K then V
  int32_t* tok;       // per slot: current token,
  int32_t* seed;      // sampling seed,
  int32_t* pos;       // and position (that of tok)
} model_t;

// Launches the step's DEC_KERNELS_PER_STEP kernels for the tokens at position
// t and returns the buffer the sampled tokens (one per row) will be in.
static int32_t* step(pool_t* P, const model_t* M, const dec_rows_t* rows, int t, launcher_t* L) {
  const int n = rows->n;
  int32_t* x = pool_get(P, n * DEC_D);
  launch(L, embed, n, DEC_D, M->w + DEC_W_EMB, M->tok, x, *rows);
  for (int l = 0; l < DEC_L; l++) {
    const int32_t* lw = M->w + l * DEC_W_LAYER;
    int32_t* kc = M->kv + l * DEC_KV_LAYER;
    int32_t* vc = kc + DEC_KV_HALF;
    // Attention block.
    int32_t* h = pool_get(P, n * DEC_D);
    launch(L, rmsnorm, n, DEC_D, x, lw + DEC_W_G1, h);
    int32_t* q = pool_get(P, n * DEC_D);
    int32_t* k = pool_get(P, n * DEC_D);
    int32_t* v = pool_get(P, n * DEC_D);
    launch(L, gemm, n, DEC_D, h, lw + DEC_W_Q, q, DEC_D, DEC_D);
    launch(L, gemm, n, DEC_D, h, lw + DEC_W_K, k, DEC_D, DEC_D);
    launch(L, gemm, n, DEC_D, h, lw + DEC_W_V, v, DEC_D, DEC_D);
    pool_put(P, h);
    launch(L, rope, n, DEC_D / 2, q, k, M->pos, *rows);
    launch(L, kv_append, n, DEC_D, k, v, kc, vc, M->pos, *rows);
    pool_put(P, k);
    pool_put(P, v);
    int32_t* sc = pool_get(P, n * DEC_NH * DEC_T);
    launch(L, attn_scores, dim3(DEC_NH, n), t + 1, q, kc, sc, *rows);
    pool_put(P, q);
    launch(L, attn_softmax, n, DEC_NH, sc, M->pos, *rows);
    int32_t* a = pool_get(P, n * DEC_D);
    launch(L, attn_pv, n, DEC_D, sc, vc, a, M->pos, *rows);
    pool_put(P, sc);
    int32_t* o = pool_get(P, n * DEC_D);
    launch(L, gemm, n, DEC_D, a, lw + DEC_W_O, o, DEC_D, DEC_D);
    pool_put(P, a);
    int32_t* x2 = pool_get(P, n * DEC_D);
    launch(L, add, n, DEC_D, x, o, x2);
    pool_put(P, x);
    pool_put(P, o);
    x = x2;
    // MLP block.
    h = pool_get(P, n * DEC_D);
    launch(L, rmsnorm, n, DEC_D, x, lw + DEC_W_G2, h);
    int32_t* gu = pool_get(P, n * 2 * DEC_F);
    launch(L, gemm, n, 2 * DEC_F, h, lw + DEC_W_GU, gu, DEC_D, 2 * DEC_F);
    pool_put(P, h);
    int32_t* m = pool_get(P, n * DEC_F);
    launch(L, act_mul, n, DEC_F, gu, m);
    pool_put(P, gu);
    int32_t* d = pool_get(P, n * DEC_D);
    launch(L, gemm, n, DEC_D, m, lw + DEC_W_DOWN, d, DEC_F, DEC_D);
    pool_put(P, m);
    x2 = pool_get(P, n * DEC_D);
    launch(L, add, n, DEC_D, x, d, x2);
    pool_put(P, x);
    pool_put(P, d);
    x = x2;
  }
  int32_t* h = pool_get(P, n * DEC_D);
  launch(L, rmsnorm, n, DEC_D, x, M->w + DEC_W_GF, h);
  pool_put(P, x);
  int32_t* logits = pool_get(P, n * DEC_V);
  launch(L, gemm, n, DEC_V, h, M->w + DEC_W_LM, logits, DEC_D, DEC_V);
  pool_put(P, h);
  int32_t* out = pool_get(P, n);
  launch(L, sample, 1, n, logits, M->seed, M->tok, M->pos, out, *rows);
  pool_put(P, logits);
  CHECK(cudaGetLastError());
  return out;
}

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 8);
  int by_hand = ex_flag(argc, argv, "--graphs-by-hand");
  static int32_t W[DEC_W_TOTAL];
  dec_weights(W);

  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  int32_t *d_w, *d_kv, *d_batch, *h_batch, *h_out, *h_kv;
  const size_t kv_bytes = 2 * (size_t)DEC_KV_HALF * sizeof(int32_t);
  CHECK(cudaMalloc((void**)&d_w, sizeof(W)));
  CHECK(cudaMalloc((void**)&d_kv, kv_bytes));
  CHECK(cudaMalloc((void**)&d_batch, 3 * DEC_B * sizeof(int32_t)));
  CHECK(cudaMallocHost((void**)&h_batch, 3 * DEC_B * sizeof(int32_t)));
  CHECK(cudaMallocHost((void**)&h_out, DEC_B * sizeof(int32_t)));
  CHECK(cudaMallocHost((void**)&h_kv, kv_bytes));
  CHECK(cudaMemcpyAsync(d_w, W, sizeof(W), cudaMemcpyHostToDevice, s));
  // Positions a batch never writes are read back too: start them defined.
  CHECK(cudaMemsetAsync(d_kv, 0, kv_bytes, s));
  model_t M = {d_w, d_kv, d_batch, d_batch + DEC_B, d_batch + 2 * DEC_B};

  static pool_t P;
  static hand_t H;
  launcher_t L = {s, NULL};
  if (by_hand) {
    P.fixed = 1;
    L.hand = &H;
    CHECK(cudaGraphCreate(&H.g, 0));
  }
  uint64_t sum = EX_FNV_INIT, prev_sig = 0;
  long steps = 0, seqs = 0, by_eos = 0, by_len = 0, shrinks = 0, collections = 0, moved = 0;
  for (int it = 0; it < iters; it++) {
    nvtxRangePushA("batch");
    int32_t maxlen[DEC_B];
    dec_rows_t rows;
    memset(&rows, 0, sizeof(rows));   // unused slots are parameter bytes too
    rows.n = dec_batch(it, h_batch, h_batch + DEC_B, maxlen);
    for (int b = 0; b < rows.n; b++) {
      rows.slot[b] = b;
      h_batch[2 * DEC_B + b] = 0;
    }
    seqs += rows.n;
    CHECK(cudaMemcpyAsync(d_batch, h_batch, 3 * DEC_B * sizeof(int32_t), cudaMemcpyHostToDevice,
                          s));
    for (int t = 0; rows.n > 0; t++) {
      nvtxRangePushA("step");
      P.defer = !by_hand && steps % GC_EVERY == GC_EVERY - 1;
      collections += P.defer;
      P.sig = EX_FNV_INIT;
      P.next = 0;
      int32_t* out = step(&P, &M, &rows, t, &L);
      if (by_hand)
        hand_step_end(&H, out, h_out, rows.n, s);
      else
        CHECK(cudaMemcpyAsync(h_out, out, rows.n * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
      pool_put(&P, out);
      if (by_hand) {
        // The next step's nodes, updated while the device runs this one. The
        // host knows which sequences reach their length limit at this step,
        // so the next batch is taken without them; one that samples its end
        // token is only seen after the sync, which updates again what it
        // changed.
        dec_rows_t ahead;
        memset(&ahead, 0, sizeof(ahead));
        for (int r = 0; r < rows.n; r++)
          if (t + 1 < maxlen[rows.slot[r]])
            ahead.slot[ahead.n++] = rows.slot[r];
        if (ahead.n > 0) {
          int next = P.next;
          uint64_t sig = P.sig;
          P.next = 0;
          step(&P, &M, &ahead, t + 1, &L);
          H.next = 0;
          P.next = next;
          P.sig = sig;
        }
      }
      CHECK(cudaStreamSynchronize(s));
      pool_release(&P);
      moved += steps > 0 && P.sig != prev_sig;
      prev_sig = P.sig;
      sum = ex_fnv(sum, h_out, rows.n * sizeof(int32_t));
      steps++;
      // Keep the sequences that go on, in order.
      int n = 0;
      for (int r = 0; r < rows.n; r++) {
        int ended_eos = h_out[r] < DEC_EOS, ended_len = t + 1 >= maxlen[rows.slot[r]];
        by_eos += ended_eos;
        by_len += !ended_eos && ended_len;
        if (!ended_eos && !ended_len)
          rows.slot[n++] = rows.slot[r];
      }
      shrinks += n < rows.n && n > 0;
      for (int r = n; r < rows.n; r++)
        rows.slot[r] = 0;
      rows.n = n;
      nvtxRangePop();
    }
    CHECK(cudaMemcpyAsync(h_kv, d_kv, kv_bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    sum = ex_fnv(sum, h_kv, kv_bytes);
    nvtxRangePop();
  }
  fprintf(stderr,
          "decode: %d batches, %ld sequences (%ld ended by end token, %ld at length limit), "
          "%ld steps, %d kernels per step, %ld shrinks; allocator: %ld buffers from %ld "
          "cudaMalloc, %ld collections, addresses changed on %ld steps\n",
          iters, seqs, by_eos, by_len, steps, DEC_KERNELS_PER_STEP, shrinks, P.gets, P.mallocs,
          collections, moved);
  if (by_hand) {
    fprintf(stderr, "decode: by hand: %ld graph launches, %ld node updates\n", H.launches,
            H.updates);
    CHECK(cudaGraphExecDestroy(H.x));
    CHECK(cudaGraphDestroy(H.g));
  }
  for (int b = 0; b < P.nblk; b++)
    CHECK(cudaFree(P.blk[b].ptr));
  CHECK(cudaFreeHost(h_kv));
  CHECK(cudaFreeHost(h_out));
  CHECK(cudaFreeHost(h_batch));
  CHECK(cudaFree(d_batch));
  CHECK(cudaFree(d_kv));
  CHECK(cudaFree(d_w));
  CHECK(cudaStreamDestroy(s));
  printf("checksum %016llx\n", (unsigned long long)sum);
  return 0;
}

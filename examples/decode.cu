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
// Prints one line "checksum <hex>" (FNV-1a of every step's sampled tokens and
// of the KV cache after each batch) and a summary on stderr.
// Usage: decode [--iters N]   (N batches; default 8)
#include <cuda_runtime.h>
#include "common.h"
#include "decode_math.h"

#define GC_EVERY 32     // every 32nd step releases its buffers at its end
#define POOL_ROUND 512  // allocation granularity, bytes
#define POOL_MAX 1024   // most blocks the allocator holds

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
} pool_t;

// A block of at least n_ints int32s: the free one of that rounded size with
// the lowest address, else a new one.
static int32_t* pool_get(pool_t* P, int n_ints) {
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
static int32_t* step(pool_t* P, const model_t* M, const dec_rows_t* rows, int t, cudaStream_t s) {
  const int n = rows->n;
  int32_t* x = pool_get(P, n * DEC_D);
  embed<<<n, DEC_D, 0, s>>>(M->w + DEC_W_EMB, M->tok, x, *rows);
  for (int l = 0; l < DEC_L; l++) {
    const int32_t* lw = M->w + l * DEC_W_LAYER;
    int32_t* kc = M->kv + l * DEC_KV_LAYER;
    int32_t* vc = kc + DEC_KV_HALF;
    // Attention block.
    int32_t* h = pool_get(P, n * DEC_D);
    rmsnorm<<<n, DEC_D, 0, s>>>(x, lw + DEC_W_G1, h);
    int32_t* q = pool_get(P, n * DEC_D);
    int32_t* k = pool_get(P, n * DEC_D);
    int32_t* v = pool_get(P, n * DEC_D);
    gemm<<<n, DEC_D, 0, s>>>(h, lw + DEC_W_Q, q, DEC_D, DEC_D);
    gemm<<<n, DEC_D, 0, s>>>(h, lw + DEC_W_K, k, DEC_D, DEC_D);
    gemm<<<n, DEC_D, 0, s>>>(h, lw + DEC_W_V, v, DEC_D, DEC_D);
    pool_put(P, h);
    rope<<<n, DEC_D / 2, 0, s>>>(q, k, M->pos, *rows);
    kv_append<<<n, DEC_D, 0, s>>>(k, v, kc, vc, M->pos, *rows);
    pool_put(P, k);
    pool_put(P, v);
    int32_t* sc = pool_get(P, n * DEC_NH * DEC_T);
    attn_scores<<<dim3(DEC_NH, n), t + 1, 0, s>>>(q, kc, sc, *rows);
    pool_put(P, q);
    attn_softmax<<<n, DEC_NH, 0, s>>>(sc, M->pos, *rows);
    int32_t* a = pool_get(P, n * DEC_D);
    attn_pv<<<n, DEC_D, 0, s>>>(sc, vc, a, M->pos, *rows);
    pool_put(P, sc);
    int32_t* o = pool_get(P, n * DEC_D);
    gemm<<<n, DEC_D, 0, s>>>(a, lw + DEC_W_O, o, DEC_D, DEC_D);
    pool_put(P, a);
    int32_t* x2 = pool_get(P, n * DEC_D);
    add<<<n, DEC_D, 0, s>>>(x, o, x2);
    pool_put(P, x);
    pool_put(P, o);
    x = x2;
    // MLP block.
    h = pool_get(P, n * DEC_D);
    rmsnorm<<<n, DEC_D, 0, s>>>(x, lw + DEC_W_G2, h);
    int32_t* gu = pool_get(P, n * 2 * DEC_F);
    gemm<<<n, 2 * DEC_F, 0, s>>>(h, lw + DEC_W_GU, gu, DEC_D, 2 * DEC_F);
    pool_put(P, h);
    int32_t* m = pool_get(P, n * DEC_F);
    act_mul<<<n, DEC_F, 0, s>>>(gu, m);
    pool_put(P, gu);
    int32_t* d = pool_get(P, n * DEC_D);
    gemm<<<n, DEC_D, 0, s>>>(m, lw + DEC_W_DOWN, d, DEC_F, DEC_D);
    pool_put(P, m);
    x2 = pool_get(P, n * DEC_D);
    add<<<n, DEC_D, 0, s>>>(x, d, x2);
    pool_put(P, x);
    pool_put(P, d);
    x = x2;
  }
  int32_t* h = pool_get(P, n * DEC_D);
  rmsnorm<<<n, DEC_D, 0, s>>>(x, M->w + DEC_W_GF, h);
  pool_put(P, x);
  int32_t* logits = pool_get(P, n * DEC_V);
  gemm<<<n, DEC_V, 0, s>>>(h, M->w + DEC_W_LM, logits, DEC_D, DEC_V);
  pool_put(P, h);
  int32_t* out = pool_get(P, n);
  sample<<<1, n, 0, s>>>(logits, M->seed, M->tok, M->pos, out, *rows);
  pool_put(P, logits);
  CHECK(cudaGetLastError());
  return out;
}

int main(int argc, char** argv) {
  int iters = ex_iters(argc, argv, 8);
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
  uint64_t sum = EX_FNV_INIT, prev_sig = 0;
  long steps = 0, seqs = 0, by_eos = 0, by_len = 0, shrinks = 0, collections = 0, moved = 0;
  for (int it = 0; it < iters; it++) {
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
      P.defer = steps % GC_EVERY == GC_EVERY - 1;
      collections += P.defer;
      P.sig = EX_FNV_INIT;
      int32_t* out = step(&P, &M, &rows, t, s);
      CHECK(cudaMemcpyAsync(h_out, out, rows.n * sizeof(int32_t), cudaMemcpyDeviceToHost, s));
      pool_put(&P, out);
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
    }
    CHECK(cudaMemcpyAsync(h_kv, d_kv, kv_bytes, cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    sum = ex_fnv(sum, h_kv, kv_bytes);
  }
  fprintf(stderr,
          "decode: %d batches, %ld sequences (%ld ended by end token, %ld at length limit), "
          "%ld steps, %d kernels per step, %ld shrinks; allocator: %ld buffers from %ld "
          "cudaMalloc, %ld collections, addresses changed on %ld steps\n",
          iters, seqs, by_eos, by_len, steps, DEC_KERNELS_PER_STEP, shrinks, P.gets, P.mallocs,
          collections, moved);
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

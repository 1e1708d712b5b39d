/* Runs the examples (built by nvcc) on the simulated device and checks their
 * checksums and SIMCU_REPORT counts against plain-C reference computations of
 * the same algorithms, written here from the examples' descriptions.
 * Skipped when nvcc was not found (the examples are then not built). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <math.h>

#include "beam_math.h"
#include "common.h"
#include "decode_math.h"
#include "dynrnn_math.h"
#include "moe_math.h"

/* Documented checksums (examples/README.md), default --iters. */
#define DYNRNN_CHECKSUM "1b46380893f1b5bb"
#define BEAM_CHECKSUM "1dae93a92d7d52e8"
#define MLP_CHECKSUM "b6928570b1e2bf7a"
#define DECODE_CHECKSUM "12ed41e267dbd3f0"
#define MOE_CHECKSUM "c0210fcd1f36fdf3"

static const char* exdir(void) {
  const char* d = getenv("EXAMPLES_DIR");
  return d != NULL ? d : "";
}

static void need_example(const char* name) {
  char path[4096];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", exdir(), name);
  if (exdir()[0] == '\0' || stat(path, &st) != 0)
    cr_skip_test("nvcc not found at configure time: example %s was not built", name);
}

/* Runs an example with the sim; returns its stdout's last line and fills the report. */
static void run(const char* name, const char* args, const char* extra_env, char* line, size_t n,
                char* report, size_t rn) {
  char rpath[] = "/tmp/simcu-report-XXXXXX";
  int fd = mkstemp(rpath);
  cr_assert_geq(fd, 0);
  close(fd);
  char cmd[8192];
  const char* preload = getenv("SIM_PRELOAD");
  snprintf(cmd, sizeof(cmd), "LD_PRELOAD='%s' LD_LIBRARY_PATH='%s' SIMCU_REPORT='%s' %s '%s/%s' %s",
           preload != NULL ? preload : "", getenv("SIM_DIR"), rpath, extra_env, exdir(), name,
           args);
  FILE* p = popen(cmd, "r");
  cr_assert_not_null(p);
  line[0] = '\0';
  char buf[512];
  while (fgets(buf, sizeof(buf), p) != NULL) {
    size_t k = strlen(buf) < n - 1 ? strlen(buf) : n - 1;
    memcpy(line, buf, k);
    line[k] = '\0';
  }
  cr_assert_eq(pclose(p), 0, "%s failed", cmd);
  FILE* r = fopen(rpath, "r");
  cr_assert_not_null(r);
  size_t got = fread(report, 1, rn - 1, r);
  report[got] = '\0';
  fclose(r);
  unlink(rpath);
}

/* The number after "key": in the report, or -1. */
static long long count(const char* report, const char* key) {
  char pat[256];
  snprintf(pat, sizeof(pat), "\"%s\":", key);
  const char* p = strstr(report, pat);
  return p != NULL ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

/* Runs an example (see run) and asserts that it printed the checksum line of
 * the reference's sum; where readme is given, that line must also be the
 * documented one. */
static void run_matching(const char* name, const char* args, const char* extra_env, uint64_t sum,
                         const char* readme, char* report, size_t rn) {
  char line[256], want[64];
  snprintf(want, sizeof(want), "checksum %016llx\n", (unsigned long long)sum);
  if (readme != NULL)
    cr_assert_str_eq(want, readme, "reference disagrees with README");
  run(name, args, extra_env, line, sizeof(line), report, rn);
  cr_assert_str_eq(line, want);
}

/* ---- dynrnn reference ---- */

typedef struct dyn_ref_s {
  uint64_t sum;
  long launches, steps, sparse, dense;
} dyn_ref_t;

static dyn_ref_t dynrnn_ref(int iters) {
  static int32_t len[RNN_B], x[RNN_B * RNN_T], W[RNN_H * RNN_H], h[2][RNN_B * RNN_H];
  dyn_ref_t r = {EX_FNV_INIT, 0, 0, 0, 0};
  for (int it = 0; it < iters; it++) {
    rnn_inputs(it, len, x, W);
    memset(h, 0, sizeof(h));
    int cur = 0, active = RNN_B, maxabs = 0;
    for (int t = 0; active > 0 && t < RNN_T; t++) {
      if (maxabs > RNN_RENORM_AT) {
        for (int i = 0; i < RNN_B * RNN_H; i++)
          h[cur][i] /= 2;
        r.launches++;
      }
      for (int b = 0; b < RNN_B; b++)
        for (int j = 0; j < RNN_H; j++)
          h[1 - cur][b * RNN_H + j] = t < len[b]
              ? rnn_cell(W, h[cur] + b * RNN_H, x[b * RNN_T + t], j) : h[cur][b * RNN_H + j];
      if (active >= RNN_B / 2) {
        r.launches += 1;
        r.dense++;
      } else {
        r.launches += 2;
        r.sparse++;
      }
      cur = 1 - cur;
      active = 0;
      maxabs = 0;
      for (int b = 0; b < RNN_B; b++)
        active += t + 1 < len[b];
      for (int i = 0; i < RNN_B * RNN_H; i++) {
        int a = h[cur][i] < 0 ? -h[cur][i] : h[cur][i];
        maxabs = a > maxabs ? a : maxabs;
      }
      r.launches++;   /* stats */
      r.steps++;
    }
    r.sum = ex_fnv(r.sum, h[cur], sizeof(h[cur]));
  }
  return r;
}

Test(sim_examples, dynrnn_matches_reference_and_report) {
  need_example("dynrnn");
  char report[16384];
  dyn_ref_t ref = dynrnn_ref(4);
  run_matching("dynrnn", "", "", ref.sum, "checksum " DYNRNN_CHECKSUM "\n", report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  cr_assert_eq(count(report, "cuLaunchKernel"), ref.launches);
  cr_assert_eq(count(report, "cuStreamSynchronize"), ref.steps);
  cr_assert_eq(count(report, "cuMemcpyDtoDAsync_v2"), ref.sparse);
  cr_assert_eq(count(report, "graph_launches"), 0);
}

Test(sim_examples, dynrnn_inline_mode_and_iters) {
  need_example("dynrnn");
  char report[16384];
  dyn_ref_t ref = dynrnn_ref(2);
  run_matching("dynrnn", "--iters 2", "SIMCU_SYNC=1", ref.sum, NULL, report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
}

Test(sim_examples, dynrnn_own_graphs_equal_eager) {
  need_example("dynrnn");
  char report[16384];
  dyn_ref_t ref = dynrnn_ref(4);
  run_matching("dynrnn", "--graph", "", ref.sum, NULL, report, sizeof(report));
  /* Each dense step is a captured graph of step_dense + stats. */
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  cr_assert_eq(count(report, "graph_launches"), ref.dense);
  cr_assert_eq(count(report, "graph_kernel_nodes_executed"), 2 * ref.dense);
  /* Captured launches are still calls of cuLaunchKernel; they run as graph nodes. */
  cr_assert_eq(count(report, "cuLaunchKernel"), ref.launches);
  cr_assert_eq(count(report, "cuGraphLaunch"), ref.dense);
  cr_assert_eq(count(report, "cuStreamBeginCapture_v2"), ref.dense);
  cr_assert_eq(count(report, "cuGraphExecUpdate_v2"), ref.dense - 1);
  cr_assert_eq(count(report, "exec_node_param_updates"), 2 * (ref.dense - 1));
}

Test(sim_examples, dynrnn_per_thread_default_stream) {
  need_example("dynrnn_ptds");
  char report[16384];
  dyn_ref_t ref = dynrnn_ref(4);
  run_matching("dynrnn_ptds", "", "", ref.sum, NULL, report, sizeof(report));
  cr_assert_eq(count(report, "cuLaunchKernel_ptsz"), ref.launches);
  cr_assert_eq(count(report, "cuLaunchKernel"), -1, "no launch took the legacy route");
  cr_assert_eq(count(report, "cuStreamSynchronize_ptsz"), ref.steps);
}

/* ---- beam reference ---- */

typedef struct beam_ref_s {
  uint64_t sum;
  long launches, steps;
} beam_ref_t;

static beam_ref_t beam_ref(int iters) {
  beam_ref_t r = {EX_FNV_INIT, 0, 0};
  for (int it = 0; it < iters; it++) {
    uint32_t h[BEAM_K], nh[BEAM_K];
    int32_t cum[BEAM_K], scores[BEAM_K * BEAM_V], parent[BEAM_K], token[BEAM_K], info[2];
    beam_start(it, h, cum);
    int pen = 0;
    for (int t = 0; t < BEAM_STEPS; t++) {
      for (int k = 0; k < BEAM_K; k++)
        for (int v = 0; v < BEAM_V; v++)
          scores[k * BEAM_V + v] = beam_score(h[k], cum[k], v) - (pen && v % 7 == 0 ? BEAM_PENALTY : 0);
      beam_topk(scores, cum, parent, token, info);
      for (int k = 0; k < BEAM_K; k++)
        nh[k] = beam_next(h[parent[k]], token[k]);
      memcpy(h, nh, sizeof(h));
      r.launches += 3 + pen;
      r.steps++;
      r.sum = ex_fnv(r.sum, info, sizeof(info));
      if (info[0] < BEAM_EOS)
        break;
      pen = info[0] % 7 == 0;
    }
    r.sum = ex_fnv(r.sum, h, sizeof(h));
  }
  return r;
}

Test(sim_examples, beam_matches_reference_and_report) {
  need_example("beam");
  char line[256], report[16384];
  beam_ref_t ref = beam_ref(6);
  run_matching("beam", "", "", ref.sum, "checksum " BEAM_CHECKSUM "\n", report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  cr_assert_eq(count(report, "cuLaunchKernel"), ref.launches);
  cr_assert_eq(count(report, "cuStreamSynchronize"), ref.steps);
  /* The driver-entry-point route: the runtime's own lookups (as in a program
   * that makes none, dynrnn) plus beam's one. */
  char base[16384];
  need_example("dynrnn");
  run("dynrnn", "--iters 1", "", line, sizeof(line), base, sizeof(base));
  cr_assert_eq(count(report, "cuGetProcAddress_v2"), count(base, "cuGetProcAddress_v2") + 1);
}

/* ---- mlp_train reference ---- */

enum { MN = 64, MD = 16, MH = 32, MO = 4 };

static void gemm(int ta, int tb, int m, int n, int k, const float* A, int lda, const float* B,
                 int ldb, float* C, int ldc) {
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0.0f;
      for (int p = 0; p < k; p++)
        acc = fmaf(ta ? A[p * lda + i] : A[i * lda + p], tb ? B[j * ldb + p] : B[p * ldb + j], acc);
      C[i * ldc + j] = fmaf(1.0f, acc, 0.0f);
    }
}

typedef struct mlp_ref_s {
  uint64_t sum;
  long launches, blas_ex;
} mlp_ref_t;

static mlp_ref_t mlp_ref(int iters) {
  static float X[MN * MD], T[MN * MO], W1[MD * MH], W2[MH * MO], Z1[MN * MH], A1[MN * MH],
      Y[MN * MO], G[MN * MO], dA1[MN * MH], gW1[MD * MH], gW2[MH * MO];
  mlp_ref_t r = {EX_FNV_INIT, 0, 0};
  uint64_t seed = 42;
  for (int i = 0; i < MN * MD; i++)
    X[i] = (float)((int)(ex_rand(&seed) % 257) - 128) / 128.0f;
  for (int i = 0; i < MN * MO; i++)
    T[i] = (float)((int)(ex_rand(&seed) % 257) - 128) / 128.0f;
  for (int i = 0; i < MD * MH; i++)
    W1[i] = (float)((int)(ex_rand(&seed) % 65) - 32) / 64.0f;
  for (int i = 0; i < MH * MO; i++)
    W2[i] = (float)((int)(ex_rand(&seed) % 65) - 32) / 64.0f;
  float lr = 1.5f, prev = 1e30f;
  for (int it = 0; it < iters; it++) {
    for (int b = 0; b < 4; b++)
      gemm(0, 0, MN / 4, MH, MD, X + b * (MN / 4) * MD, MD, W1, MH, Z1 + b * (MN / 4) * MH, MH);
    for (int i = 0; i < MN * MH; i++)
      A1[i] = Z1[i] > 0.0f ? Z1[i] : 0.0f;
    gemm(0, 0, MN, MO, MH, A1, MH, W2, MO, Y, MO);
    float acc = 0.0f;
    for (int i = 0; i < MN * MO; i++) {
      float d = Y[i] - T[i];
      G[i] = d * (2.0f / (MN * MO));
      acc = fmaf(d, d, acc);
    }
    float loss = acc * (1.0f / (MN * MO));
    r.sum = ex_fnv(r.sum, &loss, sizeof(loss));
    if (loss > prev)
      lr *= 0.5f;
    prev = loss;
    gemm(1, 0, MH, MO, MN, A1, MH, G, MO, gW2, MO);
    gemm(0, 1, MN, MH, MO, G, MO, W2, MO, dA1, MH);
    for (int i = 0; i < MN * MH; i++)
      if (!(Z1[i] > 0.0f))
        dA1[i] = 0.0f;
    gemm(1, 0, MD, MH, MN, X, MD, dA1, MH, gW1, MH);
    r.launches += 8;   /* batched gemm, relu, gemm, loss, 3 gemms, relu_bwd */
    r.launches += 2;   /* two saxpys */
    if (loss > 0.25f) {
      for (int i = 0; i < MD * MH; i++)
        gW1[i] = fminf(fmaxf(gW1[i], -0.05f), 0.05f);
      for (int i = 0; i < MH * MO; i++)
        gW2[i] = fminf(fmaxf(gW2[i], -0.05f), 0.05f);
      r.launches += 2;
    }
    for (int i = 0; i < MD * MH; i++)
      W1[i] = fmaf(-lr, gW1[i], W1[i]);
    for (int i = 0; i < MH * MO; i++)
      W2[i] = fmaf(-lr, gW2[i], W2[i]);
    r.blas_ex++;
  }
  r.sum = ex_fnv(r.sum, W1, sizeof(W1));
  r.sum = ex_fnv(r.sum, W2, sizeof(W2));
  return r;
}

Test(sim_examples, mlp_train_matches_reference_and_report) {
  need_example("mlp_train");
  char report[16384];
  mlp_ref_t ref = mlp_ref(30);
  run_matching("mlp_train", "", "", ref.sum, "checksum " MLP_CHECKSUM "\n", report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  /* libsimblas's route: raw dlsym of unsuffixed names, its own module. */
  cr_assert_eq(count(report, "cuModuleLoadData"), 1);
  cr_assert_eq(count(report, "cuLaunchKernelEx"), ref.blas_ex);
  cr_assert_eq(count(report, "cuLaunchKernel") + count(report, "cuLaunchKernelEx"), ref.launches);
}

/* ---- decode reference ----
 * One sequence at a time, position by position (the program runs all active
 * rows of a step in each kernel; rows meet only in their own KV-cache slot). */

typedef struct dec_ref_s {
  uint64_t sum;
  long launches, steps, batches;
  /* What a graph of one step updates from step to step (--graphs-by-hand):
   * kernel nodes and the token copy (when the number of rows changes). While
   * a step runs, the next step's nodes are updated for its rows less those
   * that reach their length limit (the 6 attn_scores, whose block grows, and
   * all 100 when rows end); after the sync, what the rows changed from that
   * (the 32 nodes that take the row -> slot map when it changes, all 100 when
   * the number of rows does; at a new batch, the 6 attn_scores too when its
   * first step is not one past the last). */
  long node_updates, copy_updates;
} dec_ref_t;

/* Row i of x (width k) @ W (k x m) into y. */
static void dec_matvec(const int32_t* x, const int32_t* W, int k, int m, int32_t* y) {
  for (int j = 0; j < m; j++)
    y[j] = dec_gemm(x, W, k, m, j);
}

static void dec_rmsnorm(const int32_t* x, const int32_t* g, int32_t* y) {
  int32_t rms = dec_rms(x);
  for (int j = 0; j < DEC_D; j++)
    y[j] = dec_norm(x[j], g[j], rms);
}

/* The next token of the sequence in slot sl, whose current token is tok, at
 * position t; appends its keys and values to kv. */
static int32_t dec_ref_token(const int32_t* W, int32_t (*kv)[DEC_B][DEC_L][DEC_T][DEC_D], int sl,
                             int32_t tok, uint32_t seed, int t) {
  int32_t x[DEC_D], h[DEC_D], q[DEC_D], a[DEC_D], o[DEC_D], gu[2 * DEC_F], m[DEC_F], w[DEC_T],
      logits[DEC_V];
  memcpy(x, W + DEC_W_EMB + tok * DEC_D, sizeof(x));
  for (int l = 0; l < DEC_L; l++) {
    const int32_t* lw = W + l * DEC_W_LAYER;
    int32_t* k = kv[0][sl][l][t];
    int32_t* v = kv[1][sl][l][t];
    dec_rmsnorm(x, lw + DEC_W_G1, h);
    dec_matvec(h, lw + DEC_W_Q, DEC_D, DEC_D, q);
    dec_matvec(h, lw + DEC_W_K, DEC_D, DEC_D, k);
    dec_matvec(h, lw + DEC_W_V, DEC_D, DEC_D, v);
    for (int i = 0; i < DEC_D; i += 2) {
      dec_rope(q + i, (i % DEC_HD) / 2, t);
      dec_rope(k + i, (i % DEC_HD) / 2, t);
    }
    for (int hd = 0; hd < DEC_NH; hd++) {
      for (int p = 0; p <= t; p++)
        w[p] = dec_score(q + hd * DEC_HD, kv[0][sl][l][p] + hd * DEC_HD);
      dec_softmax(w, t);
      for (int j = hd * DEC_HD; j < (hd + 1) * DEC_HD; j++)
        a[j] = dec_pv(w, &kv[1][sl][l][0][j], t);
    }
    dec_matvec(a, lw + DEC_W_O, DEC_D, DEC_D, o);
    for (int j = 0; j < DEC_D; j++)
      x[j] = dec_add(x[j], o[j]);
    dec_rmsnorm(x, lw + DEC_W_G2, h);
    dec_matvec(h, lw + DEC_W_GU, DEC_D, 2 * DEC_F, gu);
    for (int j = 0; j < DEC_F; j++)
      m[j] = dec_act(gu[j], gu[DEC_F + j]);
    dec_matvec(m, lw + DEC_W_DOWN, DEC_F, DEC_D, o);
    for (int j = 0; j < DEC_D; j++)
      x[j] = dec_add(x[j], o[j]);
  }
  dec_rmsnorm(x, W + DEC_W_GF, h);
  dec_matvec(h, W + DEC_W_LM, DEC_D, DEC_V, logits);
  return dec_sample(logits, seed, t);
}

/* Kernel nodes updated from a step of n rows (row -> slot map live) at
 * position t to one of n2 rows at t2: all when the number of rows changes,
 * those that take the map when it changes, else the attn_scores nodes when
 * the position does. */
static long dec_ref_updates(int n, const int* live, int t, int n2, const int* live2, int t2) {
  int rows_kernels = 1 + 5 * DEC_L + 1;   /* embed, rope..attn_pv per layer, sample */
  if (n2 != n)
    return DEC_KERNELS_PER_STEP;
  if (memcmp(live, live2, n * sizeof(int)) != 0)
    return rows_kernels;
  return t2 != t ? DEC_L : 0;
}

static dec_ref_t decode_ref(int iters) {
  static int32_t W[DEC_W_TOTAL], kv[2][DEC_B][DEC_L][DEC_T][DEC_D];
  dec_ref_t r = {EX_FNV_INIT, 0, 0, 0, 0, 0};
  /* What the kernel nodes hold now: rows, row -> slot map, position. */
  int node_n = 0, node_t = 0, node_live[DEC_B] = {0}, launched_n = 0;
  dec_weights(W);
  memset(kv, 0, sizeof(kv));
  for (int it = 0; it < iters; it++) {
    int32_t tok[DEC_B], sseed[DEC_B], maxlen[DEC_B], live[DEC_B];
    int n = dec_batch(it, tok, sseed, maxlen);
    for (int b = 0; b < n; b++)
      live[b] = b;
    for (int t = 0; n > 0; t++) {
      if (r.steps > 0) {
        r.node_updates += dec_ref_updates(node_n, node_live, node_t, n, live, t);
        r.copy_updates += n != launched_n;
      }
      launched_n = n;
      /* The pre-update of the next step, while this one runs: its rows less
       * those at their length limit, position t + 1. */
      int ahead[DEC_B], ahead_n = 0;
      for (int i = 0; i < n; i++)
        if (t + 1 < maxlen[live[i]])
          ahead[ahead_n++] = live[i];
      if (ahead_n > 0) {
        r.node_updates += dec_ref_updates(n, live, t, ahead_n, ahead, t + 1);
        node_n = ahead_n;
        memcpy(node_live, ahead, ahead_n * sizeof(int));
        node_t = t + 1;
      } else {
        node_n = n;
        memcpy(node_live, live, n * sizeof(int));
        node_t = t;
      }
      for (int i = 0; i < n; i++)
        tok[live[i]] = dec_ref_token(W, kv, live[i], tok[live[i]], (uint32_t)sseed[live[i]], t);
      /* The host sees the new tokens of the live sequences, in slot order. */
      for (int i = 0; i < n; i++)
        r.sum = ex_fnv(r.sum, &tok[live[i]], sizeof(int32_t));
      int kept = 0;
      for (int i = 0; i < n; i++)
        if (tok[live[i]] >= DEC_EOS && t + 1 < maxlen[live[i]])
          live[kept++] = live[i];
      n = kept;
      r.launches += 1 + DEC_L * 16 + 3;   /* embed, 16 per layer, norm + LM head + sample */
      r.steps++;
    }
    r.sum = ex_fnv(r.sum, kv, sizeof(kv));
    r.batches++;
  }
  return r;
}

Test(sim_examples, decode_matches_reference_and_report) {
  need_example("decode");
  char report[16384];
  dec_ref_t ref = decode_ref(8);
  run_matching("decode", "", "", ref.sum, "checksum " DECODE_CHECKSUM "\n", report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  cr_assert_eq(count(report, "cuLaunchKernel"), ref.launches);
  /* One token copy and sync per step, one KV-cache copy and sync per batch. */
  cr_assert_eq(count(report, "cuMemcpyDtoHAsync_v2"), ref.steps + ref.batches);
  cr_assert_eq(count(report, "cuStreamSynchronize"), ref.steps + ref.batches);
  /* Activations come from the caching allocator: a program allocating each
   * buffer would call cuMemAlloc about 80 times per step. */
  long long allocs = count(report, "cuMemAlloc_v2");
  cr_assert(allocs > 0 && allocs < ref.steps, "%lld cuMemAlloc for %ld steps", allocs, ref.steps);
  cr_assert_eq(count(report, "cuMemFree_v2"), allocs);
}

/* The version written by hand with CUDA graphs: same kernels and checksum,
 * one graph built once, one launch per step, no eager launch, and node
 * updates for exactly the nodes that change. */
Test(sim_examples, decode_graphs_by_hand_equal_plain_decode) {
  need_example("decode");
  char report[16384];
  dec_ref_t ref = decode_ref(8);
  run_matching("decode", "--graphs-by-hand", "", ref.sum, "checksum " DECODE_CHECKSUM "\n", report,
               sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  cr_assert_eq(count(report, "graph_kernel_nodes_executed"), ref.launches);
  cr_assert_eq(count(report, "cuLaunchKernel"), -1, "no kernel runs eagerly");
  cr_assert_eq(count(report, "cuGraphInstantiateWithFlags"), 1);
  cr_assert_eq(count(report, "cuGraphAddKernelNode_v2"), DEC_KERNELS_PER_STEP);
  cr_assert_eq(count(report, "graph_launches"), ref.steps);
  cr_assert_eq(count(report, "cuGraphExecKernelNodeSetParams_v2"), ref.node_updates);
  cr_assert_eq(count(report, "cuGraphExecMemcpyNodeSetParams"), ref.copy_updates);
  cr_assert_lt(ref.node_updates, ref.steps * DEC_KERNELS_PER_STEP / 4);
  /* Static buffers: a fixed number of allocations, never freed before the end. */
  cr_assert_eq(count(report, "cuStreamSynchronize"), ref.steps + ref.batches);
}

Test(sim_examples, decode_inline_mode_and_iters) {
  need_example("decode");
  char report[16384];
  dec_ref_t ref = decode_ref(2);
  run_matching("decode", "--iters 2", "SIMCU_SYNC=1", ref.sum, NULL, report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
}

/* ---- moe reference ---- */

typedef struct moe_ref_s {
  uint64_t sum;
  long gemms, kernels, steps;
} moe_ref_t;

/* y[j] = sum_i x[i] W[i][j] for row-major W (k x n) of matrix `which`:
 * integers, as every GEMM of moe is exact. */
static void moe_rowgemm(const int* x, int which, int k, int n, float* y) {
  for (int j = 0; j < n; j++) {
    long s = 0;
    for (int i = 0; i < k; i++)
      s += (long)x[i] * moe_weight(which, i * n + j);
    y[j] = (float)s;
  }
}

static moe_ref_t moe_ref(int iters) {
  moe_ref_t r = {EX_FNV_INIT, 0, 0, 0};
  static int x[MOE_B][MOE_D], o[MOE_D], xg[MOE_B][MOE_D], a[MOE_F];
  static float q[MOE_D], k[MOE_KV], v[MOE_KV], h[MOE_D], u[MOE_F], y[MOE_D], logits[MOE_V];
  for (int b = 0; b < iters; b++) {
    int tok[MOE_B], len[MOE_B], limit[MOE_B], slot[MOE_B], nact = MOE_B;
    for (int sl = 0; sl < MOE_B; sl++) {
      tok[sl] = moe_first_token(b, sl);
      limit[sl] = moe_limit(b, sl);
      len[sl] = 0;
      slot[sl] = sl;
    }
    for (int step = 0; nact > 0; step++) {
      int T = nact;
      for (int i = 0; i < T; i++)
        for (int j = 0; j < MOE_D; j++)
          x[i][j] = moe_embed(tok[slot[i]], j);
      for (int l = 0; l < MOE_L; l++) {
        int expert[MOE_B], count[MOE_E] = {0};
        for (int i = 0; i < T; i++) {
          moe_rowgemm(x[i], MOE_W_Q(l), MOE_D, MOE_D, q);
          moe_rowgemm(x[i], MOE_W_K(l), MOE_D, MOE_KV, k);
          moe_rowgemm(x[i], MOE_W_V(l), MOE_D, MOE_KV, v);
          for (int j = 0; j < MOE_D; j++)
            o[j] = moe_attn(q[j], k[j % MOE_KV], v[j % MOE_KV]);
          moe_rowgemm(o, MOE_W_O(l), MOE_D, MOE_D, h);
          uint16_t xb[MOE_D];
          for (int j = 0; j < MOE_D; j++) {
            x[i][j] = moe_residual(x[i][j], h[j]);
            xb[j] = moe_bf16(x[i][j]);
          }
          expert[i] = moe_route(xb, l);
          count[expert[i]]++;
        }
        r.gemms += 4;
        /* Each expert's tokens, in row order; the expert's two GEMMs. */
        for (int e = 0; e < MOE_E; e++) {
          r.sum = ex_fnv(r.sum, &count[e], sizeof(count[e]));
          r.gemms += count[e] > 0 ? 2 : 0;
          for (int i = 0; i < T; i++)
            if (expert[i] == e)
              memcpy(xg[i], x[i], sizeof(xg[i]));
        }
        for (int i = 0; i < T; i++) {
          moe_rowgemm(xg[i], MOE_W_UP(l, expert[i]), MOE_D, MOE_F, u);
          for (int j = 0; j < MOE_F; j++)
            a[j] = moe_act(u[j]);
          moe_rowgemm(a, MOE_W_DOWN(l, expert[i]), MOE_F, MOE_D, y);
          for (int j = 0; j < MOE_D; j++)
            x[i][j] = moe_combine(x[i][j], y[j]);
        }
      }
      r.gemms++;
      for (int i = 0; i < T; i++) {
        moe_rowgemm(x[i], MOE_W_LM, MOE_D, MOE_V, logits);
        tok[slot[i]] = moe_sample(logits, moe_seed(b), step, slot[i]);
      }
      int keep = 0;
      for (int i = 0; i < T; i++) {
        r.sum = ex_fnv(r.sum, &tok[slot[i]], sizeof(int32_t));
        len[slot[i]]++;
        if (tok[slot[i]] >= MOE_EOS && len[slot[i]] < limit[slot[i]])
          slot[keep++] = slot[i];
      }
      nact = keep;
      r.steps++;
      r.kernels += MOE_OWN_KERNELS_PER_STEP;
    }
  }
  r.kernels += r.gemms;
  return r;
}

/* LD_LIBRARY_PATH for moe: the sim, then the sim's cuBLAS. */
static const char* moe_env(char* buf, size_t n, const char* more) {
  snprintf(buf, n, "LD_LIBRARY_PATH='%s:%s' %s", getenv("SIM_DIR"), getenv("CUBLAS_DIR"), more);
  return buf;
}

Test(sim_examples, moe_matches_reference_and_report) {
  need_example("moe");
  char report[16384], env[8192];
  moe_ref_t ref = moe_ref(3);
  run_matching("moe", "", moe_env(env, sizeof(env), ""), ref.sum, "checksum " MOE_CHECKSUM "\n",
               report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.kernels);
  /* Its own kernels through the runtime, the GEMMs through cuBLASLt's cuLaunchKernelEx. */
  cr_assert_eq(count(report, "cuLaunchKernelEx"), ref.gemms);
  cr_assert_eq(count(report, "cuLaunchKernel"), ref.kernels - ref.gemms);
  /* One readback per layer (the router) and one per step (the tokens). */
  cr_assert_eq(count(report, "cuStreamSynchronize"), ref.steps * (MOE_L + 1));
}

Test(sim_examples, moe_inline_mode_and_iters) {
  need_example("moe");
  char report[16384], env[8192];
  moe_ref_t ref = moe_ref(1);
  run_matching("moe", "--iters 1", moe_env(env, sizeof(env), "SIMCU_SYNC=1"), ref.sum, NULL,
               report, sizeof(report));
  cr_assert_eq(count(report, "kernels_executed"), ref.kernels);
}

/* The sim's cuBLAS reaches the driver the way cuBLASLt does: a shim sees
 * every GEMM launch on its dlsym route, the program's own on the runtime's. */
Test(sim_examples, moe_gemms_reach_a_shim_through_dlsym) {
  need_example("moe");
  const char* shim = getenv("GRAPE_LIB");
  if (shim == NULL || shim[0] == '\0')
    cr_skip_test("libgrape.so not built");
  char report[16384], env[8192], more[4096], line[256], gpath[] = "/tmp/moe-grape-XXXXXX";
  int fd = mkstemp(gpath);
  cr_assert_geq(fd, 0);
  close(fd);
  const char* pre = getenv("SIM_PRELOAD");
  snprintf(more, sizeof(more), "LD_PRELOAD='%s %s' GRAPE_MODE=observe GRAPE_OVERWRITE=yes GRAPE_REPORT='%s'",
           pre != NULL ? pre : "", shim, gpath);
  moe_ref_t ref = moe_ref(1);
  run("moe", "--iters 1", moe_env(env, sizeof(env), more), line, sizeof(line), report,
      sizeof(report));
  FILE* f = fopen(gpath, "r");
  cr_assert_not_null(f);
  char g[65536];
  size_t got = fread(g, 1, sizeof(g) - 1, f);
  g[got] = '\0';
  fclose(f);
  unlink(gpath);
  const char* routes = strstr(g, "\"launches_by_route\"");
  cr_assert_not_null(routes, "%s", g);
  cr_assert_eq(count(routes, "dlsym"), ref.gemms);
  cr_assert_eq(count(routes, "runtime"), ref.kernels - ref.gemms);
}

/* ---- Simulated time of whole programs ---- */

/* SIMCU_HOST_NS, the program's own work per op, adds exactly that much host
 * time per <<<>>> launch and per libsimblas call, and simulated times do not
 * depend on whether worker threads or the calling thread run the work. */
Test(sim_examples, host_ns_adds_exactly_per_op_and_times_do_not_depend_on_threads) {
  need_example("dynrnn");
  need_example("mlp_train");
  char line[256], r0[16384], r1[16384], rs[16384];
  const char* progs[][2] = {{"dynrnn", ""}, {"dynrnn", "--graph"}, {"mlp_train", ""}};
  for (int i = 0; i < 3; i++) {
    run(progs[i][0], progs[i][1], "SIMCU_HOST_NS=0", line, sizeof(line), r0, sizeof(r0));
    run(progs[i][0], progs[i][1], "SIMCU_HOST_NS=5000", line, sizeof(line), r1, sizeof(r1));
    run(progs[i][0], progs[i][1], "SIMCU_HOST_NS=5000 SIMCU_SYNC=1", line, sizeof(line), rs,
        sizeof(rs));
    /* Every kernel of these programs is a <<<>>> launch or one libsimblas call's. */
    long long ops = count(r0, "kernels_executed");
    cr_assert_gt(ops, 0);
    cr_assert_eq(count(r1, "sim_host_ns") - count(r0, "sim_host_ns"), 5000 * ops, "%s %s",
                 progs[i][0], progs[i][1]);
    cr_assert_gt(count(r1, "sim_end_ns"), count(r0, "sim_end_ns"));
    cr_assert_eq(count(rs, "sim_end_ns"), count(r1, "sim_end_ns"), "%s %s: SIMCU_SYNC=1 differs",
                 progs[i][0], progs[i][1]);
    cr_assert_eq(count(rs, "sim_host_ns"), count(r1, "sim_host_ns"));
  }
}

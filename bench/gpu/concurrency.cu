/* concurrency.cu - do independent cuBLAS GEMMs gain from running side by side on this
 * device, and what does the simulated device assume about it?
 *
 * DESIGN
 * Each set is a few bf16 GEMMs (fp32 output and accumulation) that do not depend on
 * each other, as a model's hot path holds them:
 *   moe      E expert GEMMs of T tokens each, (N, K) as Llama/Mixtral projections
 *   qkv      grouped-query Q, K, V projections of T tokens (4096 -> 4096, 1024, 1024)
 *   square   two n x n x n GEMMs
 *   bigsmall 8192^3 beside 64 x 4096 x 4096 (a small one filling the big one's tail)
 *   persist  a persistent-sized 4096^3 beside another, and beside a co-runner that holds
 *            14 SMs (~10%) for its whole run, as NCCL does in pytorch#143988 (kit_busy:
 *            one block per SM spinning for a fixed time; its CPU body and cost let the
 *            sim run it too)
 * and each set runs five ways, each timed with events (5 warm-ups, then --reps runs:
 * median, p10, p90 in us), after each GEMM was timed alone ("solo"):
 *   seq       one stream, one after the other (what a chain graph replays)
 *   streams   one stream per GEMM, forked from and joined to the first by events
 *   chain     a graph captured on one stream, launched
 *   branches  a graph captured across the streams (parallel branches), launched
 *   smtarget  as streams, each GEMM's CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET set to its
 *             share of the SMs (the co-runner's complement in "persist")
 * Inputs are small integers, so every product and sum is exact in fp32 whichever kernel
 * runs: the outputs' digest (FNV-1a of D) must be the same in every variant, smtarget
 * included; a difference is a wrong result, not rounding. Each GEMM has its own
 * workspace (32 MiB), as cuBLAS asks of concurrent calls. Per GEMM the heuristic's
 * choice is recorded (tile, split-K, waves, and custom option 1 = persistent on the sim).
 * Output: one JSON object per set and line; the kit (kit.py) turns them into rows and,
 * on a GPU, runs this program again on the simulated device (SIMCU_TIME_ONLY=1, with
 * --no-data: no inputs, no digests) for the model's prediction of the same sets: that
 * comparison is what calibrates the sim. --sizes tiny shrinks every set for the dry run
 * on the sim (where kernel bodies run on a CPU).
 */
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXG 8
#define WS_BYTES (32u << 20)
#define BUSY_SMEM (120 * 1024)   /* one kit_busy block per SM */

/* Holds its SM for `cycles` clock cycles (ns on the simulated device). */
__global__ void kit_busy(long long cycles, long long ns) {
  extern __shared__ int pad[];
  long long t0 = clock64();
  while (clock64() - t0 < cycles)
    if (ns == -1)
      pad[0] = 0;   /* never: keeps the shared memory */
}

/* For grape's simulated device (sim/simcu.h): an empty CPU body, its parameter sizes,
 * and its cost: ns per block, no memory traffic. A real GPU never calls them. */
typedef struct kit_cost_s {
  double cta_ns, bytes;
} kit_cost_t;
extern "C" __attribute__((visibility("default"))) void simcu_body__Z8kit_busyxx(const void* b, void** a) {
  (void)b;
  (void)a;
}
extern "C" __attribute__((visibility("default"))) const unsigned simcu_params__Z8kit_busyxx[] = {2, 8, 8};
extern "C" __attribute__((visibility("default"))) void simcu_cost__Z8kit_busyxx(const void* b, void** a,
                                                                                kit_cost_t* c) {
  (void)b;
  c->cta_ns = (double)*(long long*)a[1];
  c->bytes = 0;
}

static char err[256];
#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { \
  snprintf(err, sizeof err, "%s: %s", #x, cudaGetErrorString(e_)); return 1; } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { \
  snprintf(err, sizeof err, "%s: cublas status %d", #x, (int)s_); return 1; } } while (0)

typedef struct gemm_s {
  int m, n, k;
  uint16_t *A, *B;   /* bf16, column-major m x k and k x n */
  float* D;          /* m x n */
  void* ws;
  cublasLtMatmulDesc_t op, op_target;
  cublasLtMatrixLayout_t la, lb, ld;
  cublasLtMatmulAlgo_t algo, algo_target;
  size_t ws_need, ws_need_target;
  int tile, splits, custom;
  float waves;
} gemm_t;

typedef struct set_s {
  char name[64];
  const char* family;
  int n;
  int shape[MAXG][3];
  int target[MAXG];   /* SM-count target per GEMM in smtarget */
  int co_blocks;      /* >0: kit_busy on that many SMs beside every timed pass */
} set_t;

static cublasLtHandle_t lt;
static cudaStream_t st[MAXG];
static cudaEvent_t ev0, ev1, fork_ev, join_ev[MAXG];
static int sms = 132;
static int no_data;          /* --no-data: no inputs, no digests (timing on the sim) */
static long long busy_ns;    /* the co-runner's time, 3x the GEMM's alone */
static int clock_khz = 1980000;
static int warm = 5;   /* warm-up passes before the timed ones */

static uint16_t bf16_of(int v) {
  float f = (float)v;
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}

static int fill(uint16_t* d, size_t n, uint32_t seed) {
  if (no_data)
    return 0;
  uint16_t* h = (uint16_t*)malloc(n * 2);
  if (h == NULL) {
    snprintf(err, sizeof err, "out of host memory");
    return 1;
  }
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    h[i] = bf16_of((int)((x >> 24) % 5) - 2);   /* -2 .. 2: sums stay exact in fp32 */
  }
  cudaError_t e = cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice);
  free(h);
  CK(e);
  return 0;
}

static int plan(gemm_t* g, cublasLtMatmulDesc_t op, cublasLtMatmulAlgo_t* algo, size_t* need) {
  cublasLtMatmulPreference_t pref;
  CB(cublasLtMatmulPreferenceCreate(&pref));
  uint64_t ws = WS_BYTES;
  CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                          sizeof ws));
  cublasLtMatmulHeuristicResult_t r;
  int got = 0;
  CB(cublasLtMatmulAlgoGetHeuristic(lt, op, g->la, g->lb, g->ld, g->ld, pref, 1, &r, &got));
  cublasLtMatmulPreferenceDestroy(pref);
  if (got < 1) {
    snprintf(err, sizeof err, "no algorithm for %dx%dx%d", g->m, g->n, g->k);
    return 1;
  }
  *algo = r.algo;
  *need = r.workspaceSize;
  if (algo == &g->algo) {
    g->waves = r.wavesCount;
    size_t w;
    uint32_t v = 0;
    g->tile = cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &v,
                                                   sizeof v, &w) == CUBLAS_STATUS_SUCCESS ? (int)v : -1;
    int32_t sk = 0;
    g->splits = cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &sk,
                                                     sizeof sk, &w) == CUBLAS_STATUS_SUCCESS ? sk : -1;
    v = 0;
    g->custom = cublasLtMatmulAlgoConfigGetAttribute(&r.algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &v,
                                                     sizeof v, &w) == CUBLAS_STATUS_SUCCESS ? (int)v : -1;
  }
  return 0;
}

static int setup_gemm(gemm_t* g, int m, int n, int k, int target, uint32_t seed) {
  memset(g, 0, sizeof *g);
  g->m = m, g->n = n, g->k = k;
  CK(cudaMalloc((void**)&g->A, (size_t)m * k * 2));
  CK(cudaMalloc((void**)&g->B, (size_t)k * n * 2));
  CK(cudaMalloc((void**)&g->D, (size_t)m * n * 4));
  CK(cudaMalloc(&g->ws, WS_BYTES));
  if (fill(g->A, (size_t)m * k, seed) || fill(g->B, (size_t)k * n, seed + 7))
    return 1;
  CB(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, m, k, m));
  CB(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, k, n, k));
  CB(cublasLtMatrixLayoutCreate(&g->ld, CUDA_R_32F, m, n, m));
  CB(cublasLtMatmulDescCreate(&g->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  CB(cublasLtMatmulDescCreate(&g->op_target, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  int32_t t = target;
  CB(cublasLtMatmulDescSetAttribute(g->op_target, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &t, sizeof t));
  if (plan(g, g->op, &g->algo, &g->ws_need) || plan(g, g->op_target, &g->algo_target, &g->ws_need_target))
    return 1;
  return 0;
}

static void free_gemm(gemm_t* g) {
  cudaFree(g->A);
  cudaFree(g->B);
  cudaFree(g->D);
  cudaFree(g->ws);
  cublasLtMatrixLayoutDestroy(g->la);
  cublasLtMatrixLayoutDestroy(g->lb);
  cublasLtMatrixLayoutDestroy(g->ld);
  cublasLtMatmulDescDestroy(g->op);
  cublasLtMatmulDescDestroy(g->op_target);
}

static int run_gemm(gemm_t* g, cudaStream_t s, int targeted) {
  const float one = 1.0f, zero = 0.0f;
  CB(cublasLtMatmul(lt, targeted ? g->op_target : g->op, &one, g->A, g->la, g->B, g->lb, &zero, g->D,
                    g->ld, g->D, g->ld, targeted ? &g->algo_target : &g->algo, g->ws,
                    targeted ? g->ws_need_target : g->ws_need, s));
  return 0;
}

enum { V_SEQ, V_STREAMS, V_CHAIN, V_BRANCHES, V_SMTARGET, V__COUNT };
static const char* const vname[V__COUNT] = {"seq", "streams", "chain", "branches", "smtarget"};

/* One pass of the set in a variant's issue pattern, on st[0] (forked to the others). */
static int issue(gemm_t* g, int n, int variant) {
  if (variant == V_SEQ || variant == V_CHAIN) {
    for (int i = 0; i < n; i++)
      if (run_gemm(&g[i], st[0], 0))
        return 1;
    return 0;
  }
  CK(cudaEventRecord(fork_ev, st[0]));
  for (int i = 1; i < n; i++)
    CK(cudaStreamWaitEvent(st[i], fork_ev, 0));
  for (int i = 0; i < n; i++)
    if (run_gemm(&g[i], st[i], variant == V_SMTARGET))
      return 1;
  for (int i = 1; i < n; i++) {
    CK(cudaEventRecord(join_ev[i], st[i]));
    CK(cudaStreamWaitEvent(st[0], join_ev[i], 0));
  }
  return 0;
}

static int cmp_f(const void* a, const void* b) {
  float x = *(const float*)a, y = *(const float*)b;
  return (x > y) - (x < y);
}

/* Times reps passes (graph: launches of exec), beside co_blocks of kit_busy if any;
 * fills median, p10, p90 in us. */
static int time_it(gemm_t* g, int n, int variant, cudaGraphExec_t exec, int reps, int co_blocks,
                   float out[3]) {
  float* t = (float*)calloc((size_t)reps, sizeof(float));
  if (t == NULL)
    return 1;
  for (int r = -warm; r < reps; r++) {
    if (co_blocks > 0) {
      long long cycles = busy_ns * clock_khz / 1000000;
      kit_busy<<<co_blocks, 32, BUSY_SMEM, st[MAXG - 1]>>>(cycles, busy_ns);
      CK(cudaGetLastError());
    }
    CK(cudaEventRecord(ev0, st[0]));
    if (exec != NULL)
      CK(cudaGraphLaunch(exec, st[0]));
    else if (issue(g, n, variant))
      return 1;
    CK(cudaEventRecord(ev1, st[0]));
    CK(cudaEventSynchronize(ev1));
    CK(cudaStreamSynchronize(st[MAXG - 1]));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev0, ev1));
    if (r >= 0)
      t[r] = ms * 1000.0f;
  }
  qsort(t, (size_t)reps, sizeof(float), cmp_f);
  out[0] = t[reps / 2];
  out[1] = t[reps / 10];
  out[2] = t[reps - 1 - reps / 10];
  free(t);
  return 0;
}

/* FNV-1a, a 32-bit word at a time, over every GEMM's D. */
static int digest(gemm_t* g, int n, uint64_t* h) {
  *h = 1469598103934665603ULL;
  for (int i = 0; i < n && !no_data; i++) {
    size_t words = (size_t)g[i].m * g[i].n;
    uint32_t* b = (uint32_t*)malloc(words * 4);
    if (b == NULL)
      return 1;
    CK(cudaMemcpy(b, g[i].D, words * 4, cudaMemcpyDeviceToHost));
    for (size_t j = 0; j < words; j++) {
      *h ^= b[j];
      *h *= 1099511628211ULL;
    }
    free(b);
  }
  return 0;
}

static int clear(gemm_t* g, int n) {
  if (no_data)
    return 0;
  for (int i = 0; i < n; i++)
    CK(cudaMemset(g[i].D, 0xff, (size_t)g[i].m * g[i].n * 4));
  CK(cudaDeviceSynchronize());
  return 0;
}

static int run_set(const set_t* s, int reps) {
  gemm_t g[MAXG];
  for (int i = 0; i < s->n; i++)
    if (setup_gemm(&g[i], s->shape[i][0], s->shape[i][1], s->shape[i][2], s->target[i], 17u * (i + 1)))
      return 1;
  printf("{\"set\":\"%s\",\"family\":\"%s\",\"sms\":%d,\"co_runner_sms\":%d,\"gemms\":[",
         s->name, s->family, sms, s->co_blocks);
  for (int i = 0; i < s->n; i++) {
    float solo[3];
    if (time_it(&g[i], 1, V_SEQ, NULL, reps, 0, solo))
      return 1;
    busy_ns = (long long)(solo[0] * 3000.0f) + 10000;
    printf("%s{\"m\":%d,\"n\":%d,\"k\":%d,\"solo_us\":%.2f,\"tile\":%d,\"splitk\":%d,\"custom\":%d,"
           "\"waves\":%.3f,\"sm_target\":%d}", i ? "," : "", g[i].m, g[i].n, g[i].k, solo[0], g[i].tile,
           g[i].splits, g[i].custom, g[i].waves, s->target[i]);
  }
  printf("],\"variants\":{");
  for (int v = 0; v < V__COUNT; v++) {
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    if (v == V_CHAIN || v == V_BRANCHES) {
      CK(cudaStreamBeginCapture(st[0], cudaStreamCaptureModeThreadLocal));
      if (issue(g, s->n, v == V_CHAIN ? V_SEQ : V_STREAMS))
        return 1;
      CK(cudaStreamEndCapture(st[0], &graph));
      CK(cudaGraphInstantiate(&exec, graph, 0));
    }
    if (clear(g, s->n))
      return 1;
    if (exec != NULL)
      CK(cudaGraphLaunch(exec, st[0]));
    else if (issue(g, s->n, v))
      return 1;
    CK(cudaDeviceSynchronize());
    uint64_t h;
    float t[3];
    if (digest(g, s->n, &h) || time_it(g, s->n, v, exec, reps, s->co_blocks, t))
      return 1;
    printf("%s\"%s\":{\"median_us\":%.2f,\"p10_us\":%.2f,\"p90_us\":%.2f,\"digest\":\"%016llx\"}",
           v ? "," : "", vname[v], t[0], t[1], t[2], (unsigned long long)h);
    if (exec != NULL) {
      cudaGraphExecDestroy(exec);
      cudaGraphDestroy(graph);
    }
  }
  printf("}}\n");
  fflush(stdout);
  for (int i = 0; i < s->n; i++)
    free_gemm(&g[i]);
  return 0;
}

/* ---- The sets ---- */

static set_t sets[128];
static int nsets;

static void add(const char* family, const char* name, int n, const int (*shape)[3], const int* target) {
  set_t* s = &sets[nsets++];
  memset(s, 0, sizeof *s);
  snprintf(s->name, sizeof s->name, "%s", name);
  s->family = family;
  s->n = n;
  for (int i = 0; i < n; i++) {
    memcpy(s->shape[i], shape[i], sizeof s->shape[i]);
    s->target[i] = target != NULL ? target[i] : (sms / n >= 8 ? sms / n : 8);
  }
}

/* GEMMs in cuBLAS's column-major terms: m = output features, n = tokens, k = inputs. */
static void make_sets(int tiny, int quick) {
  int div = tiny ? 64 : 1;
  int Es[] = {2, 4, 8}, Ts[] = {16, 64, 256, 1024}, NK[][2] = {{4096, 4096}, {1536, 4096}, {4096, 1536}};
  for (int e = 0; e < 3; e++)
    for (int t = 0; t < 4; t++)
      for (int nk = 0; nk < 3; nk++) {
        if ((quick || tiny) && (Es[e] != 4 || (Ts[t] != 64 && Ts[t] != 1024) || nk != 0))
          continue;
        int shape[MAXG][3];
        for (int i = 0; i < Es[e]; i++) {
          shape[i][0] = NK[nk][0] / div;
          shape[i][1] = tiny ? Ts[t] / 16 : Ts[t];
          shape[i][2] = NK[nk][1] / div;
        }
        char name[64];
        snprintf(name, sizeof name, "moe_E%d_T%d_N%d_K%d", Es[e], Ts[t], NK[nk][0], NK[nk][1]);
        add("moe", name, Es[e], (const int(*)[3])shape, NULL);
      }
  int QT[] = {16, 128, 1024, 8192};
  for (int t = 0; t < 4; t++) {
    if ((quick || tiny) && QT[t] != 16 && QT[t] != 1024)
      continue;
    int tok = tiny ? QT[t] / 16 : QT[t];
    int shape[3][3] = {{4096 / div, tok, 4096 / div}, {1024 / div, tok, 4096 / div},
                       {1024 / div, tok, 4096 / div}};
    char name[64];
    snprintf(name, sizeof name, "qkv_T%d", QT[t]);
    add("qkv", name, 3, (const int(*)[3])shape, NULL);
  }
  int SQ[] = {512, 1024, 2048, 4096, 8192};
  for (int i = 0; i < 5; i++) {
    if ((quick || tiny) && SQ[i] != 1024 && SQ[i] != 4096)
      continue;
    int n = SQ[i] / div;
    int shape[2][3] = {{n, n, n}, {n, n, n}};
    char name[64];
    snprintf(name, sizeof name, "square_%d", SQ[i]);
    add("square", name, 2, (const int(*)[3])shape, NULL);
  }
  int big[2][3] = {{8192 / div, 8192 / div, 8192 / div}, {4096 / div, tiny ? 4 : 64, 4096 / div}};
  int big_t[2] = {sms - 8, 8};
  add("bigsmall", "bigsmall_8192_64", 2, (const int(*)[3])big, big_t);
  int pp[2][3] = {{4096 / div, 4096 / div, 4096 / div}, {4096 / div, 4096 / div, 4096 / div}};
  add("persist", "persist_pair_4096", 2, (const int(*)[3])pp, NULL);
  /* One persistent-sized GEMM beside a co-runner on 14 SMs; smtarget asks for the rest. */
  int one[1][3] = {{4096 / div, 4096 / div, 4096 / div}};
  int one_t[1] = {sms - 14};
  add("persist", "persist_corunner_4096", 1, (const int(*)[3])one, one_t);
  sets[nsets - 1].co_blocks = 14;
}

static int usage(void) {
  fprintf(stderr, "usage: concurrency [--sizes full|quick|tiny] [--reps N] [--only SET|FAMILY] [--no-data]\n");
  return 2;
}

int main(int argc, char** argv) {
  int tiny = 0, quick = 0, reps = 20;
  const char* only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--sizes") == 0 && i + 1 < argc) {
      const char* v = argv[++i];
      tiny = strcmp(v, "tiny") == 0;
      quick = strcmp(v, "quick") == 0;
      if (!tiny && !quick && strcmp(v, "full") != 0)
        return usage();
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--no-data") == 0) {
      no_data = 1;
    } else {
      return usage();
    }
  }
  if (reps < 3)
    reps = 3;
  if (tiny)
    warm = 1;
  {
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, 0) != cudaSuccess) {
      printf("{\"error\":\"no CUDA device\"}\n");
      return 1;
    }
    sms = p.multiProcessorCount;
    int khz = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) == cudaSuccess && khz > 0)
      clock_khz = khz;
    if (cudaFuncSetAttribute(kit_busy, cudaFuncAttributeMaxDynamicSharedMemorySize, BUSY_SMEM) !=
        cudaSuccess) {
      printf("{\"error\":\"cudaFuncSetAttribute(kit_busy): %s\"}\n", cudaGetErrorString(cudaGetLastError()));
      return 1;
    }
    cublasStatus_t bs = cublasLtCreate(&lt);
    if (bs != CUBLAS_STATUS_SUCCESS) {
      printf("{\"error\":\"cublasLtCreate: status %d\"}\n", (int)bs);
      return 1;
    }
    for (int i = 0; i < MAXG; i++)
      if (cudaStreamCreateWithFlags(&st[i], cudaStreamNonBlocking) != cudaSuccess ||
          cudaEventCreateWithFlags(&join_ev[i], cudaEventDisableTiming) != cudaSuccess) {
        printf("{\"error\":\"stream or event creation failed\"}\n");
        return 1;
      }
    if (cudaEventCreate(&ev0) != cudaSuccess || cudaEventCreate(&ev1) != cudaSuccess ||
        cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming) != cudaSuccess) {
      printf("{\"error\":\"event creation failed\"}\n");
      return 1;
    }
  }
  make_sets(tiny, quick);
  int bad = 0;
  for (int i = 0; i < nsets; i++) {
    if (only != NULL && strstr(sets[i].name, only) == NULL && strcmp(sets[i].family, only) != 0)
      continue;
    if (run_set(&sets[i], reps)) {
      char clean[256];
      size_t j = 0;
      for (size_t c = 0; err[c] && j + 1 < sizeof clean; c++)
        clean[j++] = (err[c] == '"' || err[c] == '\\') ? '\'' : err[c];
      clean[j] = 0;
      printf("\n{\"set\":\"%s\",\"family\":\"%s\",\"error\":\"%s\"}\n", sets[i].name, sets[i].family, clean);
      fflush(stdout);
      cudaGetLastError();
      bad++;
    }
  }
  return bad ? 1 : 0;
}

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

#include "common.h"
#include "dynrnn_math.h"

/* Documented checksums (examples/README.md), default --iters. */
#define DYNRNN_CHECKSUM "1b46380893f1b5bb"

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
  snprintf(cmd, sizeof(cmd), "LD_LIBRARY_PATH='%s' SIMCU_REPORT='%s' %s '%s/%s' %s",
           getenv("SIM_DIR"), rpath, extra_env, exdir(), name, args);
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

/* ---- dynrnn reference ---- */

typedef struct dyn_ref_s {
  uint64_t sum;
  long launches, steps, sparse;
} dyn_ref_t;

static dyn_ref_t dynrnn_ref(int iters) {
  static int32_t len[RNN_B], x[RNN_B * RNN_T], W[RNN_H * RNN_H], h[2][RNN_B * RNN_H];
  dyn_ref_t r = {EX_FNV_INIT, 0, 0, 0};
  for (int it = 0; it < iters; it++) {
    uint64_t seed = 1000 + (uint64_t)it;
    for (int b = 0; b < RNN_B; b++)
      len[b] = 4 + (int32_t)(ex_rand(&seed) % (RNN_T - 4));
    for (int i = 0; i < RNN_B * RNN_T; i++)
      x[i] = (int32_t)(ex_rand(&seed) % 17) - 8;
    for (int i = 0; i < RNN_H * RNN_H; i++)
      W[i] = (int32_t)(ex_rand(&seed) % 7) - 3;
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
  char line[256], report[16384], want[64];
  dyn_ref_t ref = dynrnn_ref(4);
  snprintf(want, sizeof(want), "checksum %016llx\n", (unsigned long long)ref.sum);
  cr_assert_str_eq(want, "checksum " DYNRNN_CHECKSUM "\n", "reference disagrees with README");
  run("dynrnn", "", "", line, sizeof(line), report, sizeof(report));
  cr_assert_str_eq(line, want);
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
  cr_assert_eq(count(report, "cuLaunchKernel"), ref.launches);
  cr_assert_eq(count(report, "cuStreamSynchronize"), ref.steps);
  cr_assert_eq(count(report, "cuMemcpyDtoDAsync_v2"), ref.sparse);
  cr_assert_eq(count(report, "graph_launches"), 0);
}

Test(sim_examples, dynrnn_inline_mode_and_iters) {
  need_example("dynrnn");
  char line[256], report[16384], want[64];
  dyn_ref_t ref = dynrnn_ref(2);
  snprintf(want, sizeof(want), "checksum %016llx\n", (unsigned long long)ref.sum);
  run("dynrnn", "--iters 2", "SIMCU_SYNC=1", line, sizeof(line), report, sizeof(report));
  cr_assert_str_eq(line, want);
  cr_assert_eq(count(report, "kernels_executed"), ref.launches);
}

/* Test helper: path times through the public predictor API only, to check the
 * shim's exit report against (tests/interpose/test_sim.py, case predict).
 *
 * usage: predict_path GPU < paths
 * Input: one kernel a line, "gx gy gz bx by bz smem<TAB>name" (name "-" when
 * unknown), and a line "end [COUNT]" after each path (COUNT: the times it
 * ran, 1 when absent). Output a path: "eager graph eager_lo eager_hi
 * graph_lo graph_hi" (grape_predict_path, then the bounds of
 * grape_predict_path_interval); at the end "run" and the same six of the
 * whole run, every path COUNT times (grape_run_combine). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/predict.h"

#define MAX_KERNELS 4096
#define MAX_RUN (1 << 17)   /* kernels of every path together */
#define MAX_PATHS 8192

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: predict_path GPU < paths\n");
    return 2;
  }
  const grape_gpu_spec_t* g = grape_gpu_find(argv[1]);
  grape_model_t* m = NULL;
  if (g == NULL || grape_model_load_default(&m) < 0) {
    fprintf(stderr, "predict_path: no GPU '%s' or no model\n", argv[1]);
    return 1;
  }
  static grape_kernel_desc_t k[MAX_KERNELS];
  static char names[MAX_KERNELS][512];
  static grape_prediction_t run[MAX_RUN];
  static grape_run_path_t paths[MAX_PATHS];
  size_t n = 0, nrun = 0, npaths = 0;
  char line[1024];
  int rc = 0;
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (strncmp(line, "end", 3) == 0 && (line[3] == '\0' || line[3] == ' ')) {
      double eager, graph;
      grape_path_prediction_t pp;
      if (grape_predict_path(m, g, k, n, &eager, &graph) < 0 ||
          grape_predict_path_interval(m, g, k, n, &pp) < 0 || nrun + n > MAX_RUN ||
          npaths == MAX_PATHS) {
        rc = 1;
        break;
      }
      printf("%.17g %.17g %.17g %.17g %.17g %.17g\n", eager, graph, pp.eager_lo_ms, pp.eager_hi_ms,
             pp.graph_lo_ms, pp.graph_hi_ms);
      paths[npaths] = (grape_run_path_t){.k = &run[nrun], .n = n,
                                         .count = line[3] ? atof(line + 4) : 1};
      for (size_t i = 0; i < n; i++)
        grape_predict_kernel(m, g, &k[i], &run[nrun++]);
      npaths++;
      n = 0;
      continue;
    }
    char* tab = strchr(line, '\t');
    if (tab == NULL || n == MAX_KERNELS) {
      fprintf(stderr, "predict_path: bad line '%s'\n", line);
      rc = 1;
      break;
    }
    grape_kernel_desc_t* d = &k[n];
    memset(d, 0, sizeof(*d));
    unsigned smem;
    if (sscanf(line, "%u %u %u %u %u %u %u", &d->grid[0], &d->grid[1], &d->grid[2], &d->block[0],
               &d->block[1], &d->block[2], &smem) != 7) {
      fprintf(stderr, "predict_path: bad line '%s'\n", line);
      rc = 1;
      break;
    }
    d->dyn_smem = smem;
    d->regs = -1;
    snprintf(names[n], sizeof(names[n]), "%s", tab + 1);
    d->name = strcmp(names[n], "-") == 0 ? NULL : names[n];
    n++;
  }
  grape_path_prediction_t r;
  if (rc == 0 && grape_run_combine(m, paths, npaths, &r) == 0)
    printf("run %.17g %.17g %.17g %.17g %.17g %.17g\n", r.eager_ms, r.graph_ms, r.eager_lo_ms,
           r.eager_hi_ms, r.graph_lo_ms, r.graph_hi_ms);
  else
    rc = 1;
  grape_model_free(m);
  return rc;
}

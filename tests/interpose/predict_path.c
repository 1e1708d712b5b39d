/* Test helper: path times through the public predictor API only, to check the
 * shim's exit report against (tests/interpose/test_sim.py, case predict).
 *
 * usage: predict_path GPU < paths
 * Input: one kernel a line, "gx gy gz bx by bz smem<TAB>name" (name "-" when
 * unknown), and a line "end" after each path. Output a path: "eager graph
 * eager_lo eager_hi graph_lo graph_hi" (grape_predict_path, then the bounds of
 * grape_predict_path_interval). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/predict.h"

#define MAX_KERNELS 4096

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
  size_t n = 0;
  char line[1024];
  int rc = 0;
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (strcmp(line, "end") == 0) {
      double eager, graph;
      grape_path_prediction_t pp;
      if (grape_predict_path(m, g, k, n, &eager, &graph) < 0 ||
          grape_predict_path_interval(m, g, k, n, &pp) < 0) {
        rc = 1;
        break;
      }
      printf("%.17g %.17g %.17g %.17g %.17g %.17g\n", eager, graph, pp.eager_lo_ms, pp.eager_hi_ms,
             pp.graph_lo_ms, pp.graph_hi_ms);
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
  grape_model_free(m);
  return rc;
}

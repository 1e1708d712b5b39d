/* grape export --chrome: a trace as a Chrome trace-event timeline (opens in
 * chrome://tracing and ui.perfetto.dev): one track per path, its ops as
 * slices end to end, with the durations grape replay --time measured, or
 * with the predictor's for a named GPU.
 *
 * DESIGN: replay/export.c writes the timeline from a duration callback;
 * predicted durations come from here, so that replay/ does not depend on
 * predict/. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "grape/cubin.h"
#include "grape/predict.h"
#include "grape/trace.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape export --chrome TRACE [-o OUT.json] [--predict-gpu NAME [-m MODEL]]\n"
          "\n"
          "Writes a Chrome trace-event JSON timeline: one track per path (most frequent\n"
          "first), its ops as slices with the times 'grape replay --time --save' measured,\n"
          "or, with --predict-gpu, the predictor's kernel times on that GPU (memsets and\n"
          "copies are then left out: they are not predicted).\n"
          "\n"
          "  -o OUT.json        output file (default: stdout)\n"
          "  --predict-gpu NAME predicted durations ('grape gpus' lists the GPUs)\n"
          "  -m MODEL           model file from 'grape train' (default: the built-in one)\n");
}

typedef struct pred_s {
  const grape_model_t* m;
  const grape_gpu_spec_t* gpu;
} pred_t;

static double measured(const grape_trace_t* t, size_t i, size_t j, void* arg) {
  (void)arg;
  const grape_trace_path_t* p = grape_trace_path(t, i);
  return p->times ? p->times->op_ms[j] : -1;
}

static double predicted(const grape_trace_t* t, size_t i, size_t j, void* arg) {
  const pred_t* pr = arg;
  const grape_trace_op_t* op = &grape_trace_path(t, i)->ops[j];
  if (op->kind != GRAPE_TRACE_OP_KERNEL || op->func == GRAPE_TRACE_NONE)
    return -1;
  const grape_trace_func_t* f = grape_trace_func(t, op->func);
  char* name = grape_demangle(f->name);
  grape_kernel_desc_t k;
  memset(&k, 0, sizeof(k));
  k.name = name ? name : f->name;
  memcpy(k.grid, op->grid, sizeof(k.grid));
  memcpy(k.block, op->block, sizeof(k.block));
  k.dyn_smem = op->shmem;
  k.regs = f->registers;
  k.op = GRAPE_OP_UNKNOWN;
  double ms = grape_predict_kernel_ms(pr->m, pr->gpu, &k);
  free(name);
  return ms;
}

int cmd_export(int argc, char** argv) {
  const char *path = NULL, *outp = NULL, *gpu = NULL, *model = NULL;
  int chrome = 0;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    int has = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "--chrome") == 0) {
      chrome = 1;
    } else if (strcmp(a, "-o") == 0 && has) {
      outp = argv[++i];
    } else if (strcmp(a, "--predict-gpu") == 0 && has) {
      gpu = argv[++i];
    } else if (strcmp(a, "-m") == 0 && has) {
      model = argv[++i];
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "grape: error: unknown option or missing value: '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (path == NULL) {
      path = a;
    } else {
      fprintf(stderr, "grape: error: one trace at a time ('%s' and '%s')\n", path, a);
      return 2;
    }
  }
  if (path == NULL || !chrome) {
    if (path != NULL)
      fprintf(stderr, "grape: error: say which format: --chrome (the only one so far)\n");
    usage(stderr);
    return 2;
  }
  pred_t pr = {NULL, NULL};
  if (gpu != NULL && (pr.gpu = grape_gpu_find(gpu)) == NULL) {
    fprintf(stderr, "grape: error: unknown GPU '%s'; known GPUs:\n", gpu);
    grape_gpu_list(stderr);
    return 1;
  }
  grape_trace_t* t;
  char err[512];
  if (grape_trace_load(path, &t, err, sizeof(err)) < 0) {
    fprintf(stderr, "grape: error: %s\n", err);
    return 1;
  }
  int rc = 1;
  grape_model_t* m = NULL;
  char label[300];
  grape_trace_duration_fn* dur = measured;
  if (pr.gpu != NULL) {
    int e = model ? grape_model_load(model, &m, err, sizeof(err)) : grape_model_load_default(&m);
    if (e < 0) {
      fprintf(stderr, "grape: error: %s: %s\n", model ? model : "built-in model",
              model ? err : strerror(-e));
      goto done;
    }
    pr.m = m;
    dur = predicted;
    snprintf(label, sizeof(label), "predicted for %s by the %s model", pr.gpu->name,
             model ? model : "built-in");
  } else {
    const char* dev = NULL;
    size_t timed = 0;
    for (size_t i = 0; i < grape_trace_path_count(t); i++) {
      const grape_trace_path_t* p = grape_trace_path(t, i);
      if (p->times != NULL) {
        timed++;
        dev = p->times->device;
      }
    }
    if (timed == 0) {
      fprintf(stderr, "grape: error: %s holds no measured times: replay it with 'grape replay "
                      "--time --save OUT' first, or give --predict-gpu NAME\n", path);
      goto done;
    }
    if (timed < grape_trace_path_count(t))
      fprintf(stderr, "grape: warning: %zu of %zu paths have no measured times; their tracks "
                      "are empty\n", grape_trace_path_count(t) - timed, grape_trace_path_count(t));
    snprintf(label, sizeof(label), "measured on %s", dev);
  }
  FILE* out = outp ? fopen(outp, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "grape: error: %s: %s\n", outp, strerror(errno));
    goto done;
  }
  long n = grape_trace_export_chrome(t, dur, &pr, label, out);
  if ((outp && fclose(out) != 0) || n < 0) {
    fprintf(stderr, "grape: error: %s: write failed\n", outp ? outp : "stdout");
    goto done;
  }
  fprintf(stderr, "grape: %ld slices on %zu tracks (%s)\n", n, grape_trace_path_count(t), label);
  rc = 0;
done:
  grape_model_free(m);
  grape_trace_free(t);
  return rc;
}

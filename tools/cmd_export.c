/* grape export --chrome: traces as Chrome trace-event JSON (opens in
 * chrome://tracing, Catapult's viewer and ui.perfetto.dev). By default the
 * run as it went, from the timeline GRAPE_TIMELINE records (several traces:
 * one process each); with --by-path, one track per path, its ops as slices
 * end to end, with the durations grape replay --time measured, or with the
 * predictor's for a named GPU.
 *
 * DESIGN: replay/timeline.c and replay/export.c write the JSON; predicted
 * durations come from here, so that replay/ does not depend on predict/. */
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
          "usage: grape export --chrome TRACE... [-o OUT.json]\n"
          "       grape export --chrome --by-path TRACE [-o OUT.json] [--predict-gpu NAME [-m MODEL]]\n"
          "\n"
          "Writes Chrome trace-event JSON (--perfetto is the same format).\n"
          "\n"
          "The timeline (default): the run in order, from traces recorded with\n"
          "GRAPE_TIMELINE=1: per trace a process, with a row of CUDA calls per host thread\n"
          "(held calls marked), a row of the submissions graph mode made for held work,\n"
          "and a row per stream with kernels, copies, memsets and graph launches where\n"
          "they ran on the device; arrows go from each call to its device work.\n"
          "\n"
          "--by-path: one track per path (most frequent first), its ops as slices with the\n"
          "times 'grape replay --time --save' measured, or, with --predict-gpu, the\n"
          "predictor's kernel times on that GPU (memsets and copies are then left out:\n"
          "they are not predicted).\n"
          "\n"
          "  -o OUT.json        output file (default: stdout)\n"
          "  --by-path          the per-path view (one trace)\n"
          "  --predict-gpu NAME predicted durations, per path ('grape gpus' lists the GPUs)\n"
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

/* The timeline view of every trace named. */
static int export_timeline(char** paths, size_t n, const char* outp) {
  grape_trace_t** ts = calloc(n, sizeof(*ts));
  if (ts == NULL) {
    fprintf(stderr, "grape: error: out of memory\n");
    return 1;
  }
  int rc = 1;
  char err[512];
  size_t loaded = 0;
  for (; loaded < n; loaded++) {
    if (grape_trace_load(paths[loaded], &ts[loaded], err, sizeof(err)) < 0) {
      fprintf(stderr, "grape: error: %s\n", err);
      goto done;
    }
    if (grape_trace_timeline(ts[loaded]) == NULL) {
      fprintf(stderr, "grape: error: %s holds no timeline: record the run with GRAPE_TIMELINE=1 "
                      "(and GRAPE_TRACE), or draw its paths with --by-path\n", paths[loaded]);
      loaded++;
      goto done;
    }
  }
  FILE* out = outp ? fopen(outp, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "grape: error: %s: %s\n", outp, strerror(errno));
    goto done;
  }
  grape_trace_export_stats_t st;
  int e = grape_trace_export_timeline((const grape_trace_t* const*)ts, n, out, &st);
  if ((outp && fclose(out) != 0) || e < 0) {
    fprintf(stderr, "grape: error: %s: %s\n", outp ? outp : "stdout",
            e == -ENOMEM ? "out of memory" : "write failed");
    goto done;
  }
  uint64_t dropped = 0;
  for (size_t i = 0; i < n; i++)
    dropped += grape_trace_timeline(ts[i])->dropped;
  fprintf(stderr, "grape: %zu slices on %zu tracks of %zu process%s, %zu arrows from calls to "
                  "their device work\n", st.slices, st.tracks, st.processes,
          st.processes == 1 ? "" : "es", st.flows);
  if (st.clamped > 0)
    fprintf(stderr, "grape: %zu slices start where the previous one on their track ended: they "
                    "overlapped it by a rounding (event times are float milliseconds) or by the "
                    "1 ns every slice is given\n", st.clamped);
  if (dropped > 0)
    fprintf(stderr, "grape: warning: %llu calls were not recorded (past GRAPE_TIMELINE_MAX_MB)\n",
            (unsigned long long)dropped);
  rc = 0;
done:
  for (size_t i = 0; i < loaded; i++)
    grape_trace_free(ts[i]);
  free(ts);
  return rc;
}

int cmd_export(int argc, char** argv) {
  const char *path = NULL, *outp = NULL, *gpu = NULL, *model = NULL;
  int chrome = 0, by_path = 0;
  char** paths = calloc((size_t)argc + 1, sizeof(*paths));
  size_t npaths = 0;
  if (paths == NULL) {
    fprintf(stderr, "grape: error: out of memory\n");
    return 1;
  }
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    int has = i + 1 < argc;
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(paths);
      return 0;
    } else if (strcmp(a, "--chrome") == 0 || strcmp(a, "--perfetto") == 0) {
      chrome = 1;
    } else if (strcmp(a, "--by-path") == 0) {
      by_path = 1;
    } else if (strcmp(a, "-o") == 0 && has) {
      outp = argv[++i];
    } else if (strcmp(a, "--predict-gpu") == 0 && has) {
      gpu = argv[++i];
    } else if (strcmp(a, "-m") == 0 && has) {
      model = argv[++i];
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "grape: error: unknown option or missing value: '%s'\n", a);
      usage(stderr);
      free(paths);
      return 2;
    } else {
      paths[npaths++] = argv[i];
    }
  }
  path = npaths ? paths[0] : NULL;
  if (path == NULL || !chrome) {
    if (path != NULL)
      fprintf(stderr, "grape: error: say which format: --chrome (or --perfetto: the same JSON)\n");
    usage(stderr);
    free(paths);
    return 2;
  }
  if (gpu != NULL)
    by_path = 1;   /* predictions are per path */
  if (!by_path) {
    int rc = export_timeline(paths, npaths, outp);
    free(paths);
    return rc;
  }
  if (npaths > 1) {
    fprintf(stderr, "grape: error: --by-path draws one trace at a time ('%s' and '%s'); the "
                    "timeline view takes several\n", paths[0], paths[1]);
    free(paths);
    return 2;
  }
  free(paths);
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
  size_t tracks = 0;
  long n = grape_trace_export_chrome(t, dur, &pr, label, out, &tracks);
  if ((outp && fclose(out) != 0) || n < 0) {
    fprintf(stderr, "grape: error: %s: write failed\n", outp ? outp : "stdout");
    goto done;
  }
  fprintf(stderr, "grape: %ld slices on %zu tracks (%s)\n", n, tracks, label);
  rc = 0;
done:
  grape_model_free(m);
  grape_trace_free(t);
  return rc;
}

/* grape predict: predicted kernel times for the launches in a CSV.
 *
 * Echoes every input line unchanged and in order, with one column,
 * predicted_ms, appended (empty for a row that cannot be predicted; such rows
 * are counted and the first few named on stderr). The trace form
 * (grape predict --gpu NAME TRACE) waits for the trace format. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "grape/predict.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape predict [-m MODEL] [--gpu NAME] [--method M] --csv IN.csv[.gz] [-o OUT.csv]\n"
          "\n"
          "Writes IN's lines unchanged, in order, with a predicted_ms column appended.\n"
          "The target GPU of a row is its Device column; --gpu NAME sets it for files\n"
          "without one (and overrides the column when given). Without -m the model\n"
          "built into grape (trained on the NeuSight data) is used.\n"
          "\n"
          "  -m MODEL            model file from 'grape train'\n"
          "  --method M          grape (default), li or roofline\n"
          "  --device-json FILE  add or override a GPU (NeuSight device JSON)\n"
          "  -o OUT.csv          output file (default: stdout)\n"
          "\n"
          "Only the CSV form is supported for now: predicting the paths of a trace\n"
          "(grape predict --gpu NAME TRACE) waits for grape's trace format.\n");
}

int cmd_predict(int argc, char** argv) {
  const char *model = NULL, *gpu = NULL, *in = NULL, *outp = NULL;
  grape_method_t method = GRAPE_METHOD_GRAPE;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(a, "-m") == 0 && i + 1 < argc) {
      model = argv[++i];
    } else if (strcmp(a, "--gpu") == 0 && i + 1 < argc) {
      gpu = argv[++i];
    } else if (strcmp(a, "--csv") == 0 && i + 1 < argc) {
      in = argv[++i];
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      outp = argv[++i];
    } else if (strcmp(a, "--method") == 0 && i + 1 < argc) {
      const char* m = argv[++i];
      if (strcmp(m, "grape") == 0)
        method = GRAPE_METHOD_GRAPE;
      else if (strcmp(m, "li") == 0)
        method = GRAPE_METHOD_LI;
      else if (strcmp(m, "roofline") == 0)
        method = GRAPE_METHOD_ROOFLINE;
      else {
        fprintf(stderr, "grape: error: unknown method '%s' (grape, li, roofline)\n", m);
        return 2;
      }
    } else if (strcmp(a, "--device-json") == 0 && i + 1 < argc) {
      const grape_gpu_spec_t* g;
      if (grape_gpu_load_json(argv[++i], &g) < 0) {
        fprintf(stderr, "grape: error: %s: not a readable device JSON\n", argv[i]);
        return 1;
      }
    } else if (a[0] != '-') {
      fprintf(stderr, "grape: error: predicting a trace is not supported yet; use --csv\n");
      return 2;
    } else {
      fprintf(stderr, "grape: error: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    }
  }
  if (in == NULL) {
    usage(stderr);
    return 2;
  }
  if (gpu != NULL && grape_gpu_find(gpu) == NULL) {
    fprintf(stderr, "grape: error: unknown GPU '%s'; known GPUs:\n", gpu);
    grape_gpu_list(stderr);
    return 1;
  }
  grape_model_t* m;
  char err[256] = "";
  int e = model ? grape_model_load(model, &m, err, sizeof(err)) : grape_model_load_default(&m);
  if (e < 0) {
    fprintf(stderr, "grape: error: %s: %s\n", model ? model : "built-in model",
            err[0] ? err : strerror(-e));
    return 1;
  }
  int rc = 1;
  grape_csv_t* c;
  e = grape_csv_open(in, gpu, 0, &c);
  if (e < 0) {
    if (e == -EINVAL)
      fprintf(stderr, "grape: error: %s: needs a header with a kernel name column and a "
                      "Device column (or --gpu NAME)\n", in);
    else
      fprintf(stderr, "grape: error: %s: %s\n", in, strerror(-e));
    goto fail_open;
  }
  FILE* out = outp ? fopen(outp, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "grape: error: %s: %s\n", outp, strerror(errno));
    goto fail_out;
  }
  fprintf(out, "%s,predicted_ms\n", grape_csv_header(c));
  grape_csv_row_t r;
  size_t good = 0, bad = 0;
  while ((e = grape_csv_next(c, &r)) > 0) {
    if (!r.ok) {
      if (bad++ < 5)
        fprintf(stderr, "grape: warning: %s:%zu: not predicted: %s\n", in, r.line_no, r.why);
      fprintf(out, "%s,\n", r.line);
      continue;
    }
    fprintf(out, "%s,%.6g\n", r.line, grape_predict_kernel_ms_with(m, method, r.gpu, &r.desc));
    good++;
  }
  if (e < 0)
    fprintf(stderr, "grape: error: %s: read error (%s)\n", in, strerror(-e));
  fprintf(stderr, "grape: %zu rows predicted, %zu skipped\n", good, bad);
  rc = e < 0 || ferror(out);
  if (outp && fclose(out) != 0)
    rc = 1;
fail_out:
  grape_csv_close(c);
fail_open:
  grape_model_free(m);
  return rc;
}

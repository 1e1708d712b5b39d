/* grape predict: predicted kernel times for the launches in a CSV.
 *
 * Echoes every input line unchanged and in order, with eight columns
 * appended: predicted_ms, the kernel's own time on the GPU; regime, which
 * part of the model served the row ("known": learned from the GPU's own
 * rows in the training data; "known-extrapolated": such a GPU, but a kernel
 * beyond its rows; "transfer": spec-based, for a GPU or class the model has
 * no rows of); lower_ms and upper_ms, the bounds of grape's interval
 * (nominally 80%, calibrated on held-out data of the same regime, widened
 * beyond the training rows; empty for the baselines and when the model has
 * no calibrated interval); harness_ms, harness_lower_ms, harness_upper_ms,
 * the op's latency through a timing harness like the training data's (the
 * host's dispatch floor included); distance, how far beyond the training
 * rows the kernel lies (0 within them). All are empty for a row that
 * cannot be predicted; such rows are counted and the first few named on
 * stderr. The trace form (grape predict --gpu NAME TRACE) is not written
 * yet; grape export --predict-gpu predicts a trace's kernels. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "grape/predict.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape predict [-m MODEL] [--gpu NAME] [--method M] --csv IN.csv[.gz] [-o OUT.csv]\n"
          "\n"
          "Writes IN's lines unchanged, in order, with eight columns appended:\n"
          "predicted_ms, the kernel's own time on the GPU (as a profiler measures it);\n"
          "regime, 'known' when the model learned the row's GPU from its own measured\n"
          "rows, 'known-extrapolated' when the kernel lies beyond them, 'transfer' when\n"
          "it predicts from the GPU's specs; lower_ms, upper_ms, the bounds of the\n"
          "interval that held the measured time of held-out rows of the same regime with\n"
          "the model's nominal probability (80%%, wider beyond the training rows; empty\n"
          "for --method li and roofline); harness_ms, harness_lower_ms, harness_upper_ms,\n"
          "the op's latency through a timing harness like the training data's (events\n"
          "around one framework call: the host's dispatch floor included); distance, how\n"
          "far beyond the training rows the kernel lies. The target GPU of a row is its\n"
          "Device column; --gpu NAME sets it for files without one (and overrides the\n"
          "column when given). Without -m the model built into grape (trained on the\n"
          "NeuSight data) is used.\n"
          "\n"
          "  -m MODEL            model file from 'grape train'\n"
          "  --method M          grape (default), li or roofline\n"
          "  --device-json FILE  add or override a GPU (NeuSight device JSON)\n"
          "  -o OUT.csv          output file (default: stdout)\n"
          "\n"
          "A trace's paths: 'grape export --chrome TRACE --predict-gpu NAME' predicts\n"
          "their kernels on a GPU; 'grape replay TRACE --all --time -o OUT.csv' writes a\n"
          "CSV of measured launches that this command reads.\n");
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
      char why[256];
      if (grape_gpu_load_json_err(argv[++i], &g, why, sizeof(why)) < 0) {
        fprintf(stderr, "grape: error: %s: not a readable device JSON: %s\n", argv[i], why);
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
  char why[512] = "";
  e = grape_csv_open_err(in, gpu, 0, &c, why, sizeof(why));
  if (e < 0) {
    if (e == -EINVAL)
      fprintf(stderr, "grape: error: %s: %s\n", in, why[0] ? why : "not a launches CSV");
    else
      fprintf(stderr, "grape: error: %s: %s\n", in, strerror(-e));
    goto fail_open;
  }
  FILE* out = outp ? fopen(outp, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "grape: error: %s: %s\n", outp, strerror(errno));
    goto fail_out;
  }
  fprintf(out, "%s,predicted_ms,regime,lower_ms,upper_ms,harness_ms,harness_lower_ms,"
               "harness_upper_ms,distance\n", grape_csv_header(c));
  grape_csv_row_t r;
  size_t good = 0, bad = 0, n[3] = {0, 0, 0};
  while ((e = grape_csv_next(c, &r)) > 0) {
    if (!r.ok) {
      if (bad++ < 5)
        fprintf(stderr, "grape: warning: %s:%zu: not predicted: %s\n", in, r.line_no, r.why);
      fprintf(out, "%s,,,,,,,,\n", r.line);
      continue;
    }
    good++;
    grape_prediction_t p;
    grape_predict_with(m, method, r.gpu, &r.desc, &p);
    n[p.regime]++;
    fprintf(out, "%s,%.6g,%s,", r.line, p.ms, grape_regime_name(p.regime));
    if (p.has_interval)
      fprintf(out, "%.6g,%.6g,%.6g,%.6g,%.6g,%.3g\n", p.lo_ms, p.hi_ms, p.harness_ms,
              p.harness_lo_ms, p.harness_hi_ms, p.distance);
    else
      fprintf(out, ",,%.6g,,,%.3g\n", p.harness_ms, p.distance);
  }
  if (e < 0)
    fprintf(stderr, "grape: error: %s: read error (%s)\n", in, strerror(-e));
  fprintf(stderr,
          "grape: %zu rows predicted (%zu known regime, %zu known-extrapolated, %zu transfer), "
          "%zu skipped\n",
          good, n[GRAPE_REGIME_KNOWN], n[GRAPE_REGIME_KNOWN_EXTRAPOLATED],
          n[GRAPE_REGIME_TRANSFER], bad);
  rc = e < 0 || ferror(out);
  if (outp && fclose(out) != 0)
    rc = 1;
fail_out:
  grape_csv_close(c);
fail_open:
  grape_model_free(m);
  return rc;
}

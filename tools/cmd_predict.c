/* grape predict: predicted kernel times for the launches in a CSV.
 *
 * Echoes every input line unchanged and in order, with four columns
 * appended: predicted_ms; regime, which part of the model served the row
 * ("known": learned from the GPU's own rows in the training data;
 * "transfer": spec-based, for a GPU or class the model has no rows of);
 * lower_ms and upper_ms, the bounds of grape's interval (nominally 80%,
 * calibrated on held-out data of the same regime; empty for the baselines
 * and when the model has no calibrated interval). All four are empty for a
 * row that cannot be predicted; such rows are counted and the first few
 * named on stderr. The trace form (grape predict --gpu NAME TRACE) is not
 * written yet; grape export --predict-gpu predicts a trace's kernels. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "grape/predict.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape predict [-m MODEL] [--gpu NAME] [--method M] --csv IN.csv[.gz] [-o OUT.csv]\n"
          "\n"
          "Writes IN's lines unchanged, in order, with four columns appended:\n"
          "predicted_ms; regime, 'known' when the model learned the row's GPU from its\n"
          "own measured rows, 'transfer' when it predicts from the GPU's specs; and\n"
          "lower_ms, upper_ms, the bounds of the interval that held the measured time\n"
          "of held-out rows of the same regime with the model's nominal probability\n"
          "(80%%; empty for --method li and roofline). The target GPU of a row is its\n"
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
  fprintf(out, "%s,predicted_ms,regime,lower_ms,upper_ms\n", grape_csv_header(c));
  grape_csv_row_t r;
  size_t good = 0, bad = 0, known = 0;
  while ((e = grape_csv_next(c, &r)) > 0) {
    if (!r.ok) {
      if (bad++ < 5)
        fprintf(stderr, "grape: warning: %s:%zu: not predicted: %s\n", in, r.line_no, r.why);
      fprintf(out, "%s,,,,\n", r.line);
      continue;
    }
    good++;
    if (method != GRAPE_METHOD_GRAPE) {
      fprintf(out, "%s,%.6g,transfer,,\n", r.line,
              grape_predict_kernel_ms_with(m, method, r.gpu, &r.desc));
      continue;
    }
    grape_prediction_t p;
    grape_predict_kernel(m, r.gpu, &r.desc, &p);
    known += p.regime == GRAPE_REGIME_KNOWN;
    if (p.has_interval)
      fprintf(out, "%s,%.6g,%s,%.6g,%.6g\n", r.line, p.ms, grape_regime_name(p.regime), p.lo_ms,
              p.hi_ms);
    else
      fprintf(out, "%s,%.6g,%s,,\n", r.line, p.ms, grape_regime_name(p.regime));
  }
  if (e < 0)
    fprintf(stderr, "grape: error: %s: read error (%s)\n", in, strerror(-e));
  fprintf(stderr, "grape: %zu rows predicted (%zu known regime, %zu transfer), %zu skipped\n", good,
          known, good - known, bad);
  rc = e < 0 || ferror(out);
  if (outp && fclose(out) != 0)
    rc = 1;
fail_out:
  grape_csv_close(c);
fail_open:
  grape_model_free(m);
  return rc;
}

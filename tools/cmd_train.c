/* grape train: fits the kernel-time models on measured timings.
 *
 * Reads NeuSight CSV(.gz) files and grape's own timings CSVs (directories are
 * searched recursively for *.csv and *.csv.gz, in sorted order, so a run is
 * reproducible), prints the rows used and skipped per class, and writes the
 * model file. --cv and --cv-shapes instead (or also) run the predictor's
 * cross-validations and print their tables.
 *
 * DESIGN: the library measures, the command reads the environment and
 * prints. The training knobs of experiments (GRAPE_TRAIN_*, GRAPE_CV_DUMP,
 * docs/predictor.md) are read here, once, into grape_train_opts_t; a
 * cross-validation returns a grape_cv_t whose sums the tables below divide. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "progress.h"
#include "grape/predict.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape train [-o MODEL] [--cv [extrapolate]] [--cv-shapes|--cv-families]\n"
          "                   [--gpu NAME]\n"
          "                   [--device-json FILE]...\n"
          "                   [--allow-simulated] FILE|DIR...\n"
          "\n"
          "Fits the roofline, Li et al. and grape kernel-time models on measured\n"
          "timings and writes them to MODEL (a versioned text file).\n"
          "\n"
          "  FILE|DIR            NeuSight CSV(.gz) files or grape timings CSVs; a\n"
          "                      directory adds every *.csv and *.csv.gz below it\n"
          "  -o MODEL            write the fitted model here\n"
          "  --cv                leave-one-GPU-out cross-validation table on stdout\n"
          "                      (the transfer regime: GPUs the model has not seen)\n"
          "  --cv-shapes         cross-validation over held-out shapes, 5 folds (the\n"
          "                      known regime: GPUs of the training data, new shapes)\n"
          "  --cv-families       the same over held-out shape families (ranges of every\n"
          "                      dim, alignment): shapes unlike the fit's rows\n"
          "  --cv extrapolate    beyond the training range: fit the smaller half of each\n"
          "                      op's rows, predict the larger half, on the fit's GPUs and\n"
          "                      on GPUs left out; printed next to the random splits\n"
          "  --gpu NAME          GPU of rows in files without a Device column\n"
          "  --device-json FILE  add or override a GPU (NeuSight device JSON)\n"
          "  --allow-simulated   train on rows timed on the simulated device (Device\n"
          "                      'NAME (simcu)', as grape replay --time writes on the sim);\n"
          "                      refused by default: their times are a clock model's\n"
          "  --quiet             do not name skipped lines\n");
}

/* An experiment knob of the environment, read as atoi / atof read it. */
static void env_int(const char* name, int* v) {
  const char* e = getenv(name);
  if (e != NULL)
    *v = atoi(e);
}
static void env_double(const char* name, double* v) {
  const char* e = getenv(name);
  if (e != NULL)
    *v = atof(e);
}

/* The training options: the defaults, with the experiment knobs of the
 * environment applied (a value out of range is then taken as
 * grape_train_opts_t says). */
static void train_opts_from_env(grape_train_opts_t* o) {
  grape_train_opts_init(o);
  env_int("GRAPE_TRAIN_TREES", &o->trees);
  env_double("GRAPE_TRAIN_RATE", &o->rate);
  env_int("GRAPE_TRAIN_FOLDS", &o->folds);
  env_double("GRAPE_TRAIN_P", &o->floor_p);
  env_double("GRAPE_TRAIN_RIDGE", &o->ridge);
  env_int("GRAPE_TRAIN_SELECT", &o->select);
  env_int("GRAPE_TRAIN_CRIT", &o->crit);
  env_int("GRAPE_TRAIN_UNIT_SLOPE", &o->unit_slope);
  env_int("GRAPE_TRAIN_XFORM", &o->xform);
  env_double("GRAPE_TRAIN_FADE", &o->fade);
  env_int("GRAPE_TRAIN_SIBLING", &o->sibling);
  env_int("GRAPE_TRAIN_ALIGN", &o->align);
  env_int("GRAPE_TRAIN_CALIB", &o->calib);
  env_int("GRAPE_TRAIN_FLOOR_SPLIT", &o->floor_split);
  env_int("GRAPE_TRAIN_FAMILY_LEVEL", &o->family_level);
  env_int("GRAPE_TRAIN_HEIGHT_SPLIT", &o->height_split);
  if (getenv("GRAPE_TRAIN_VERBOSE") != NULL)
    o->log = stderr;
}

/* ---- Cross-validation tables ---- */

/* The per-GPU table: a header of group names, then a row per GPU whose
 * cells, `w` wide, cell() writes ("-" where the GPU has no rows). */
static void print_per_gpu(const grape_cv_t* cv, int w, void (*cell)(const grape_cv_cell_t* a)) {
  printf("%-24s", "gpu");
  for (int g = 0; g < GRAPE_CV_GROUPS; g++)
    printf(" %*s", w, grape_cv_group_name(g));
  putchar('\n');
  for (int gi = 0; gi < cv->ngpu; gi++) {
    printf("%-24s", cv->gpu[gi]);
    for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
      const grape_cv_cell_t* a = &cv->cell[gi][g];
      if (a->n == 0)
        printf(" %*s", w, "-");
      else
        cell(a);
    }
    putchar('\n');
  }
}

/* Leave one GPU out: grape's per-kernel MAPE / coverage. */
static void gpu_cell(const grape_cv_cell_t* a) {
  printf("   %5.1f/%5.1f", 100 * a->ape[GRAPE_METHOD_GRAPE] / a->n, 100 * a->covered / a->n);
}

/* Held-out shapes: grape as served (its transfer regime) / coverage. */
static void shape_cell(const grape_cv_cell_t* a) {
  printf("  %5.1f (%5.1f)/%5.1f", 100 * a->ape_known / a->n,
         100 * a->ape[GRAPE_METHOD_GRAPE] / a->n, 100 * a->covered / a->n);
}

/* Held-out GPUs with a known GPU of their architecture in the fit: per
 * group and held-out GPU, grape as served with that GPU's trees against
 * without them (what decides the class's sibling rule). */
static void print_anchored(const grape_cv_t* cv) {
  int any = 0;
  for (int gi = 0; gi < cv->ngpu; gi++)
    for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
      const grape_cv_cell_t* a = &cv->cell[gi][g];
      if (a->anchored == 0)
        continue;
      if (!any)
        printf("\nheld-out GPUs with a known GPU of their architecture in the fit: per-kernel "
               "MAPE %% with its trees / without\n%-24s %-12s %8s %8s %8s\n", "gpu", "group",
               "rows", "with", "without");
      any = 1;
      printf("%-24s %-12s %8.0f %8.1f %8.1f\n", cv->gpu[gi], grape_cv_group_name(g),
             a->anchored, 100 * a->ape_anchored / a->anchored, 100 * a->ape_alone / a->anchored);
    }
}

/* Leave one GPU out: per group, each method's per-kernel MAPE and summed-time
 * error (mean over held-out GPUs), then per held-out GPU. */
static void print_cv_gpus(const grape_cv_t* cv) {
  static const char* const mname[GRAPE_METHOD_COUNT] = {"roofline", "li", "grape"};
  printf("leave-one-GPU-out cross-validation (%d GPUs, %zu rows)\n", cv->ngpu, cv->rows);
  printf("per-kernel MAPE %% (summed-time error %%, mean over held-out GPUs); "
         "coverage %% of grape's %.0f%% intervals\n", 100 * cv->level);
  printf("%-12s %8s", "group", "rows");
  for (int me = 0; me < GRAPE_METHOD_COUNT; me++)
    printf(" %18s", mname[me]);
  printf(" %14s %8s %14s\n", "grape-no-dims", "coverage", "cov-no-dims");
  for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
    grape_cv_cell_t t;
    grape_cv_sum(cv, g, &t);
    if (t.n == 0)
      continue;
    /* The summed-time error is each held-out GPU's, then their mean. */
    double sume[GRAPE_METHOD_COUNT] = {0};
    int ng = 0;
    for (int gi = 0; gi < cv->ngpu; gi++) {
      const grape_cv_cell_t* a = &cv->cell[gi][g];
      if (a->n == 0)
        continue;
      ng++;
      for (int me = 0; me < GRAPE_METHOD_COUNT; me++)
        sume[me] += fabs(a->sum_pred[me] - a->sum_meas) / a->sum_meas;
    }
    printf("%-12s %8.0f", grape_cv_group_name(g), t.n);
    for (int me = 0; me < GRAPE_METHOD_COUNT; me++)
      printf("   %6.1f (%6.1f)  ", 100 * t.ape[me] / t.n, 100 * sume[me] / ng);
    printf(" %14.1f %8.1f %14.1f\n", 100 * t.ape_launch / t.n, 100 * t.covered / t.n,
           100 * t.cover_launch / t.n);
  }
  grape_cv_cell_t tot;
  grape_cv_sum(cv, -1, &tot);
  printf("%-12s %8.0f %78s %8.1f %14.1f\n", "all", tot.n, "", 100 * tot.covered / tot.n,
         100 * tot.cover_launch / tot.n);
  print_anchored(cv);
  printf("\nper held-out GPU, grape's per-kernel MAPE %% / coverage %%:\n");
  print_per_gpu(cv, 13, gpu_cell);
}

/* Held-out shapes: per group, grape as served next to its transfer regime,
 * then per GPU. */
static void print_cv_shapes(const grape_cv_t* cv) {
  printf("%s-fold cross-validation (%d folds of %s, %d GPUs, %zu rows)\n",
         cv->families ? "family" : "shape", cv->folds, cv->families ? "shape families" : "shapes",
         cv->ngpu, cv->rows);
  printf("per-kernel MAPE %% of grape as served (known regime) and of its transfer "
         "regime on the same held-out shapes; coverage %% of the %.0f%% intervals; the "
         "same without op dims (launch only)\n",
         100 * cv->level);
  printf("%-12s %8s %8s %8s %8s %8s %13s %11s\n", "group", "rows", "known", "grape",
         "transfer", "coverage", "grape-no-dims", "cov-no-dims");
  for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
    grape_cv_cell_t t;
    grape_cv_sum(cv, g, &t);
    if (t.n == 0)
      continue;
    printf("%-12s %8.0f %8.0f %8.1f %8.1f %8.1f %13.1f %11.1f\n", grape_cv_group_name(g), t.n,
           t.known, 100 * t.ape_known / t.n, 100 * t.ape[GRAPE_METHOD_GRAPE] / t.n,
           100 * t.covered / t.n, 100 * t.ape_launch / t.n, 100 * t.cover_launch / t.n);
  }
  grape_cv_cell_t tot;
  grape_cv_sum(cv, -1, &tot);
  if (tot.n > 0)
    printf("%-12s %8.0f %8.0f %8s %8s %8.1f %13s %11.1f\n", "all", tot.n, tot.known, "", "",
           100 * tot.covered / tot.n, "", 100 * tot.cover_launch / tot.n);
  /* Coverage per regime: the known regime within its GPU's rows, beyond
   * them, and the transfer regime where a GPU's trees were dropped. */
  printf("\ncoverage %% of the %.0f%% intervals per regime (rows)\n", 100 * cv->level);
  printf("%-12s %20s %20s %20s\n", "group", "known", "known-extrapolated", "transfer");
  for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
    grape_cv_cell_t t;
    grape_cv_sum(cv, g, &t);
    if (t.n == 0)
      continue;
    double n[3] = {t.known - t.extrapolated, t.extrapolated, t.n - t.known};
    double c[3] = {t.cover_known, t.cover_extrapolated, t.covered - t.cover_known -
                   t.cover_extrapolated};
    printf("%-12s", grape_cv_group_name(g));
    for (int r = 0; r < 3; r++) {
      char cell[32] = "-";
      if (n[r] > 0)
        snprintf(cell, sizeof(cell), "%.1f (%.0f)", 100 * c[r] / n[r], n[r]);
      printf(" %20s", cell);
    }
    printf("\n");
  }
  printf("\nper GPU, grape's per-kernel MAPE %% (transfer regime's) / coverage %%:\n");
  print_per_gpu(cv, 19, shape_cell);
}

/* Extrapolation splits next to the random splits: per group and regime,
 * MAPE of grape as served and coverage of its intervals. */
static void print_cv_extrapolate(const grape_cv_t* rk, const grape_cv_t* ek, const grape_cv_t* rt,
                                 const grape_cv_t* et) {
  printf("extrapolation cross-validation: per group, the rows of op size (GEMM and conv FLOPs, "
         "other ops' elements) up to the %.0fth percentile are fitted, the larger ones "
         "predicted\n", 100 * ek->split_q);
  printf("known GPUs: random = held-out shapes (5 folds), extrapolated = large rows of the "
         "fit's GPUs; unseen GPUs: random = leave one GPU out, extrapolated = a left-out "
         "GPU's large rows\n");
  printf("per-kernel MAPE %% and coverage %% of the %.0f%% intervals\n", 100 * ek->level);
  printf("%-12s | %8s %7s %7s %5s %7s %7s | %8s %7s %7s %5s %7s %7s\n", "group", "rows",
         "random", "extrap", "x", "cov-rnd", "cov-ext", "rows", "random", "extrap", "x",
         "cov-rnd", "cov-ext");
  printf("%-12s | %-45s | %-45s\n", "", "known GPUs (known regime)",
         "unseen GPUs (transfer regime)");
  for (int g = 0; g < GRAPE_CV_GROUPS; g++) {
    grape_cv_cell_t a, b, c, e;
    grape_cv_sum(rk, g, &a);
    grape_cv_sum(ek, g, &b);
    grape_cv_sum(rt, g, &c);
    grape_cv_sum(et, g, &e);
    if (b.n == 0 && e.n == 0)
      continue;
    double ka = 100 * a.ape_known / a.n, kb = 100 * b.ape_known / b.n;
    double ta = 100 * c.ape[GRAPE_METHOD_GRAPE] / c.n, tb = 100 * e.ape_known / e.n;
    printf("%-12s | %8.0f %7.1f %7.1f %5.2f %7.1f %7.1f | %8.0f %7.1f %7.1f %5.2f %7.1f %7.1f\n",
           grape_cv_group_name(g), b.n, ka, kb, kb / ka, 100 * a.covered / a.n,
           100 * b.covered / b.n, e.n, ta, tb, tb / ta, 100 * c.covered / c.n,
           100 * e.covered / e.n);
  }
  print_anchored(et);
}

/* ---- The command ---- */

/* What a training error says of the data (the fits' errno values). */
static const char* train_error(int err) {
  switch (err) {
  case -ENODATA:
    return "too few usable rows to fit the models (a fit needs rows of more than one "
           "time and shape)";
  case -EDOM:
    return "the rows do not determine the models: the least-squares system is singular "
           "(the rows need varied shapes and times)";
  case -ENOMEM: return "out of memory";
  default: return strerror(-err);
  }
}

static int ends_with(const char* s, const char* suf) {
  size_t a = strlen(s), b = strlen(suf);
  return a >= b && strcmp(s + a - b, suf) == 0;
}

typedef struct ctx_s {
  grape_dataset_t* d;
  grape_load_stats_t st;
  const char* gpu;
  int quiet;
  int files;
  int sim_files;          /* files with rows of the simulated device */
  char sim_first[4096];   /* the first of them */
  progress_t progress;    /* on a terminal: the file being read, the phase */
} ctx_t;

/* On a terminal, what is being computed on the rows now (erased by the next
 * line of output): a fit or a cross-validation takes seconds to minutes. */
static void phase(ctx_t* c, const char* what) {
  progress_clear(&c->progress);
  progress_say(&c->progress, 1, "grape: %s on %zu rows...", what, grape_dataset_size(c->d));
}

static int add_path(ctx_t* c, const char* path) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    progress_clear(&c->progress);
    fprintf(stderr, "grape: error: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(sb.st_mode)) {
    struct dirent** ents;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0) {
      progress_clear(&c->progress);
      fprintf(stderr, "grape: error: %s: %s\n", path, strerror(errno));
      return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
      const char* nm = ents[i]->d_name;
      if (rc == 0 && nm[0] != '.') {
        char sub[4096];
        snprintf(sub, sizeof(sub), "%s/%s", path, nm);
        struct stat ss;
        if (stat(sub, &ss) == 0 &&
            (S_ISDIR(ss.st_mode) || ends_with(nm, ".csv") || ends_with(nm, ".csv.gz")))
          rc = add_path(c, sub);
      }
      free(ents[i]);
    }
    free(ents);
    return rc;
  }
  size_t sim_before = c->st.simulated;
  progress_say(&c->progress, 0, "grape: reading %s (%d files, %zu rows so far)", path, c->files,
               grape_dataset_size(c->d));
  int err = grape_dataset_add_file(c->d, path, c->gpu, &c->st, c->quiet ? NULL : stderr, 5);
  if (err == -EINVAL) {
    /* The header lacks a column every row needs: open it again for the
     * reader's account of which. */
    char why[512] = "";
    grape_csv_t* csv;
    if (grape_csv_open_err(path, c->gpu, 1, &csv, why, sizeof(why)) == 0)
      grape_csv_close(csv);
    progress_clear(&c->progress);
    fprintf(stderr, "grape: error: %s: %s\n", path, why[0] ? why : "not a timings CSV");
    return -1;
  }
  if (err < 0) {
    progress_clear(&c->progress);
    fprintf(stderr, "grape: error: %s: %s\n", path, strerror(-err));
    return -1;
  }
  if (c->st.simulated > sim_before && c->sim_files++ == 0)
    snprintf(c->sim_first, sizeof(c->sim_first), "%s", path);
  c->files++;
  return 0;
}

int cmd_train(int argc, char** argv) {
  const char* out = NULL;
  int cv = 0, cv_shapes = 0, cv_extrap = 0, allow_sim = 0, rc = 1;
  ctx_t c = {0};
  grape_cv_t* res = NULL;
  grape_train_opts_t opts;
  train_opts_from_env(&opts);
  const char** inputs = calloc((size_t)argc, sizeof(*inputs));
  int ninputs = 0;
  if (inputs == NULL)
    return 1;
  for (int i = 1; i < argc; i++) {
    const char* a = argv[i];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      free(inputs);
      return 0;
    } else if (strcmp(a, "-o") == 0 && i + 1 < argc) {
      out = argv[++i];
    } else if (strcmp(a, "--cv") == 0 && i + 1 < argc && strcmp(argv[i + 1], "extrapolate") == 0) {
      cv_extrap = 1;
      i++;
    } else if (strcmp(a, "--cv") == 0) {
      cv = 1;
    } else if (strcmp(a, "--cv-shapes") == 0) {
      cv_shapes = 1;
    } else if (strcmp(a, "--cv-families") == 0) {
      cv_shapes = 2;
    } else if (strcmp(a, "--quiet") == 0) {
      c.quiet = 1;
    } else if (strcmp(a, "--allow-simulated") == 0) {
      allow_sim = 1;
    } else if (strcmp(a, "--gpu") == 0 && i + 1 < argc) {
      c.gpu = argv[++i];
      if (grape_gpu_find(c.gpu) == NULL) {
        fprintf(stderr, "grape: error: unknown GPU '%s'; known GPUs:\n", c.gpu);
        grape_gpu_list(stderr);
        goto done;
      }
    } else if (strcmp(a, "--device-json") == 0 && i + 1 < argc) {
      const grape_gpu_spec_t* g;
      char why[256];
      if (grape_gpu_load_json_err(argv[++i], &g, why, sizeof(why)) < 0) {
        fprintf(stderr, "grape: error: %s: not a readable device JSON: %s\n", argv[i], why);
        goto done;
      }
    } else if (a[0] == '-' && a[1] != '\0') {
      fprintf(stderr, "grape: error: unknown option '%s'\n", a);
      usage(stderr);
      rc = 2;
      goto done;
    } else {
      inputs[ninputs++] = a;
    }
  }
  if (ninputs == 0 || (out == NULL && !cv && !cv_shapes && !cv_extrap)) {
    usage(stderr);
    rc = 2;
    goto done;
  }
  if (grape_dataset_new(&c.d) < 0)
    goto done;
  grape_dataset_accept_simulated(c.d, allow_sim);
  progress_start(&c.progress);
  for (int i = 0; i < ninputs; i++)
    if (add_path(&c, inputs[i]) < 0)
      goto done;
  progress_clear(&c.progress);
  if (c.st.simulated > 0) {
    fprintf(stderr,
            "grape: error: %zu rows (in %d files, %s%s) were timed on the simulated device "
            "(their Device ends in \" (simcu)\"): their times are the sim's clock model, not a "
            "GPU's measurements. Time the trace on a GPU (grape replay --time there), or pass "
            "--allow-simulated to train on them anyway\n",
            c.st.simulated, c.sim_files, c.sim_files > 1 ? "the first " : "", c.sim_first);
    goto done;
  }
  fprintf(stderr, "grape: %d files, %zu rows\n", c.files, grape_dataset_size(c.d));
  printf("%-12s %10s %10s\n", "class", "used", "skipped");
  for (int k = 0; k < GRAPE_KC_COUNT; k++)
    printf("%-12s %10zu %10zu\n", grape_kclass_name(k), c.st.used[k], c.st.skipped[k]);
  printf("%-12s %10s %10zu\n", "unclassified", "-", c.st.skipped_unclassified);
  if (grape_dataset_size(c.d) == 0) {
    fprintf(stderr, "grape: error: no usable rows\n");
    goto done;
  }
  if ((cv || cv_shapes || cv_extrap) && (res = malloc(4 * sizeof(*res))) == NULL)
    goto done;
  if (cv_extrap) {
    /* Experiments: GRAPE_CV_SPLIT=Q fits the rows up to the Q-quantile of size (0.5). */
    double q = 0.5;
    env_double("GRAPE_CV_SPLIT", &q);
    /* GRAPE_CV_DUMP=FILE: every prediction of the two extrapolation splits. */
    const char* dp = getenv("GRAPE_CV_DUMP");
    FILE* dump = dp != NULL ? fopen(dp, "w") : NULL;
    int only = 0;   /* GRAPE_CV_ONLY=1: the extrapolation splits alone */
    env_int("GRAPE_CV_ONLY", &only);
    phase(&c, "cross-validating beyond the training range");
    int err = only ? 0 : grape_model_crossval_shapes(c.d, 5, &opts, &res[0]);
    opts.cv_dump = dump;
    if (err == 0)
      err = grape_model_crossval_extrapolate(c.d, q, 0, &opts, &res[1]);
    opts.cv_dump = NULL;
    if (err == 0 && !only)
      err = grape_model_crossval(c.d, &opts, &res[2]);
    opts.cv_dump = dump;
    if (err == 0)
      err = grape_model_crossval_extrapolate(c.d, q, 1, &opts, &res[3]);
    opts.cv_dump = NULL;
    progress_clear(&c.progress);
    if (dump != NULL)
      fclose(dump);
    if (only) {
      memcpy(&res[0], &res[1], sizeof(res[0]));
      memcpy(&res[2], &res[3], sizeof(res[2]));
    }
    if (err < 0) {
      fprintf(stderr, "grape: error: extrapolation cross-validation needs rows of two or more "
                      "GPUs with op dims (%s)\n", strerror(-err));
      goto done;
    }
    print_cv_extrapolate(&res[0], &res[1], &res[2], &res[3]);
  }
  if (cv) {
    /* Experiments: GRAPE_CV_DUMP=FILE writes every held-out prediction. */
    const char* dp = getenv("GRAPE_CV_DUMP");
    opts.cv_dump = dp != NULL ? fopen(dp, "w") : NULL;
    phase(&c, "cross-validating, each GPU left out in turn");
    int err = grape_model_crossval(c.d, &opts, res);
    progress_clear(&c.progress);
    if (opts.cv_dump != NULL)
      fclose(opts.cv_dump);
    opts.cv_dump = NULL;
    if (err < 0) {
      fprintf(stderr, "grape: error: cross-validation needs rows of two or more GPUs (%s)\n",
              strerror(-err));
      goto done;
    }
    print_cv_gpus(res);
  }
  if (cv_shapes) {
    if (cv)
      putchar('\n');
    /* Experiments: GRAPE_CV_DUMP=FILE writes every held-out prediction;
     * GRAPE_CV_FOLDS=N (5) splits the shapes or families into N folds, so
     * that a rule calibrated on one split is tested on another. */
    const char* dp = getenv("GRAPE_CV_DUMP");
    opts.cv_dump = dp != NULL ? fopen(dp, "w") : NULL;
    int folds = 5;
    env_int("GRAPE_CV_FOLDS", &folds);
    folds = folds >= 2 && folds <= 20 ? folds : 5;
    phase(&c, cv_shapes == 2 ? "cross-validating on held-out shape families"
                             : "cross-validating on held-out shapes");
    int err = cv_shapes == 2 ? grape_model_crossval_families(c.d, folds, &opts, res)
                             : grape_model_crossval_shapes(c.d, folds, &opts, res);
    progress_clear(&c.progress);
    if (opts.cv_dump != NULL)
      fclose(opts.cv_dump);
    opts.cv_dump = NULL;
    if (err < 0) {
      fprintf(stderr, "grape: error: shape cross-validation failed: %s\n", strerror(-err));
      goto done;
    }
    print_cv_shapes(res);
  }
  if (out != NULL) {
    grape_model_t* m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    phase(&c, "training");
    int err = grape_model_train_opts(c.d, &opts, &m);
    progress_clear(&c.progress);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (err < 0) {
      fprintf(stderr, "grape: error: training failed: %s\n", train_error(err));
      goto done;
    }
    fprintf(stderr, "grape: trained in %.2f s\n",
            (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
    err = grape_model_save(m, out);
    grape_model_free(m);
    if (err < 0) {
      fprintf(stderr, "grape: error: %s: %s\n", out, strerror(-err));
      goto done;
    }
    fprintf(stderr, "grape: wrote the model to %s (grape predict -m %s)\n", out, out);
  }
  rc = 0;
done:
  progress_clear(&c.progress);
  free(res);
  grape_dataset_free(c.d);
  free(inputs);
  return rc;
}

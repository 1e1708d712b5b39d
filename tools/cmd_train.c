/* grape train: fits the kernel-time models on measured timings.
 *
 * Reads NeuSight CSV(.gz) files and grape's own timings CSVs (directories are
 * searched recursively for *.csv and *.csv.gz, in sorted order, so a run is
 * reproducible), prints the rows used and skipped per class, and writes the
 * model file. --cv instead (or also) runs leave-one-GPU-out cross-validation. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "grape/predict.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape train [-o MODEL] [--cv] [--cv-shapes] [--gpu NAME] [--device-json FILE]...\n"
          "                   FILE|DIR...\n"
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
          "  --gpu NAME          GPU of rows in files without a Device column\n"
          "  --device-json FILE  add or override a GPU (NeuSight device JSON)\n"
          "  --quiet             do not name skipped lines\n");
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
} ctx_t;

static int add_path(ctx_t* c, const char* path) {
  struct stat sb;
  if (stat(path, &sb) != 0) {
    fprintf(stderr, "grape: error: %s: %s\n", path, strerror(errno));
    return -1;
  }
  if (S_ISDIR(sb.st_mode)) {
    struct dirent** ents;
    int n = scandir(path, &ents, NULL, alphasort);
    if (n < 0) {
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
  int err = grape_dataset_add_file(c->d, path, c->gpu, &c->st, c->quiet ? NULL : stderr, 5);
  if (err < 0) {
    fprintf(stderr, "grape: error: %s: %s\n", path,
            err == -EINVAL ? "no header with a kernel name, device and latency column"
                           : strerror(-err));
    return -1;
  }
  c->files++;
  return 0;
}

int cmd_train(int argc, char** argv) {
  const char* out = NULL;
  int cv = 0, cv_shapes = 0, rc = 1;
  ctx_t c = {0};
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
    } else if (strcmp(a, "--cv") == 0) {
      cv = 1;
    } else if (strcmp(a, "--cv-shapes") == 0) {
      cv_shapes = 1;
    } else if (strcmp(a, "--quiet") == 0) {
      c.quiet = 1;
    } else if (strcmp(a, "--gpu") == 0 && i + 1 < argc) {
      c.gpu = argv[++i];
      if (grape_gpu_find(c.gpu) == NULL) {
        fprintf(stderr, "grape: error: unknown GPU '%s'; known GPUs:\n", c.gpu);
        grape_gpu_list(stderr);
        goto done;
      }
    } else if (strcmp(a, "--device-json") == 0 && i + 1 < argc) {
      const grape_gpu_spec_t* g;
      int err = grape_gpu_load_json(argv[++i], &g);
      if (err < 0) {
        fprintf(stderr, "grape: error: %s: not a device JSON (%s)\n", argv[i], strerror(-err));
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
  if (ninputs == 0 || (out == NULL && !cv && !cv_shapes)) {
    usage(stderr);
    rc = 2;
    goto done;
  }
  if (grape_dataset_new(&c.d) < 0)
    goto done;
  for (int i = 0; i < ninputs; i++)
    if (add_path(&c, inputs[i]) < 0)
      goto done;
  fprintf(stderr, "grape: %d files, %zu rows\n", c.files, grape_dataset_size(c.d));
  printf("%-12s %10s %10s\n", "class", "used", "skipped");
  for (int k = 0; k < GRAPE_KC_COUNT; k++)
    printf("%-12s %10zu %10zu\n", grape_kclass_name(k), c.st.used[k], c.st.skipped[k]);
  printf("%-12s %10s %10zu\n", "unclassified", "-", c.st.skipped_unclassified);
  if (grape_dataset_size(c.d) == 0) {
    fprintf(stderr, "grape: error: no usable rows\n");
    goto done;
  }
  if (cv) {
    int err = grape_model_crossval(c.d, stdout);
    if (err < 0) {
      fprintf(stderr, "grape: error: cross-validation needs rows of two or more GPUs (%s)\n",
              strerror(-err));
      goto done;
    }
  }
  if (cv_shapes) {
    if (cv)
      putchar('\n');
    int err = grape_model_crossval_shapes(c.d, 5, stdout);
    if (err < 0) {
      fprintf(stderr, "grape: error: shape cross-validation failed: %s\n", strerror(-err));
      goto done;
    }
  }
  if (out != NULL) {
    grape_model_t* m;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int err = grape_model_train(c.d, &m);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (err < 0) {
      fprintf(stderr, "grape: error: training failed: %s\n", strerror(-err));
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
  }
  rc = 0;
done:
  grape_dataset_free(c.d);
  free(inputs);
  return rc;
}

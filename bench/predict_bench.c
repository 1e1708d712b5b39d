/* Predictor benchmark: kernel predictions per second on one core (from a
 * prepared kernel, and from a raw launch including name parsing), and the
 * time to train on a directory of timing CSVs.
 * Usage: predict_bench [DATA_DIR [N]]   (default: ../shared/data/neusight/train;
 * N predictions per timed loop, 2000000; a small N for callgrind, which
 * counts instructions where a loaded machine makes times noisy) */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grape/predict.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static int add_dir(grape_dataset_t* d, const char* dir, grape_load_stats_t* st) {
  struct dirent** e;
  int n = scandir(dir, &e, NULL, alphasort), files = 0;
  for (int i = 0; i < n; i++) {
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, e[i]->d_name);
    if (e[i]->d_name[0] != '.') {
      if (strstr(e[i]->d_name, ".csv"))
        files += grape_dataset_add_file(d, p, NULL, st, NULL, 0) == 0;
      else
        files += add_dir(d, p, st);
    }
    free(e[i]);
  }
  if (n >= 0)
    free(e);
  return files;
}

int main(int argc, char** argv) {
  const char* dir = argc > 1 ? argv[1] : "../shared/data/neusight/train";
  grape_model_t* m;
  if (grape_model_load_default(&m) < 0)
    return 1;
  enum { NK = 64 };
  grape_kernel_desc_t k[NK];
  grape_kernel_prep_t p[NK];
  static const char* const names[] = {
      "ampere_sgemm_128x64_tn",
      "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
      "at::detail::Array<char*, 3>)",
      "void (anonymous namespace)::softmax_warp_forward<float, float, float, 8, false, false>",
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"};
  for (int i = 0; i < NK; i++) {
    grape_kernel_desc_t d = {.name = names[i % 4], .grid = {(unsigned)(1 + 37 * i), 2, 1},
                             .block = {128, 1, 1}, .regs = -1,
                             .op = i % 4 == 0 ? GRAPE_OP_GEMM : GRAPE_OP_ELEMENTWISE,
                             .dims = {1, 64.0 * (i + 1), 512, 256}};
    if (i % 4 != 0)
      d.dims[0] = 1e5 * (i + 1), d.dims[1] = 0;
    k[i] = d;
    grape_kernel_prepare(&k[i], &p[i]);
  }
  /* The H100 is no GPU of the training data (transfer regime); the A100
   * is (known regime: per-GPU trees on top of the transfer prediction). */
  const grape_gpu_spec_t* g = grape_gpu_find("NVIDIA H100 80GB HBM3");
  const grape_gpu_spec_t* known = grape_gpu_find("NVIDIA A100-PCIE-40GB");
  double sink = 0;
  long n0 = argc > 2 ? atol(argv[2]) : 2000000, n = n0 > 0 ? n0 : 2000000;
  double t0 = now();
  for (long i = 0; i < n; i++)
    sink += grape_predict_prepared_ms(m, GRAPE_METHOD_GRAPE, g, &p[i % NK]);
  double t1 = now();
  printf("predictions/s (prepared kernel, transfer regime): %.3g\n", n / (t1 - t0));
  t0 = now();
  for (long i = 0; i < n; i++) {
    grape_prediction_t r;
    grape_predict_prepared(m, known, &p[i % NK], &r);
    sink += r.ms + r.lo_ms + r.hi_ms;
  }
  t1 = now();
  printf("predictions/s (prepared kernel, known regime, with interval): %.3g\n", n / (t1 - t0));
  n = n / 4;
  t0 = now();
  for (long i = 0; i < n; i++)
    sink += grape_predict_kernel_ms(m, g, &k[i % NK]);
  t1 = now();
  printf("predictions/s (raw launch, name parsed each time, transfer regime): %.3g\n",
         n / (t1 - t0));
  grape_dataset_t* d;
  grape_load_stats_t st = {0};
  grape_dataset_new(&d);
  t0 = now();
  int files = add_dir(d, dir, &st);
  t1 = now();
  if (files > 0) {
    grape_model_t* tm;
    double t2 = now();
    int err = grape_model_train(d, &tm);
    double t3 = now();
    printf("load %d files (%zu rows): %.2f s; train: %.2f s%s\n", files, grape_dataset_size(d),
           t1 - t0, t3 - t2, err ? " (failed)" : "");
    if (!err)
      grape_model_free(tm);
  } else {
    printf("no training data under %s; training not timed\n", dir);
  }
  grape_dataset_free(d);
  grape_model_free(m);
  return sink < 0;
}

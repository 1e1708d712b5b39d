/* Tests of the models, the model file and training (predict/model.c, train.c). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grape/predict.h"

#ifndef SUBSET_DIR
#error "SUBSET_DIR must name data/neusight-subset"
#endif

static grape_kernel_desc_t gemm(double m, double n, double k) {
  grape_kernel_desc_t d = {.name = "ampere_sgemm_128x64_nn",
                           .grid = {(unsigned)ceil(n / 64), (unsigned)ceil(m / 128), 1},
                           .block = {128, 1, 1}, .regs = -1, .op = GRAPE_OP_GEMM,
                           .dims = {1, m, n, k}};
  return d;
}

Test(predict, default_model_predicts_every_class) {
  grape_model_t* m;
  cr_assert_eq(grape_model_load_default(&m), 0);
  const grape_gpu_spec_t* g = grape_gpu_find("NVIDIA H100 80GB HBM3");
  static const char* const names[] = {"ampere_sgemm_128x64_nn", "vectorized_elementwise_kernel",
                                      "softmax_warp_forward", "layer_norm_kernel",
                                      "cudnn_winograd", "my_kernel"};
  for (int i = 0; i < 6; i++) {
    grape_kernel_desc_t k = {.name = names[i], .grid = {1000, 1, 1}, .block = {256, 1, 1},
                             .regs = -1};
    for (int me = 0; me < GRAPE_METHOD_COUNT; me++) {
      double t = grape_predict_kernel_ms_with(m, me, g, &k);
      cr_expect(isfinite(t) && t > 0 && t < 1e4, "%s method %d: %g", names[i], me, t);
    }
  }
  grape_model_free(m);
}

Test(predict, bigger_gemms_take_longer_and_faster_gpus_less) {
  grape_model_t* m;
  cr_assert_eq(grape_model_load_default(&m), 0);
  const grape_gpu_spec_t* t4 = grape_gpu_find("Tesla T4");
  const grape_gpu_spec_t* a100 = grape_gpu_find("NVIDIA A100-PCIE-40GB");
  grape_kernel_desc_t small = gemm(1024, 1024, 1024), big = gemm(4096, 4096, 4096);
  double ts = grape_predict_kernel_ms(m, t4, &small), tb = grape_predict_kernel_ms(m, t4, &big);
  cr_expect(tb > 20 * ts, "64x the FLOPs: %g vs %g ms", tb, ts);
  /* 137 GFLOP on a T4 (8.1 TFLOPS peak) cannot beat the peak... */
  cr_expect(tb > 137.4 / 8.141, "%g ms", tb);
  /* ...and an A100 is faster. */
  cr_expect(grape_predict_kernel_ms(m, a100, &big) < tb);
  grape_model_free(m);
}

Test(predict, path_time_graph_beats_eager) {
  grape_model_t* m;
  cr_assert_eq(grape_model_load_default(&m), 0);
  const grape_gpu_spec_t* g = grape_gpu_find("H200");
  grape_kernel_desc_t k[10];
  for (int i = 0; i < 10; i++)
    k[i] = gemm(256, 256, 256);
  double eager, graph, one = grape_predict_kernel_ms(m, g, &k[0]);
  cr_assert_eq(grape_predict_path(m, g, k, 10, &eager, &graph), 0);
  cr_expect(eager > 10 * one && graph > 10 * one);
  cr_expect(graph < eager, "graph %g vs eager %g", graph, eager);
  cr_expect_eq(grape_predict_path(m, NULL, k, 10, &eager, &graph), -EINVAL);
  grape_model_free(m);
}

static char* read_all(const char* path, size_t* n) {
  FILE* f = fopen(path, "rb");
  cr_assert_not_null(f);
  char* b = malloc(1 << 20);
  *n = fread(b, 1, 1 << 20, f);
  fclose(f);
  return b;
}

static grape_dataset_t* subset(void) {
  grape_dataset_t* d;
  grape_load_stats_t st = {0};
  cr_assert_eq(grape_dataset_new(&d), 0);
  cr_assert_eq(grape_dataset_add_file(d, SUBSET_DIR "/bmm.csv.gz", NULL, &st, NULL, 0), 0);
  cr_assert_eq(grape_dataset_add_file(d, SUBSET_DIR "/add.csv.gz", NULL, &st, NULL, 0), 0);
  cr_assert_eq(st.used[GRAPE_KC_GEMM], 2193);
  cr_assert_eq(st.used[GRAPE_KC_ELEMENTWISE], 220);
  return d;
}

Test(predict, training_is_deterministic_and_round_trips) {
  grape_dataset_t* d = subset();
  grape_model_t *a, *b, *c;
  cr_assert_eq(grape_model_train(d, &a), 0);
  cr_assert_eq(grape_model_train(d, &b), 0);
  char pa[] = "/tmp/grape_model_a_XXXXXX", pb[] = "/tmp/grape_model_b_XXXXXX";
  close(mkstemp(pa));
  close(mkstemp(pb));
  cr_assert_eq(grape_model_save(a, pa), 0);
  cr_assert_eq(grape_model_save(b, pb), 0);
  size_t na, nb;
  char *ta = read_all(pa, &na), *tb = read_all(pb, &nb);
  cr_expect(na == nb && memcmp(ta, tb, na) == 0, "two fits differ");
  char err[128];
  cr_assert_eq(grape_model_load(pa, &c, err, sizeof(err)), 0, "%s", err);
  /* The fit fits: on its own training rows grape's model beats the roofline. */
  grape_csv_t* csv;
  cr_assert_eq(grape_csv_open(SUBSET_DIR "/bmm.csv.gz", NULL, 1, &csv), 0);
  grape_csv_row_t row;
  double ape[GRAPE_METHOD_COUNT] = {0}, rows = 0;
  while (grape_csv_next(csv, &row) > 0) {
    cr_assert(row.ok);
    for (int me = 0; me < GRAPE_METHOD_COUNT; me++)
      ape[me] += fabs(grape_predict_kernel_ms_with(a, me, row.gpu, &row.desc) - row.latency_ms) /
                 row.latency_ms;
    rows++;
  }
  grape_csv_close(csv);
  cr_expect(ape[GRAPE_METHOD_GRAPE] / rows < 0.2, "grape in-sample MAPE %g",
            ape[GRAPE_METHOD_GRAPE] / rows);
  cr_expect(ape[GRAPE_METHOD_GRAPE] < ape[GRAPE_METHOD_ROOFLINE], "grape %g roofline %g",
            ape[GRAPE_METHOD_GRAPE] / rows, ape[GRAPE_METHOD_ROOFLINE] / rows);
  grape_kernel_desc_t k = gemm(300, 500, 700);
  const grape_gpu_spec_t* g = grape_gpu_find("L4");
  for (int me = 0; me < GRAPE_METHOD_COUNT; me++)
    cr_expect_eq(grape_predict_kernel_ms_with(a, me, g, &k), grape_predict_kernel_ms_with(c, me, g, &k));
  unlink(pa);
  unlink(pb);
  free(ta);
  free(tb);
  grape_model_free(a);
  grape_model_free(b);
  grape_model_free(c);
  grape_dataset_free(d);
}

Test(predict, crossval_reports_each_group) {
  grape_dataset_t* d = subset();
  char* buf = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  cr_assert_eq(grape_model_crossval(d, f), 0);
  fclose(f);
  cr_expect_not_null(strstr(buf, "bmm "), "%s", buf);
  cr_expect_not_null(strstr(buf, "elementwise "), "%s", buf);
  cr_expect_not_null(strstr(buf, "Tesla T4"), "%s", buf);
  free(buf);
  grape_dataset_free(d);
}

/* Model m written as its text file (malloc'd; *len bytes). */
static char* model_text(const grape_model_t* m, size_t* len) {
  extern int grape__model_write(const grape_model_t* m, FILE* f);
  char* text = NULL;
  FILE* f = open_memstream(&text, len);
  cr_assert_not_null(f);
  cr_assert_eq(grape__model_write(m, f), 0);
  fclose(f);
  return text;
}

Test(predict, model_file_version_and_damage_are_refused) {
  grape_model_t* m;
  cr_assert_eq(grape_model_load_default(&m), 0);
  size_t len;
  char* text = model_text(m, &len);
  grape_model_t* o;
  char err[160];
  cr_assert_eq(grape_model_parse(text, len, &o, err, sizeof(err)), 0, "%s", err);
  grape_model_free(o);
  char* v2 = strdup(text);
  v2[strlen("grape-predict-model ")] = '9';
  cr_expect_eq(grape_model_parse(v2, len, &o, err, sizeof(err)), -EPROTO);
  cr_expect_not_null(strstr(err, "version 9"), "%s", err);
  cr_expect_eq(grape_model_parse("hello\n", 6, &o, err, sizeof(err)), -EINVAL);
  /* Cut the file short, then damage a number. */
  cr_expect_eq(grape_model_parse(text, len / 2, &o, err, sizeof(err)), -EINVAL);
  char* bad = strdup(text);
  char* li = strstr(bad, "\nli ");
  cr_assert_not_null(li);
  li[4] = 'x';
  cr_expect_eq(grape_model_parse(bad, len, &o, err, sizeof(err)), -EINVAL);
  cr_expect_not_null(strstr(err, "line 8"), "%s", err);
  free(bad);
  free(v2);
  free(text);
  grape_model_free(m);
}

/* The default model's text with its first line that starts with `key` (the
 * gemm class's: it comes first) replaced by `line`. */
static char* default_model_edited(const char* key, const char* line) {
  grape_model_t* m;
  cr_assert_eq(grape_model_load_default(&m), 0);
  size_t len;
  char* text = model_text(m, &len);
  grape_model_free(m);
  char* at = strstr(text, key);
  cr_assert_not_null(at, "%s", key);
  char* eol = strchr(at + 1, '\n');
  char* edited = malloc(len + strlen(line) + 2);
  size_t head = (size_t)(at - text) + 1;
  memcpy(edited, text, head);
  strcpy(edited + head, line);
  strcat(edited + head, eol);
  free(text);
  return edited;
}

/* grape's linear-time form (grape_lin), when its flag is set, replaces the
 * log-space regression for kernels with op dims. */
Test(predict, linear_time_form_is_read_and_used) {
  /* Give the gemm class a constant 0.5 ms. */
  char* edited = default_model_edited("\ngrape_lin ", "grape_lin 2 0.5 0 0");
  grape_model_t *a, *b;
  char err[160];
  cr_assert_eq(grape_model_parse(edited, strlen(edited), &a, err, sizeof(err)), 0, "%s", err);
  cr_assert_eq(grape_model_load_default(&b), 0);
  const grape_gpu_spec_t* g = grape_gpu_find("T4");
  grape_kernel_desc_t k1 = gemm(300, 500, 700);
  cr_expect_float_eq(grape_predict_kernel_ms_with(a, GRAPE_METHOD_GRAPE, g, &k1), 0.5, 1e-12);
  cr_expect(fabs(grape_predict_kernel_ms_with(b, GRAPE_METHOD_GRAPE, g, &k1) - 0.5) > 1e-3);
  k1.op = GRAPE_OP_UNKNOWN;
  cr_expect(fabs(grape_predict_kernel_ms_with(a, GRAPE_METHOD_GRAPE, g, &k1) - 0.5) > 1e-3,
            "kernels without dims keep the launch-only weights");
  grape_model_free(a);
  grape_model_free(b);
  free(edited);
}

/* grape_range bounds the regression against the roofline model's time; a
 * reversed range is refused. */
Test(predict, regression_range_is_read_and_bounds_the_prediction) {
  char* edited = default_model_edited("\ngrape_range ", "grape_range -0.001 0.001");
  grape_model_t* a;
  char err[160];
  cr_assert_eq(grape_model_parse(edited, strlen(edited), &a, err, sizeof(err)), 0, "%s", err);
  const grape_gpu_spec_t* g = grape_gpu_find("T4");
  grape_kernel_desc_t k1 = gemm(300, 500, 700);
  double roof = grape_predict_kernel_ms_with(a, GRAPE_METHOD_ROOFLINE, g, &k1);
  double tight = grape_predict_kernel_ms_with(a, GRAPE_METHOD_GRAPE, g, &k1);
  cr_expect(fabs(tight / roof - 1) < 0.0011, "grape %g, roofline %g", tight, roof);
  grape_model_free(a);
  free(edited);
  edited = default_model_edited("\ngrape_range ", "grape_range 0.5 -0.5");
  cr_expect_eq(grape_model_parse(edited, strlen(edited), &a, err, sizeof(err)), -EINVAL);
  cr_expect_not_null(strstr(err, "bad grape_range"), "%s", err);
  free(edited);
}

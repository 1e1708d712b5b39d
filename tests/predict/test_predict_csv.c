/* Tests of the timing CSV reader (predict/csv.c) and dataset loading. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "grape/predict.h"

static const char header[] =
    "OPName,Latency,Device,Torch Version,CUDNN Version,Kernel Name,Warps per SM,Blocks per SM,"
    "Grid x,Grid y,Grid z,Block x,Block y,Block z,CUDA Version,Kernels,B,M,N,K\n";
static const char good[] =
    "bmm,0.035,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,0.65,0.325,1,1,13,64,1,1,cu121,"
    ";volta_sgemm_64x64_nn,13,27,15,29\n";

/* Writes text to a temporary file (gzip-compressed when gz) and returns its path. */
static char* tmpfile_with(const char* text, int gz) {
  static char path[64];
  snprintf(path, sizeof(path), "/tmp/grape_csv_XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0);
  if (gz) {
    close(fd);
    gzFile g = gzopen(path, "wb");
    gzwrite(g, text, (unsigned)strlen(text));
    gzclose(g);
  } else {
    cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
  }
  return path;
}

Test(predict, csv_reads_neusight_rows_plain_and_gzip) {
  char text[1024];
  snprintf(text, sizeof(text), "%s%s", header, good);
  for (int gz = 0; gz < 2; gz++) {
    char* p = tmpfile_with(text, gz);
    grape_csv_t* c;
    cr_assert_eq(grape_csv_open(p, NULL, 1, &c), 0);
    grape_csv_row_t r;
    cr_assert_eq(grape_csv_next(c, &r), 1);
    cr_expect(r.ok, "%s", r.why);
    cr_expect_eq(r.line_no, 2);
    cr_expect_float_eq(r.latency_ms, 0.035, 1e-12);
    cr_expect_str_eq(r.gpu->name, "Tesla T4");
    cr_expect_eq(r.desc.op, GRAPE_OP_GEMM);
    cr_expect_eq(r.desc.grid[2], 13);
    cr_expect_eq(r.desc.block[0], 64);
    /* NeuSight's bmm (B,M,N)x(B,N,K) becomes batch, M, N=K, K=N. */
    cr_expect(r.desc.dims[0] == 13 && r.desc.dims[1] == 27 && r.desc.dims[2] == 29 &&
              r.desc.dims[3] == 15);
    cr_expect_eq(strncmp(r.line, good, strlen(good) - 1), 0, "raw line kept");
    cr_expect_eq(grape_csv_next(c, &r), 0);
    grape_csv_close(c);
    unlink(p);
  }
}

Test(predict, csv_bad_rows_are_skipped_and_named) {
  static const struct {
    const char* line;
    const char* why;
  } bad[] = {
      {"bmm,0.03,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,13,64,1,1\n", "missing columns"},
      {"bmm,0.03,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,13,64,1,1,cu121,;,1,2,3,4,5\n",
       "extra columns"},
      {"bmm,fast,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,13,64,1,1,cu121,;,1,2,3,4\n",
       "non-numeric field"},
      {"bmm,0,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,13,64,1,1,cu121,;,1,2,3,4\n",
       "latency not positive"},
      {"bmm,-1,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,13,64,1,1,cu121,;,1,2,3,4\n",
       "latency not positive"},
      {"bmm,0.03,Tesla T9,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,13,64,1,1,cu121,;,1,2,3,4\n",
       "unknown GPU"},
      {"bmm,0.03,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,x,64,1,1,cu121,;,1,2,3,4\n",
       "non-numeric field"},
      {"bmm,nan,Tesla T4,p2.1.0,8902,volta_sgemm_64x64_nn,1,1,1,1,1,64,1,1,cu121,;,1,2,3,4\n",
       "non-numeric field"},
  };
  char text[4096];
  size_t n = (size_t)snprintf(text, sizeof(text), "%s%s", header, good);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    n += (size_t)snprintf(text + n, sizeof(text) - n, "%s", bad[i].line);
  snprintf(text + n, sizeof(text) - n, "%s", good);
  char* p = tmpfile_with(text, 0);
  grape_csv_t* c;
  cr_assert_eq(grape_csv_open(p, NULL, 1, &c), 0);
  grape_csv_row_t r;
  cr_assert_eq(grape_csv_next(c, &r), 1);
  cr_expect(r.ok);
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    cr_assert_eq(grape_csv_next(c, &r), 1);
    cr_expect(!r.ok, "row %zu accepted", i);
    cr_expect_eq(r.line_no, 3 + i);
    cr_expect_str_eq(r.why ? r.why : "(null)", bad[i].why, "row %zu", i);
  }
  cr_assert_eq(grape_csv_next(c, &r), 1);
  cr_expect(r.ok, "a good row after bad ones");
  grape_csv_close(c);

  /* The dataset counts them per class and names the first few. */
  grape_dataset_t* d;
  grape_load_stats_t st = {0};
  char* diag = NULL;
  size_t dlen = 0;
  FILE* f = open_memstream(&diag, &dlen);
  cr_assert_eq(grape_dataset_new(&d), 0);
  cr_assert_eq(grape_dataset_add_file(d, p, NULL, &st, f, 3), 0);
  fclose(f);
  cr_expect_eq(st.used[GRAPE_KC_GEMM], 2);
  cr_expect_eq(st.skipped[GRAPE_KC_GEMM] + st.skipped_unclassified, 8);
  cr_expect_eq(st.skipped_unclassified, 2, "rows of the wrong width have no usable name");
  cr_expect_not_null(strstr(diag, ":3: skipped: missing columns"), "%s", diag);
  cr_expect_not_null(strstr(diag, ":5: skipped: non-numeric field"), "%s", diag);
  cr_expect_null(strstr(diag, ":6:"), "only the first 3 are named: %s", diag);
  free(diag);
  grape_dataset_free(d);
  unlink(p);
}

Test(predict, csv_without_device_needs_a_gpu) {
  char* p = tmpfile_with("kernel,grid_x,block_x,op,dims\n"
                         "ampere_sgemm_128x64_tn,8,128,gemm,1x512x512x512\n", 0);
  grape_csv_t* c;
  cr_expect_eq(grape_csv_open(p, NULL, 0, &c), -EINVAL);
  cr_expect_eq(grape_csv_open(p, "no such gpu", 0, &c), -ENODEV);
  cr_assert_eq(grape_csv_open(p, "h100", 0, &c), 0);
  grape_csv_row_t r;
  cr_assert_eq(grape_csv_next(c, &r), 1);
  cr_expect(r.ok, "%s", r.why);
  cr_expect_str_eq(r.gpu->name, "NVIDIA H100 80GB HBM3");
  cr_expect_eq(r.desc.op, GRAPE_OP_GEMM);
  cr_expect_eq(r.desc.dims[3], 512);
  cr_expect_eq(r.desc.grid[0], 8);
  cr_expect_eq(r.desc.grid[1], 1, "absent grid columns count as 1");
  grape_csv_close(c);
  unlink(p);
  cr_expect_eq(grape_csv_open("/nonexistent.csv", NULL, 0, &c), -ENOENT);
}

/* Two row attributes come from conventions: a Device "GPU (simcu)" is the
 * simulated device standing in for GPU, and a time is the kernel's own
 * (grape's time_ms) or an op's latency through a harness (NeuSight's
 * Latency) unless a timing column says which. */
Test(predict, csv_rows_say_simulated_and_kernel_time) {
  char* p = tmpfile_with("kernel,grid_x,block_x,device,time_ms,timing\n"
                         "k,1,32,NVIDIA H200 (simcu),0.002,\n"
                         "k,1,32,NVIDIA H200,0.002,op\n"
                         "k,1,32,Tesla T4,0.002,kernel\n"
                         "k,1,32,Tesla T4,0.002,both\n", 0);
  grape_csv_t* c;
  cr_assert_eq(grape_csv_open(p, NULL, 1, &c), 0);
  grape_csv_row_t r;
  static const int sim[] = {1, 0, 0}, kt[] = {1, 0, 1};
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(grape_csv_next(c, &r), 1);
    cr_expect(r.ok, "row %d: %s", i, r.why);
    cr_expect_eq(r.simulated, sim[i], "row %d", i);
    cr_expect_eq(r.kernel_time, kt[i], "row %d", i);
  }
  cr_expect_str_eq(r.gpu->name, "Tesla T4");
  cr_assert_eq(grape_csv_next(c, &r), 1);
  cr_expect(!r.ok && strstr(r.why, "timing") != NULL);
  grape_csv_close(c);
  unlink(p);
  /* NeuSight's Latency is an op's time through a harness. */
  char text[1024];
  snprintf(text, sizeof(text), "%s%s", header, good);
  p = tmpfile_with(text, 0);
  cr_assert_eq(grape_csv_open(p, NULL, 1, &c), 0);
  cr_assert_eq(grape_csv_next(c, &r), 1);
  cr_expect(r.ok && r.kernel_time == 0 && r.simulated == 0);
  grape_csv_close(c);
  /* A dataset leaves simulated rows out, counted, unless told otherwise. */
  p = tmpfile_with("kernel,grid_x,block_x,device,time_ms\n"
                   "k,1,32,NVIDIA H200 (simcu),0.002\nk,1,32,NVIDIA H200,0.002\n", 0);
  for (int accept = 0; accept < 2; accept++) {
    grape_dataset_t* d;
    grape_load_stats_t st = {0};
    cr_assert_eq(grape_dataset_new(&d), 0);
    grape_dataset_accept_simulated(d, accept);
    cr_assert_eq(grape_dataset_add_file(d, p, NULL, &st, NULL, 0), 0);
    cr_expect_eq(grape_dataset_size(d), accept ? 2 : 1);
    cr_expect_eq(st.simulated, accept ? 0 : 1);
    grape_dataset_free(d);
  }
  unlink(p);
}

/* The reader says which column a file lacks, with the columns it found. */
Test(predict, csv_header_without_launch_columns_is_refused_with_a_reason) {
  char* p = tmpfile_with("kernel,grid,block,gpu\nk,4x1x1,128,T4\n", 0);
  grape_csv_t* c;
  char why[256];
  cr_expect_eq(grape_csv_open_err(p, NULL, 0, &c, why, sizeof(why)), -EINVAL);
  cr_expect_str_eq(why, "no grid column (Grid x or grid_x; y and z may be absent); columns "
                        "found: kernel, grid, block, gpu");
  unlink(p);
}

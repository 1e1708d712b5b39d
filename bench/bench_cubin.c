/* Benchmark: parse every fatbin in a large host library (default: cuBLASLt,
 * hundreds of MB of kernels) and print images, kernels and the time taken.
 * Not a timed test: run it by hand or with `meson test --benchmark`.
 * Usage: bench_cubin [FILE] [REPEATS] [nv_fatbin]
 * (nv_fatbin: only the .nv_fatbin section, without scanning data sections). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "grape/cubin.h"

static double now(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "/usr/local/cuda/lib64/libcublasLt.so.13";
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  /* "nv_fatbin" as a third argument: only the .nv_fatbin section, no scan. */
  unsigned flags = GRAPE_FATBIN_NO_PAYLOADS;
  if (argc <= 3 || strcmp(argv[3], "nv_fatbin") != 0)
    flags |= GRAPE_FATBIN_SCAN_DATA;
  double best = 1e30, best_cpu = 1e30;
  size_t images = 0, kernels = 0, elf = 0, ptx = 0, lto = 0, bytes = 0;
  for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
    grape_fatbin_t* fb;
    grape_cubin_err_t err;
    double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
    int rc = grape_fatbin_from_file_ex(path, flags, &fb, &err);
    double dt = now(CLOCK_MONOTONIC) - t0, dc = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
    if (rc) {
      fprintf(stderr, "bench_cubin: error: %s\n", err.msg);
      return 1;
    }
    if (dt < best)
      best = dt;
    if (dc < best_cpu)
      best_cpu = dc;
    images = grape_fatbin_count(fb);
    kernels = grape_fatbin_kernel_count(fb);
    elf = ptx = lto = bytes = 0;
    for (size_t i = 0; i < images; i++) {
      const grape_image_t* img = grape_fatbin_image(fb, i);
      *(img->kind == GRAPE_IMAGE_ELF ? &elf : img->kind == GRAPE_IMAGE_PTX ? &ptx : &lto) += 1;
      bytes += img->size;
    }
    grape_fatbin_free(fb);
  }
  printf("%s: %zu images (%zu cubin, %zu ptx, %zu ltoir), %zu kernels, %.1f MB in images, "
         "best of %d: %.3f s wall, %.3f s CPU\n",
         path, images, elf, ptx, lto, kernels, bytes / 1e6, reps, best, best_cpu);
  return 0;
}

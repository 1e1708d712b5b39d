/* Benchmark: parse every fatbin in a large host library (default: cuBLASLt,
 * hundreds of MB of kernels) and print images, kernels and the time taken.
 * Not a timed test: run it by hand or with `meson test --benchmark`.
 * Usage: bench_cubin [FILE] [REPEATS] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "grape/cubin.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "/usr/local/cuda/lib64/libcublasLt.so.13";
  int reps = argc > 2 ? atoi(argv[2]) : 3;
  double best = 1e30;
  size_t images = 0, kernels = 0, elf = 0, ptx = 0, bytes = 0;
  for (int r = 0; r < (reps > 0 ? reps : 1); r++) {
    grape_fatbin_t* fb;
    grape_cubin_err_t err;
    double t0 = now();
    int rc = grape_fatbin_from_file_ex(path, GRAPE_FATBIN_NO_PAYLOADS, &fb, &err);
    double dt = now() - t0;
    if (rc) {
      fprintf(stderr, "bench_cubin: error: %s\n", err.msg);
      return 1;
    }
    if (dt < best)
      best = dt;
    images = grape_fatbin_count(fb);
    kernels = grape_fatbin_kernel_count(fb);
    elf = ptx = bytes = 0;
    for (size_t i = 0; i < images; i++) {
      const grape_image_t* img = grape_fatbin_image(fb, i);
      *(img->kind == GRAPE_IMAGE_ELF ? &elf : &ptx) += 1;
      bytes += img->size;
    }
    grape_fatbin_free(fb);
  }
  printf("%s: %zu images (%zu cubin, %zu ptx), %zu kernels, %.1f MB decompressed, "
         "best of %d: %.3f s\n",
         path, images, elf, ptx, kernels, bytes / 1e6, reps, best);
  return 0;
}

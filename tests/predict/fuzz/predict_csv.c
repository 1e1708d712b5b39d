/* libFuzzer target: the timing CSV reader and the predictions made from its
 * rows. Input bytes become a file (plain, or gzip if they start with its
 * magic) read through grape_csv_open/next; every good row is predicted with
 * all three methods of the default model on its GPU. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "grape/predict.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static grape_model_t* m;
  if (m == NULL && grape_model_load_default(&m) < 0)
    abort();
  int fd = memfd_create("csv", 0);
  if (fd < 0)
    return 0;
  if (write(fd, data, size) != (ssize_t)size) {
    close(fd);
    return 0;
  }
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
  for (int need = 0; need < 2; need++) {
    grape_csv_t* c;
    if (grape_csv_open(path, need ? NULL : "Tesla T4", need, &c) < 0)
      continue;
    grape_csv_row_t r;
    while (grape_csv_next(c, &r) > 0) {
      if (!r.ok)
        continue;
      for (int me = 0; me < GRAPE_METHOD_COUNT; me++) {
        double t = grape_predict_kernel_ms_with(m, me, r.gpu, &r.desc);
        if (!(t > 0) || t != t)
          abort();
      }
    }
    grape_csv_close(c);
  }
  close(fd);
  return 0;
}

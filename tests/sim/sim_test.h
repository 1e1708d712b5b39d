/* sim_test.h: what the sim's newer test programs share: a context made
 * current on the primary context, a kernel from a PTX image, and temporary
 * files. Header-only (static functions), for Criterion tests and plain
 * programs alike; callers check the results with their own assertions.
 *
 * DESIGN: every helper returns what failed instead of asserting, so a plain
 * program can print and exit while a Criterion test asserts with its macro. */
#ifndef GRAPE_SIM_TEST_H
#define GRAPE_SIM_TEST_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* cuInit, then the primary context made current on this thread (*ctx, if
 * given); with a kernel name, also loads ptx and returns that kernel in *f. */
static inline CUresult sim_test_start(const char* ptx, const char* kernel, CUfunction* f,
                                      CUcontext* ctx) {
  CUcontext c;
  CUmodule m;
  CUresult r;
  if ((r = cuInit(0)) != CUDA_SUCCESS || (r = cuDevicePrimaryCtxRetain(&c, 0)) != CUDA_SUCCESS ||
      (r = cuCtxSetCurrent(c)) != CUDA_SUCCESS)
    return r;
  if (ctx != NULL)
    *ctx = c;
  if (kernel == NULL)
    return CUDA_SUCCESS;
  if ((r = cuModuleLoadData(&m, ptx)) != CUDA_SUCCESS)
    return r;
  return cuModuleGetFunction(f, m, kernel);
}

/* Creates a file from the "/tmp/...XXXXXX" template path holding text;
 * returns 0, or -1 (path then names no file). */
static inline int sim_test_temp_file(char* path, const char* text) {
  int fd = mkstemp(path);
  if (fd < 0)
    return -1;
  FILE* f = fdopen(fd, "w");
  if (f == NULL) {
    close(fd);
    unlink(path);
    return -1;
  }
  int ok = fputs(text, f) >= 0;
  ok &= fclose(f) == 0;
  if (!ok)
    unlink(path);
  return ok ? 0 : -1;
}

#endif

/* A fake CUDA for the shim's tests: libcuda.so.1 and libcudart.so.13 stand-ins
 * small enough to check every route by hand. A "kernel" is a fake_fn_t: its
 * handle (CUfunction, host stub, cudaKernel_t alike) points at the struct. */
#ifndef GRAPE_TESTS_FAKE_H
#define GRAPE_TESTS_FAKE_H

#include <stdint.h>

#define FAKE_FN_MAGIC 0xFA4EF00Du

typedef struct fake_fn_s {
  uint32_t magic;
  const char* name;
  int nparams;
  uint32_t offset[8];
  uint32_t size[8];
  uint32_t param_bytes;
  void (*body)(const uint8_t* params);   /* the packed parameter block */
} fake_fn_t;

/* Kernels the fake driver has run (all routes). */
long fake_kernels_executed(void);

#endif

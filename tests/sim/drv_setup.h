/* drv_setup.h: what the driver-API tests of the sim share: a check macro and
 * the setup that makes the primary context current (Criterion runs each test
 * in its own process, so each starts from cuInit). */
#ifndef GRAPE_TESTS_DRV_SETUP_H
#define GRAPE_TESTS_DRV_SETUP_H

#include <criterion/criterion.h>
#include <cuda.h>

#define OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static inline void drv_setup(void) {
  CUcontext c;
  OK(cuInit(0));
  OK(cuDevicePrimaryCtxRetain(&c, 0));
  OK(cuCtxSetCurrent(c));
}

#endif

/* drv_setup.h: what the Criterion tests of the sim's driver API share: a
 * check macro and the setup that makes the primary context current (Criterion
 * runs each test in its own process, so each starts from cuInit). The setup
 * itself is sim_test.h's, which plain programs use too.
 *
 * DESIGN: a thin Criterion layer over sim_test.h, so that the context setup
 * exists once and Criterion stays out of the plain programs. */
#ifndef GRAPE_TESTS_DRV_SETUP_H
#define GRAPE_TESTS_DRV_SETUP_H

#include <criterion/criterion.h>
#include <cuda.h>

#include "sim_test.h"

#define OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static inline void drv_setup(void) {
  OK(sim_test_start(NULL, NULL, NULL, NULL));
}

#endif

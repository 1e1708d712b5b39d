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
#include <dlfcn.h>
#include <semaphore.h>
#include <stdio.h>

#include "sim_test.h"

#define OK(call) cr_assert_eq((call), CUDA_SUCCESS, "%s", #call)

static inline void drv_setup(void) {
  OK(sim_test_start(NULL, NULL, NULL, NULL));
}

/* CUDA 12.8's form of a function 13 versioned (NAME with NAME_v2 after it),
 * as a 12.8 program or runtime reaches it: cuGetProcAddress gives the
 * unversioned export at 12080 and 12090 (*f), its _ptsz twin per thread
 * (*fpt), and NAME_v2 from 13000. */
static inline void drv_form_12_8(const char* name, void** f, void** fpt) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(h);
  char sym[128];
  void* p;
  CUdriverProcAddressQueryResult st;
  OK(cuGetProcAddress_v2(name, f, 12080, 0, &st));
  cr_assert(*f != NULL && *f == dlsym(h, name), "%s at 12080 gave %p", name, *f);
  OK(cuGetProcAddress_v2(name, &p, 12090, 0, &st));
  cr_assert_eq(p, *f);
  OK(cuGetProcAddress_v2(name, fpt, 12080, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st));
  snprintf(sym, sizeof sym, "%s_ptsz", name);
  cr_assert(*fpt != NULL && *fpt == dlsym(h, sym), "%s per thread at 12080 gave %p", name, *fpt);
  OK(cuGetProcAddress_v2(name, &p, 13000, 0, &st));
  snprintf(sym, sizeof sym, "%s_v2", name);
  cr_assert_eq(p, dlsym(h, sym), "%s at 13000", name);
}

/* A gate: host work that holds stream s back until drv_gate_open, so that a
 * test can change what the stream's queued work reads, or look at the stream
 * while its work is pending. One gate at a time: each close is opened before
 * the next. */
static inline sem_t* drv_gate_sem(void) {
  static sem_t gate;
  return &gate;
}
static inline void drv_gate_wait(void* p) {
  (void)p;
  sem_wait(drv_gate_sem());
}
static inline void drv_gate_close(CUstream s) {
  sem_init(drv_gate_sem(), 0, 0);
  OK(cuLaunchHostFunc(s, drv_gate_wait, NULL));
}
static inline void drv_gate_open(void) {
  sem_post(drv_gate_sem());
}

#endif

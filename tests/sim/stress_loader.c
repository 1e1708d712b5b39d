/* stress_loader.c: kernel bodies looked up on several threads while another
 * thread loads and unloads a library. A function's first launch looks for
 * its cost hook in every loaded object (sim/module.c); that walk must not
 * open objects while the loader's list is held, or a loader hook of its
 * own (TSan's dlopen/dlclose interceptors take a lock around the walk they
 * make) waits on it while it waits for that hook: the process hangs. Under
 * TSan the old walk hung within a few hundred rounds; the test's timeout is
 * the failure. A plain program, not Criterion, so it runs under TSan. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "simcu.h"

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_touch(.param .u64 a)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_touch, 8);
SIMCU_KERNEL(k_touch) {
  int* a = SIMCU_ARG(0, int*);
  SIMCU_FOR_THREADS(t) {
    (void)t;
    a[0] = 1;
  }
}

#define THREADS 3
#define ROUNDS 300

static CUcontext ctx;
static volatile int done;
static int failures;
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

static void failed(const char* what, int r) {
  fprintf(stderr, "%s -> %d\n", what, r);
  pthread_mutex_lock(&fail_lock);
  failures++;
  pthread_mutex_unlock(&fail_lock);
}

/* Each round loads the module anew: its function's body is looked up again
 * at its first launch. */
static void* looker(void* arg) {
  (void)arg;
  CUresult r = cuCtxSetCurrent(ctx);
  CUdeviceptr a;
  if (r == CUDA_SUCCESS)
    r = cuMemAlloc(&a, sizeof(int));
  for (int i = 0; i < ROUNDS && r == CUDA_SUCCESS; i++) {
    CUmodule m;
    CUfunction f;
    void* args[] = {&a};
    r = cuModuleLoadData(&m, ptx);
    if (r == CUDA_SUCCESS)
      r = cuModuleGetFunction(&f, m, "k_touch");
    if (r == CUDA_SUCCESS)
      r = cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
    if (r == CUDA_SUCCESS)
      r = cuCtxSynchronize();
    if (r == CUDA_SUCCESS)
      r = cuModuleUnload(m);
  }
  if (r != CUDA_SUCCESS)
    failed("a round of load, launch and unload", r);
  return NULL;
}

/* Loads and unloads a library the process does not hold otherwise. */
static void* loader(void* arg) {
  (void)arg;
  while (!__atomic_load_n(&done, __ATOMIC_ACQUIRE)) {
    void* h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      failed("dlopen libm.so.6", 0);
      return NULL;
    }
    dlclose(h);
    usleep(100);   /* (a sanitizer's dlclose walks every object under its lock: without a
                    * pause the lookers would wait on that lock most of the time) */
  }
  return NULL;
}

int main(void) {
  if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
    return 1;
  pthread_t l, t[THREADS];
  pthread_create(&l, NULL, loader, NULL);
  for (int i = 0; i < THREADS; i++)
    pthread_create(&t[i], NULL, looker, NULL);
  for (int i = 0; i < THREADS; i++)
    pthread_join(t[i], NULL);
  __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
  pthread_join(l, NULL);
  printf("stress_loader: %d threads x %d rounds, %d failures\n", THREADS, ROUNDS, failures);
  return failures != 0;
}

/* A CUDA program that knows nothing of grape and launches through every route
 * the shim must see. Linked to the fake driver and runtime (tests/interpose/fake);
 * run under LD_PRELOAD=libgrape.so by test_routes.py, which compares the exit
 * report with what this program says it did.
 *
 * usage: routes MODE [N]
 *   all        every route, N launches each; prints "route <name> <count>" lines
 *   structure  6 regions of 2 or 3 kernels: 2 distinct paths, 3 sightings each
 *   params     kernels of several layouts; prints "params <name> <hex>" per launch
 *   threads    8 threads x 4 streams x N launches
 *   fork       launches in the parent, in a forked child, then in the parent
 *   reuse      N rounds of load / launch / unload, the function handle value
 *              coming back for another kernel with another layout; prints
 *              "params <name> <hex>" per launch
 *   lasterror  first launches of kernels, each followed by cudaGetLastError,
 *              which must stay cudaSuccess; prints "lasterror ok"
 *   capture    a capture on one stream, a failing end on another, launches on
 *              the capturing stream; prints "captured <n>"
 * Always ends with "kernels <n>": the fake driver's count of kernels run. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake/fake.h"

cudaError_t __cudaGetKernel(cudaKernel_t* k, const void* hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s);
cudaError_t cudaLaunchKernel_ptsz(const void* f, dim3 g, dim3 b, void** a, size_t shm, cudaStream_t s);

static long sink;   /* kernels run on many threads: atomic */
static void body_abc(const uint8_t* p) {
  double x;
  memcpy(&x, p + 16, 8);
  __atomic_fetch_add(&sink, (long)x, __ATOMIC_RELAXED);
}

/* k_abc(float* a, int n, double x): a hole at 12..16. */
static fake_fn_t k_abc = {FAKE_FN_MAGIC, "_Z5k_abcPfid", 3, {0, 8, 16}, {8, 4, 8}, 24, body_abc};
/* k_small(char c, short s, int i) */
static fake_fn_t k_small = {FAKE_FN_MAGIC, "_Z7k_smallcsi", 3, {0, 2, 4}, {1, 2, 4}, 8, NULL};
/* k_struct(S16 s, float* p): a 16-byte struct by value */
static fake_fn_t k_struct = {FAKE_FN_MAGIC, "_Z8k_struct3S16Pf", 2, {0, 16}, {16, 8}, 24, NULL};
/* k_none() */
static fake_fn_t k_none = {FAKE_FN_MAGIC, "_Z6k_nonev", 0, {0}, {0}, 0, NULL};

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);

static float* dev;
static int n_arg = 7;
static double x_arg = 2.5;
static void* abc_args[3] = {&dev, &n_arg, &x_arg};

static void check(int ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "routes: %s failed\n", what);
    exit(1);
  }
}

static void via_driver_ptr(launch_fn l, CUstream s) {
  check(l((CUfunction)&k_abc, 1, 1, 1, 32, 1, 1, 0, s, abc_args, NULL) == CUDA_SUCCESS, "launch");
}

static void mode_all(int n) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  cudaKernel_t k;
  check(__cudaGetKernel(&k, &k_abc) == cudaSuccess, "__cudaGetKernel");
  for (int i = 0; i < n; i++) {
    check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "cudaLaunchKernel");
    check(__cudaLaunchKernel(k, g, b, abc_args, 0, 0) == cudaSuccess, "__cudaLaunchKernel");
    check(__cudaLaunchKernel_ptsz(k, g, b, abc_args, 0, 0) == cudaSuccess, "__cudaLaunchKernel_ptsz");
  }
  printf("route runtime %d\n", 3 * n);
  for (int i = 0; i < n; i++)
    via_driver_ptr(cuLaunchKernel, 0);
  printf("route driver %d\n", n);
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  check(h != NULL, "dlopen");
  launch_fn l = (launch_fn)dlsym(h, "cuLaunchKernel");
  check(l != NULL, "dlsym");
  for (int i = 0; i < n; i++)
    via_driver_ptr(l, 0);
  printf("route dlsym %d\n", n);
  typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);
  gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  check(gpa != NULL, "dlsym cuGetProcAddress_v2");
  launch_fn lg = NULL, lg_ptsz = NULL;
  check(gpa("cuLaunchKernel", (void**)&lg, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL) == CUDA_SUCCESS, "gpa");
  check(cuGetProcAddress_v2("cuLaunchKernel", (void**)&lg_ptsz, 12000,
                            CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, NULL) == CUDA_SUCCESS, "gpa ptsz");
  check(lg != lg_ptsz, "distinct per-thread wrapper");
  for (int i = 0; i < n; i++) {
    via_driver_ptr(lg, 0);
    via_driver_ptr(lg_ptsz, 0);
  }
  /* cuGetProcAddress("cuGetProcAddress") must keep later lookups visible. */
  gpa_fn gpa2 = NULL;
  check(gpa("cuGetProcAddress", (void**)&gpa2, 12000, 0, NULL) == CUDA_SUCCESS, "gpa self");
  launch_fn lg2 = NULL;
  check(gpa2("cuLaunchKernel", (void**)&lg2, 12000, 0, NULL) == CUDA_SUCCESS, "gpa via self");
  for (int i = 0; i < n; i++)
    via_driver_ptr(lg2, 0);
  printf("route getprocaddress %d\n", 3 * n);
  typedef long (*count_fn)(void);
  count_fn ptsz_count = (count_fn)dlsym(h, "fake_ptsz_launches");
  printf("ptsz_launches %ld\n", ptsz_count ? ptsz_count() : -1L);
  launch_fn le = NULL, lev = NULL;
  check(cudaGetDriverEntryPoint("cuLaunchKernel", (void**)&le, cudaEnableDefault, NULL) == cudaSuccess, "ep");
  check(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void**)&lev, 12000, cudaEnableDefault, NULL) ==
            cudaSuccess, "ep by version");
  for (int i = 0; i < n; i++) {
    via_driver_ptr(le, 0);
    via_driver_ptr(lev, 0);
  }
  printf("route entrypoint %d\n", 2 * n);
  check(cudaDeviceSynchronize() == cudaSuccess, "sync");
}

static void mode_structure(void) {
  dim3 g = {2, 1, 1}, b = {64, 1, 1};
  void* small_args[3];
  char c = 1;
  short s = 2;
  int i32 = 3;
  small_args[0] = &c;
  small_args[1] = &s;
  small_args[2] = &i32;
  for (int it = 0; it < 6; it++) {
    n_arg = it;   /* values change, the path does not */
    check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "launch");
    check(cudaLaunchKernel(&k_small, g, b, small_args, 0, 0) == cudaSuccess, "launch");
    if (it % 2)
      check(cudaLaunchKernel(&k_none, g, b, NULL, 0, 0) == cudaSuccess, "launch");
    check(cudaDeviceSynchronize() == cudaSuccess, "sync");
  }
}

static void print_hex(const char* name, const void* p, size_t n) {
  printf("params %s ", name);
  for (size_t i = 0; i < n; i++)
    printf("%02x", ((const uint8_t*)p)[i]);
  printf("\n");
}

static void mode_params(void) {
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  uint8_t blk[24];
  memset(blk, 0, sizeof(blk));
  memcpy(blk, &dev, 8);
  memcpy(blk + 8, &n_arg, 4);
  memcpy(blk + 16, &x_arg, 8);
  check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "abc");
  print_hex("_Z5k_abcPfid", blk, 24);

  char c = -5;
  short s = 0x1234;
  int i32 = -77;
  void* small_args[3] = {&c, &s, &i32};
  uint8_t sb[8] = {0};
  memcpy(sb, &c, 1);
  memcpy(sb + 2, &s, 2);
  memcpy(sb + 4, &i32, 4);
  check(cuLaunchKernel((CUfunction)&k_small, 1, 1, 1, 1, 1, 1, 0, 0, small_args, NULL) == CUDA_SUCCESS, "small");
  print_hex("_Z7k_smallcsi", sb, 8);

  struct {
    uint32_t w[4];
  } st = {{0xdeadbeef, 1, 2, 0xcafef00d}};
  float* p = dev + 3;
  void* struct_args[2] = {&st, &p};
  uint8_t stb[24];
  memcpy(stb, &st, 16);
  memcpy(stb + 16, &p, 8);
  check(cudaLaunchKernel(&k_struct, g, b, struct_args, 0, 0) == cudaSuccess, "struct");
  print_hex("_Z8k_struct3S16Pf", stb, 24);

  /* The 'extra' form: one packed buffer. */
  size_t size = 24;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, blk, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  check(cuLaunchKernel((CUfunction)&k_abc, 1, 1, 1, 1, 1, 1, 0, 0, NULL, extra) == CUDA_SUCCESS, "extra");
  print_hex("_Z5k_abcPfid", blk, 24);

  /* cuLaunchKernelEx with attributes: parameters as usual. */
  CUlaunchAttribute attr = {.id = CU_LAUNCH_ATTRIBUTE_PRIORITY, .value.priority = 1};
  CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1,
                        .blockDimY = 1, .blockDimZ = 1, .attrs = &attr, .numAttrs = 1};
  check(cuLaunchKernelEx(&cfg, (CUfunction)&k_abc, abc_args, NULL) == CUDA_SUCCESS, "ex");
  print_hex("_Z5k_abcPfid", blk, 24);
  check(cudaDeviceSynchronize() == cudaSuccess, "sync");
}

static int per_thread;
static void* thread_main(void* arg) {
  long t = (long)arg;
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  for (int i = 0; i < per_thread; i++) {
    /* 4 streams per thread; handles are just distinct pointers to the fake. */
    cudaStream_t s = (cudaStream_t)(uintptr_t)(0x1000 + 16 * (t * 4 + i % 4));
    check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, s) == cudaSuccess, "thread launch");
    if (i % 3 == 0)
      check(cuLaunchKernel((CUfunction)&k_small, 1, 1, 1, 1, 1, 1, 0, (CUstream)s,
                           (void*[]){&(char){1}, &(short){2}, &(int){3}}, NULL) == CUDA_SUCCESS,
            "thread driver launch");
    if (i % 16 == 15)
      check(cudaStreamSynchronize(s) == cudaSuccess, "stream sync");
  }
  return NULL;
}

static void mode_threads(int n) {
  per_thread = n;
  pthread_t th[8];
  for (long t = 0; t < 8; t++)
    check(pthread_create(&th[t], NULL, thread_main, (void*)t) == 0, "pthread_create");
  for (int t = 0; t < 8; t++)
    pthread_join(th[t], NULL);
  check(cudaDeviceSynchronize() == cudaSuccess, "sync");
}

static void mode_fork(int n) {
  dim3 g = {1, 1, 1}, b = {32, 1, 1};
  for (int i = 0; i < n; i++)
    check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "parent launch");
  fflush(stdout);
  pid_t pid = fork();
  check(pid >= 0, "fork");
  if (pid == 0) {
    for (int i = 0; i < 3; i++)
      check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "child launch");
    printf("child kernels %ld\n", fake_kernels_executed());
    exit(0);
  }
  int st;
  waitpid(pid, &st, 0);
  check(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child");
  for (int i = 0; i < n; i++)
    check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "parent launch");
}

/* Two kernels of different layouts that the fake driver loads into one
 * function slot, so the second gets the first's CUfunction value. */
static const fake_fn_t mod_a = {FAKE_FN_MAGIC, "_Z3modPfid", 3, {0, 8, 16}, {8, 4, 8}, 24, NULL};
static const fake_fn_t mod_b = {FAKE_FN_MAGIC, "_Z3modc", 1, {0}, {1}, 1, NULL};

static void mode_reuse(int n) {
  CUfunction first = NULL;
  for (int i = 0; i < 2 * n; i++) {
    const fake_fn_t* img = i % 2 ? &mod_b : &mod_a;
    CUmodule m;
    CUfunction f;
    check(cuModuleLoadData(&m, img) == CUDA_SUCCESS, "load");
    check(cuModuleGetFunction(&f, m, img->name) == CUDA_SUCCESS, "get function");
    if (first == NULL)
      first = f;
    check(f == first, "handle reused");
    /* Exactly as many argument pointers as the kernel has, on the heap, so that
     * reading one more (the old layout) is caught by ASan. */
    void** args = malloc((size_t)img->nparams * sizeof(void*));
    uint8_t blk[24] = {0};
    char c = (char)(i + 1);
    if (img->nparams == 1) {
      args[0] = &c;
      blk[0] = (uint8_t)c;
    } else {
      args[0] = &dev;
      args[1] = &n_arg;
      args[2] = &x_arg;
      memcpy(blk, &dev, 8);
      memcpy(blk + 8, &n_arg, 4);
      memcpy(blk + 16, &x_arg, 8);
    }
    check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, 0, args, NULL) == CUDA_SUCCESS, "launch");
    print_hex(img->name, blk, img->param_bytes);
    free(args);
    check(cuModuleUnload(m) == CUDA_SUCCESS, "unload");
  }
}

static void mode_lasterror(void) {
  dim3 g = {1, 1, 1}, b = {1, 1, 1};
  char c = 1;
  short s = 2;
  int i32 = 3;
  void* small_args[3] = {&c, &s, &i32};
  check(cudaLaunchKernel(&k_abc, g, b, abc_args, 0, 0) == cudaSuccess, "launch abc");
  check(cudaGetLastError() == cudaSuccess, "last error after the first launch of k_abc");
  check(cudaLaunchKernel(&k_small, g, b, small_args, 0, 0) == cudaSuccess, "launch small");
  check(cudaPeekAtLastError() == cudaSuccess, "last error after the first launch of k_small");
  check(cudaLaunchKernel(&k_none, g, b, NULL, 0, 0) == cudaSuccess, "launch none");
  check(cudaGetLastError() == cudaSuccess, "last error after the first launch of k_none");
  printf("lasterror ok\n");
}

static void mode_capture(void) {
  CUstream s1 = (CUstream)(uintptr_t)0x5100, s2 = (CUstream)(uintptr_t)0x5200;
  CUgraph g;
  check(cuStreamBeginCapture_v2(s1, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS, "begin");
  check(cuStreamEndCapture(s2, &g) != CUDA_SUCCESS, "end of a stream that is not capturing fails");
  for (int i = 0; i < 3; i++)
    via_driver_ptr(cuLaunchKernel, s1);
  check(cuStreamEndCapture(s1, &g) == CUDA_SUCCESS, "end");
  via_driver_ptr(cuLaunchKernel, s1);
  printf("captured 3\n");
}

int fake_ctor_ran(void);   /* fake/ctor_lib.c: 1 when its constructor launched */

int main(int argc, char** argv) {
  if (getenv("ROUTES_CTOR") != NULL && !fake_ctor_ran())
    return 3;
  if (argc < 2) {
    fprintf(stderr, "usage: routes all|structure|params|threads|fork|reuse|lasterror|capture [N]\n");
    return 2;
  }
  int n = argc > 2 ? atoi(argv[2]) : 5;
  check(cudaMalloc((void**)&dev, 1024) == cudaSuccess, "cudaMalloc");
  if (strcmp(argv[1], "all") == 0)
    mode_all(n);
  else if (strcmp(argv[1], "structure") == 0)
    mode_structure();
  else if (strcmp(argv[1], "params") == 0)
    mode_params();
  else if (strcmp(argv[1], "threads") == 0)
    mode_threads(n);
  else if (strcmp(argv[1], "fork") == 0)
    mode_fork(n);
  else if (strcmp(argv[1], "reuse") == 0)
    mode_reuse(n);
  else if (strcmp(argv[1], "lasterror") == 0)
    mode_lasterror();
  else if (strcmp(argv[1], "capture") == 0)
    mode_capture();
  else
    return 2;
  check(cudaFree(dev) == cudaSuccess, "cudaFree");
  printf("kernels %ld\n", fake_kernels_executed());
  return 0;
}

// A CUDA program that knows nothing of grape, run on the simulated device (sim/)
// under LD_PRELOAD=libgrape.so by test_sim.py. It launches through every route
// the shim must see and prints what it did; the kernels of tests/cubin give the
// parameter layouts whose capture is checked.
//
// usage: sim_routes all N | params | checksum
#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cubin/kernels.cu"
#include "simcu.h"

__global__ void scale_add(float* a, int n, float v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    a[i] = a[i] * 0.5f + v;
}

// CPU bodies for the sim (a real GPU never looks at these).
extern "C" {
SIMCU_KERNEL(_Z9scale_addPfif) {
  float* a = SIMCU_ARG(0, float*);
  int n = SIMCU_ARG(1, int);
  float v = SIMCU_ARG(2, float);
  SIMCU_FOR_THREADS(t) {
    unsigned i = SIMCU_GLOBAL_X(t);
    if ((int)i < n)
      a[i] = a[i] * 0.5f + v;
  }
}
SIMCU_KERNEL(k_ptrs) {}
SIMCU_KERNEL(_Z9k_scalarsidcscxPi) {}
SIMCU_KERNEL(_Z5k_vec6float4cS_Pf) {}
SIMCU_KERNEL(_Z8k_struct5pad_scS_Pi) {}
SIMCU_KERNEL(_Z6k_tmplIdLi4EEvPT_S0_s) {}
SIMCU_KERNEL(_Z6k_tmplIcLi1EEvPT_S0_s) {}
SIMCU_KERNEL(_Z5k_big5big_sPi) {}
SIMCU_KERNEL(_Z6k_smemPf) {}
SIMCU_KERNEL(k_noparams) {}
}

#define CHECK(x)                                                       \
  do {                                                                 \
    if ((x) != 0) {                                                    \
      fprintf(stderr, "sim_routes: %s failed at line %d\n", #x, __LINE__); \
      exit(1);                                                         \
    }                                                                  \
  } while (0)

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void**, void**);
typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

static float* dev;
static int n_el = 256;

static void launch_ptr(launch_fn l, CUfunction f, float v) {
  void* args[3] = {&dev, &n_el, &v};
  CHECK(l(f, 2, 1, 1, 128, 1, 1, 0, 0, args, NULL));
}

static void mode_all(int n) {
  for (int i = 0; i < n; i++)
    scale_add<<<2, 128>>>(dev, n_el, 1.0f);
  for (int i = 0; i < n; i++) {
    float v = 2.0f;
    void* args[3] = {&dev, &n_el, &v};
    CHECK(cudaLaunchKernel((const void*)scale_add, dim3(2), dim3(128), args, 0, 0));
  }
  printf("route runtime %d\n", 2 * n);
  cudaKernel_t k;
  CHECK(__cudaGetKernel(&k, (const void*)scale_add));   // what <<<>>> uses; the sim has no cudaGetKernel yet
  CUfunction f = (CUfunction)k;   // a CUkernel may be passed where a CUfunction is
  for (int i = 0; i < n; i++)
    launch_ptr(cuLaunchKernel, f, 3.0f);
  printf("route driver %d\n", n);
  void* h = dlopen("libcuda.so.1", RTLD_NOW);
  launch_fn ld = (launch_fn)dlsym(h, "cuLaunchKernel");
  CHECK(ld == NULL);
  for (int i = 0; i < n; i++)
    launch_ptr(ld, f, 4.0f);
  printf("route dlsym %d\n", n);
  launch_fn lg = NULL;
  CHECK(cuGetProcAddress("cuLaunchKernel", (void**)&lg, 12000, CU_GET_PROC_ADDRESS_DEFAULT, NULL));
  for (int i = 0; i < n; i++)
    launch_ptr(lg, f, 5.0f);
  printf("route getprocaddress %d\n", n);
  launch_fn le = NULL;
  enum cudaDriverEntryPointQueryResult q;
  CHECK(cudaGetDriverEntryPointByVersion("cuLaunchKernel", (void**)&le, 12000, cudaEnableDefault, &q));
  for (int i = 0; i < n; i++)
    launch_ptr(le, f, 6.0f);
  printf("route entrypoint %d\n", n);
  CHECK(cudaDeviceSynchronize());
}

static void hex(const char* name, const void* p, size_t n) {
  printf("params %s ", name);
  for (size_t i = 0; i < n && i < 96; i++)
    printf("%02x", ((const unsigned char*)p)[i]);
  printf("\n");
}

// Host mirrors of the kernels' parameter lists (natural C alignment = CUDA's).
static void mode_params() {
  int* out = (int*)dev;
  {
    struct { float* a; const int* b; double* c; } m;
    memset(&m, 0, sizeof(m));
    m.a = dev + 1; m.b = out + 2; m.c = (double*)dev + 3;
    k_ptrs<<<1, 1>>>(m.a, m.b, m.c);
    hex("k_ptrs", &m, sizeof(m));
  }
  {
    struct { int a; double b; char c; short d; char e; long long f; int* out; } m;
    memset(&m, 0, sizeof(m));
    m.a = -7; m.b = 1.25; m.c = 'x'; m.d = -2; m.e = 9; m.f = 0x1122334455667788LL; m.out = out;
    k_scalars<<<1, 1>>>(m.a, m.b, m.c, m.d, m.e, m.f, m.out);
    hex("_Z9k_scalarsidcscxPi", &m, sizeof(m));
  }
  {
    struct { float4 v; char c; float4 w; float* out; } m;
    memset(&m, 0, sizeof(m));
    m.v = make_float4(1, 2, 3, 4); m.c = 5; m.w = make_float4(6, 7, 8, 9); m.out = dev;
    k_vec<<<1, 1>>>(m.v, m.c, m.w, m.out);
    hex("_Z5k_vec6float4cS_Pf", &m, sizeof(m));
  }
  {
    struct { pad_s p; char c; pad_s q; int* out; } m;
    memset(&m, 0, sizeof(m));
    m.p.c = 1; m.p.d = 2.5; m.p.s = 3; m.c = 4; m.q.c = 5; m.q.d = -6.5; m.q.s = 7; m.out = out;
    k_struct<<<1, 1>>>(m.p, m.c, m.q, m.out);
    hex("_Z8k_struct5pad_scS_Pi", &m, offsetof(__typeof__(m), out) + sizeof(int*));
  }
  {
    struct { double* out; double v; short s; } m;
    memset(&m, 0, sizeof(m));
    m.out = (double*)dev; m.v = 3.75; m.s = 12;
    k_tmpl<double, 4><<<1, 1>>>(m.out, m.v, m.s);
    hex("_Z6k_tmplIdLi4EEvPT_S0_s", &m, offsetof(__typeof__(m), s) + sizeof(short));
  }
  {
    struct { char* out; char v; short s; } m;
    memset(&m, 0, sizeof(m));
    m.out = (char*)dev; m.v = 'q'; m.s = -300;
    k_tmpl<char, 1><<<1, 1>>>(m.out, m.v, m.s);
    hex("_Z6k_tmplIcLi1EEvPT_S0_s", &m, offsetof(__typeof__(m), s) + sizeof(short));
  }
  {
    static struct { big_s b; int* out; } m;
    memset(&m, 0, sizeof(m));
    for (int i = 0; i < BIG_BYTES; i++)
      m.b.bytes[i] = (char)(i * 7);
    m.b.tail = 99; m.out = out;
    k_big<<<1, 1>>>(m.b, m.out);
    hex("_Z5k_big5big_sPi", &m, sizeof(m));
  }
  {
    float* a = dev + 8;
    k_smem<<<1, 1>>>(a);
    hex("_Z6k_smemPf", &a, sizeof(a));
  }
  k_noparams<<<1, 1>>>();
  hex("k_noparams", NULL, 0);
  CHECK(cudaDeviceSynchronize());
}

static void mode_checksum() {
  cudaStream_t s[2];
  CHECK(cudaStreamCreate(&s[0]));
  CHECK(cudaStreamCreate(&s[1]));
  for (int it = 0; it < 20; it++) {
    scale_add<<<2, 128, 0, s[it % 2]>>>(dev, n_el, (float)it * 0.25f);
    if (it % 5 == 4)
      CHECK(cudaStreamSynchronize(s[it % 2]));
    CHECK(cudaMemsetAsync(dev + 255, 0, sizeof(float), s[it % 2]));
    CHECK(cudaStreamSynchronize(s[it % 2]));
  }
  float host[256];
  CHECK(cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost));
  unsigned sum = 0;
  for (int i = 0; i < 256; i++) {
    unsigned u;
    memcpy(&u, &host[i], 4);
    sum = sum * 31 + u;
  }
  printf("checksum %08x\n", sum);
}

int main(int argc, char** argv) {
  if (argc < 2)
    return 2;
  CHECK(cudaMalloc((void**)&dev, 64 * 1024));
  CHECK(cudaMemset(dev, 0, 64 * 1024));
  if (strcmp(argv[1], "all") == 0)
    mode_all(argc > 2 ? atoi(argv[2]) : 5);
  else if (strcmp(argv[1], "params") == 0)
    mode_params();
  else if (strcmp(argv[1], "checksum") == 0)
    mode_checksum();
  else
    return 2;
  CHECK(cudaFree(dev));
  return 0;
}

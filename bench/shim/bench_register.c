/* What a framework's import costs under the shim: N kernels registered through
 * the runtime's registration entry points, as the host code nvcc generates for
 * each translation unit does from a library's constructors, and no launch.
 * At exit the fatbins are unregistered, as the atexit handler nvcc's host code
 * installs does, and the process's peak RSS is printed. Under callgrind (run with
 * --instr-atstart=no) two phases are counted and dumped, "registration" and
 * "unregistration" (CALLGRIND_DUMP_STATS_AT); the rest of the process is not.
 *
 * usage: bench_register N [kernels_per_fatbin]
 *   N                   kernels to register, 1..65536 (a PyTorch import registers
 *                       24,133 at import)
 *   kernels_per_fatbin  kernels per __cudaRegisterFatBinary (default: all in one)
 * Output, at exit: "registered N kernels in F fatbins; peak_rss_kib K".
 *
 * DESIGN: the names are long mangled C++ names of the three shapes that make
 * up most of PyTorch's kernels (vectorized elementwise with a functor, reduce
 * with a lambda, elementwise with nested lambdas), each with the kernel's
 * number embedded (a template argument or a lambda's discriminator) so that
 * every name is distinct and still demangles. They are written into one block
 * before the measured loop, as they lie in a library's read-only data: the
 * runtime and the shim may keep pointers to them. The host stubs are distinct
 * addresses inside a static array (never called: nothing is launched). The
 * fatbin is a valid container with no entries: neither the runtime nor the
 * shim reads a fatbin at registration (both load and parse on first use), so
 * the contents do not change what is measured. Runs against any runtime that
 * exports the registration entry points (the sim's libcudart.so.13 here); no
 * nvcc needed.
 *
 * The peak is the high-water mark of this process image (VmHWM), read after
 * the unregistration: everything but library destructors. Not ru_maxrss: that
 * also counts the parent's pages before exec (a Python harness's 15 MB). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else
#define CALLGRIND_START_INSTRUMENTATION
#define CALLGRIND_STOP_INSTRUMENTATION
#endif

/* nvcc's registration plumbing (declared by crt/host_runtime.h, which is C++).
 * The trailing pointers are uint3* and dim3*; the runtime accepts NULL. */
void** __cudaRegisterFatBinary(void* wrapper);
void __cudaRegisterFatBinaryEnd(void** handle);
void __cudaUnregisterFatBinary(void** handle);
void __cudaRegisterFunction(void** handle, const char* hostFun, char* deviceFun,
                            const char* deviceName, int thread_limit, void* tid, void* bid,
                            void* bDim, void* gDim, int* wSize);

#define MAX_KERNELS 65536   /* the shim's function table holds 65,536 handles */

/* The kernel's number goes where %d is. */
static const char* const shapes[] = {
  "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_13BinaryFunctorIfffNS0_10MulFunctorIfEELi"
  "%dEEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_",
  "_ZN2at6native13reduce_kernelILi512ELi1ENS0_8ReduceOpIfNS0_14func_wrapper_tIfZNS0_15sum_kernel_"
  "implIfffEEvRNS_14TensorIteratorEEUlffE_EEjfLi%dEEEEEvT1_",
  "_ZN2at6native29vectorized_elementwise_kernelILi4EZZZNS0_23direct_copy_kernel_cudaERNS_18Tensor"
  "IteratorBaseEENKUlvE1_clEvENKUlvE5_clEvEUlbE%d_NS_6detail5ArrayIPcLi2EEEEEviT0_T1_",
};
#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))

static char stubs[MAX_KERNELS];   /* stub i is &stubs[i] */

/* __fatBinC_Wrapper_t as nvcc emits it, around an empty fatbin container
 * (magic 0xBA55ED50, version 1, 16-byte header, no entries). */
typedef struct wrapper_s {
  int magic, version;
  const void* data;
  void* filename;
} wrapper_t;

/* Little-endian: magic, then version 1 and header size 16 (u16 each), then
 * the size of the entries (u64). */
static const uint64_t empty_fatbin[2] = {UINT64_C(0x0010000100000000) | 0xBA55ED50u, 0};

static void*** handles;
static long nhandles, nkernels;   /* registered so far */

/* VmHWM of /proc/self/status in KiB, -1 when unknown. */
static long peak_rss_kib(void) {
  FILE* f = fopen("/proc/self/status", "r");
  char line[256];
  long kib = -1;
  if (f == NULL)
    return -1;
  while (fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

/* nvcc's host code unregisters each fatbin at exit (in reverse order of
 * registration, being atexit handlers). */
static void unregister_all(void) {
  CALLGRIND_START_INSTRUMENTATION;
  for (long f = nhandles - 1; f >= 0; f--)
    __cudaUnregisterFatBinary(handles[f]);
  CALLGRIND_DUMP_STATS_AT("unregistration");
  CALLGRIND_STOP_INSTRUMENTATION;
  long kib = peak_rss_kib();
  if (kib < 0)
    fprintf(stderr, "bench_register: no VmHWM in /proc/self/status\n");
  printf("registered %ld kernels in %ld fatbins; peak_rss_kib %ld\n", nkernels, nhandles, kib);
}

static int parse_count(const char* s, long max, long* out) {
  char* end;
  long v = strtol(s, &end, 10);
  if (*s == '\0' || *end != '\0' || v < 1 || v > max)
    return -1;
  *out = v;
  return 0;
}

int main(int argc, char** argv) {
  long n, per;
  if (argc < 2 || argc > 3 || parse_count(argv[1], MAX_KERNELS, &n) != 0) {
    fprintf(stderr, "usage: bench_register N [kernels_per_fatbin]  (N in 1..%d)\n", MAX_KERNELS);
    return 2;
  }
  per = n;
  if (argc == 3 && parse_count(argv[2], n, &per) != 0) {
    fprintf(stderr, "bench_register: kernels_per_fatbin must be in 1..%ld\n", n);
    return 2;
  }
  long nfat = (n + per - 1) / per;

  /* The names, in one block (a library's .rodata), and the wrappers. */
  size_t cap = 0;
  for (size_t s = 0; s < NSHAPES; s++)
    if (strlen(shapes[s]) > cap)
      cap = strlen(shapes[s]);
  cap += 16;   /* the number and the NUL */
  char* names = malloc((size_t)n * cap);
  char** name = malloc((size_t)n * sizeof(*name));
  wrapper_t* wrappers = calloc((size_t)nfat, sizeof(*wrappers));
  handles = calloc((size_t)nfat, sizeof(*handles));
  if (names == NULL || name == NULL || wrappers == NULL || handles == NULL) {
    fprintf(stderr, "bench_register: out of memory\n");
    return 1;
  }
  char* p = names;
  for (long i = 0; i < n; i++) {
    name[i] = p;
    p += snprintf(p, cap, shapes[i % NSHAPES], (int)i) + 1;
  }
  for (long f = 0; f < nfat; f++)
    wrappers[f] = (wrapper_t){0x466243B1, 1, empty_fatbin, NULL};
  if (atexit(unregister_all) != 0) {
    fprintf(stderr, "bench_register: atexit failed\n");
    return 1;
  }

  CALLGRIND_START_INSTRUMENTATION;
  for (long f = 0; f < nfat; f++) {
    void** h = __cudaRegisterFatBinary(&wrappers[f]);
    if (h == NULL) {
      fprintf(stderr, "bench_register: __cudaRegisterFatBinary returned NULL\n");
      return 1;
    }
    handles[nhandles++] = h;
    long end = (f + 1) * per < n ? (f + 1) * per : n;
    for (long i = f * per; i < end; i++)
      __cudaRegisterFunction(h, &stubs[i], name[i], name[i], -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);
    nkernels = end;
  }
  CALLGRIND_DUMP_STATS_AT("registration");
  CALLGRIND_STOP_INSTRUMENTATION;
  /* The handles stay registered until exit, as a library's do. */
  return 0;
}

/* The sim's cuGetProcAddress hands back the sim's own functions even when an
 * earlier object in the global scope (here: this program, as libgrape.so is
 * when preloaded) exports the same names. Plain program (runs under TSan).
 *
 * usage: own_procs PATH/libcuda.so.1 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* Interposers of the names looked up below: never to be handed back. */
__attribute__((visibility("default"))) CUresult cuInit(unsigned int flags) {
  (void)flags;
  return CUDA_ERROR_UNKNOWN;
}

__attribute__((visibility("default"))) CUresult cuLaunchKernel(
    CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
    unsigned smem, CUstream s, void** params, void** extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)s,
      (void)params, (void)extra;
  return CUDA_ERROR_UNKNOWN;
}

typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: own_procs PATH/libcuda.so.1\n");
    return 2;
  }
  void* h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  gpa_fn gpa = (gpa_fn)dlsym(h, "cuGetProcAddress_v2");
  static const char* const names[] = {"cuInit", "cuLaunchKernel"};
  void* const ours[] = {(void*)cuInit, (void*)cuLaunchKernel};
  int bad = gpa == NULL;
  for (int i = 0; gpa && i < 2; i++) {
    void* p = NULL;
    CUdriverProcAddressQueryResult st;
    CUresult r = gpa(names[i], &p, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &st);
    void* own = dlsym(h, names[i]);   /* the handle's own definition first */
    if (r != CUDA_SUCCESS || p == NULL || p == ours[i] || p != own) {
      fprintf(stderr, "%s: got %p, the sim's is %p, the program's %p\n", names[i], p, own, ours[i]);
      bad = 1;
    }
  }
  dlclose(h);
  printf("%s\n", bad ? "FAIL" : "ok");
  return bad;
}

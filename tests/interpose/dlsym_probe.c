/* A program that links no CUDA and probes the global scope for it, as
 * programs and Python packages do to learn whether CUDA is loaded. Its output
 * must be the same with and without the shim preloaded (test_routes.py).
 *
 * usage: dlsym_probe   (LD_LIBRARY_PATH must find a libcudart.so.13 / libcuda.so.1) */
#include <dlfcn.h>
#include <stdio.h>

static const char* const names[] = {"cudaMalloc", "cudaLaunchKernel", "cuLaunchKernel",
                                    "cuGetProcAddress", "cuGetProcAddress_v2", "cuMemAlloc_v2"};

static void probe(const char* when) {
  void* self = dlopen(NULL, RTLD_LAZY);
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
    printf("%s %s default=%s self=%s\n", when, names[i],
           dlsym(RTLD_DEFAULT, names[i]) ? "found" : "absent",
           dlsym(self, names[i]) ? "found" : "absent");
  dlclose(self);
}

int main(void) {
  probe("none");
  void* local_rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_LOCAL);
  void* local_drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  printf("loaded %s %s\n", local_rt ? "yes" : "no", local_drv ? "yes" : "no");
  probe("local");
  void* global_rt = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL);
  void* global_drv = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD | RTLD_GLOBAL);
  printf("promoted %s %s\n", global_rt ? "yes" : "no", global_drv ? "yes" : "no");
  probe("global");
  return 0;
}

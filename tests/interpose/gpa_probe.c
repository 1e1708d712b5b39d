/* Asks the driver (through whatever is preloaded) for each name on stdin with
 * cuGetProcAddress_v2, as NVIDIA's runtime does, once plainly and once with
 * the per-thread-default-stream flag, and prints for each answer which object
 * the pointer lies in: "<name> <flag> <object>|absent". test_api_classes.py
 * checks that every name whose calls order or observe stream work comes back
 * as one of libgrape.so's functions. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

typedef CUresult (*gpa_fn)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*);

int main(void) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
  if (gpa == NULL) {
    fprintf(stderr, "gpa_probe: no libcuda.so.1 / cuGetProcAddress_v2\n");
    return 1;
  }
  char name[256];
  while (scanf("%255s", name) == 1) {
    for (int pt = 0; pt < 2; pt++) {
      void* p = NULL;
      CUdriverProcAddressQueryResult st;
      CUresult r = gpa(name, &p, 13000,
                       pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : CU_GET_PROC_ADDRESS_DEFAULT, &st);
      Dl_info info;
      const char* obj = "absent";
      if (r == CUDA_SUCCESS && p != NULL && dladdr(p, &info) && info.dli_fname != NULL) {
        obj = strrchr(info.dli_fname, '/');
        obj = obj ? obj + 1 : info.dli_fname;
      }
      printf("%s %d %s\n", name, pt, obj);
    }
  }
  return 0;
}

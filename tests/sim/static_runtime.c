/* static_runtime LIB_A LIB_B: two libraries with NVIDIA's runtime linked in
 * statically (static_runtime_lib.c), loaded against the sim's driver, find no
 * device, and the sim names each library's file once, in the line that says
 * why: the runtime inside a library has no file of its own to name, and the
 * user must learn which library (cuDNN, CuPy, ...) needs a real GPU. Run with
 * and without libgrape.so preloaded, whose hook forwards cuGetExportTable
 * (the line must name the library, not the shim).
 *
 * Exit 0 on success, 1 with a FAIL line per failure. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errcap.h"

enum { NO_DEVICE = 100 };   /* cudaErrorNoDevice */

static int ask(const char* lib, int* bad) {
  void* h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  int (*count)(int*) = h ? (int (*)(int*))dlsym(h, "static_runtime_device_count") : NULL;
  if (count == NULL) {
    printf("FAIL: cannot load %s: %s\n", lib, dlerror());
    *bad = 1;
    return -1;
  }
  int n = -1;
  int r1 = count(&n), r2 = count(&n);
  if (r1 != NO_DEVICE || r2 != NO_DEVICE) {
    printf("FAIL: %s: cudaGetDeviceCount %d, again %d; want %d (cudaErrorNoDevice)\n", lib, r1,
           r2, NO_DEVICE);
    *bad = 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: static_runtime LIB_A LIB_B\n");
    return 2;
  }
  int bad = 0;
  int cap = errcap_begin();
  ask(argv[1], &bad);
  ask(argv[2], &bad);
  ask(argv[1], &bad);   /* asked again: named once */
  char* text = errcap_end(cap);
  for (int i = 1; i <= 2; i++) {
    char line[PATH_MAX + 64], real[PATH_MAX];   /* the sim names the file with links resolved */
    snprintf(line, sizeof(line), "simcu: %s carries NVIDIA's CUDA runtime",
             realpath(argv[i], real) != NULL ? real : argv[i]);
    if (errcap_count(text, line) != 1) {
      printf("FAIL: the sim must name %s once, as \"%s ...\"\n", argv[i], line);
      bad = 1;
    }
  }
  if (errcap_count(text, "simcu: ") != 2 || errcap_count(text, "cudaErrorNoDevice") != 2 ||
      errcap_count(text, "needs a real GPU") != 2 || errcap_count(text, "libgrape") != 0) {
    printf("FAIL: want one line per library, saying why and what the sim runs\n");
    bad = 1;
  }
  if (bad)
    printf("the sim printed:\n%s\n", text);
  else
    printf("the sim said:\n%s", text);
  free(text);
  return bad;
}

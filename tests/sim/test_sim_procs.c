/* test_sim_procs TRIPLES: every (name, version, variant) triple of cuda.h and
 * cudaTypedefs.h resolves through the sim's cuGetProcAddress_v2 to the
 * exported symbol the headers map it to; unknown names, too-old versions and
 * aliases answer as NVIDIA's driver does; an entry point the sim does not
 * serve says so in one line, once, and returns CUDA_ERROR_NOT_SUPPORTED.
 *
 * TRIPLES is `scripts/cuda_api.py --driver` output ("name version variant
 * symbol", variant "-" for the plain one), written at build time from the
 * headers, independently of the table the sim was generated with. Exit 0 when
 * all hold, 1 with one line per failure. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errcap.h"

static int failures;

#define CHECK(cond, ...)                                                           \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      printf("FAIL: " __VA_ARGS__);                                                \
      printf("\n");                                                                \
      failures++;                                                                  \
    }                                                                              \
  } while (0)

static void* lookup(const char* name, int version, cuuint64_t flags, CUresult* r,
                    CUdriverProcAddressQueryResult* st) {
  void* p = NULL;
  *r = cuGetProcAddress_v2(name, &p, version, flags, st);
  return p;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_sim_procs TRIPLES\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "r");
  if (f == NULL) {
    perror(argv[1]);
    return 2;
  }
  char name[256], variant[8], symbol[256];
  int version, rows = 0;
  CUresult r;
  CUdriverProcAddressQueryResult st;
  while (fscanf(f, "%255s %d %7s %255s", name, &version, variant, symbol) == 4) {
    rows++;
    int pt = strcmp(variant, "-") != 0;
    void* p = lookup(name, version, pt ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM : 0, &r, &st);
    void* want = dlsym(RTLD_DEFAULT, symbol);
    CHECK(want != NULL, "%s is not exported", symbol);
    CHECK(r == CUDA_SUCCESS && st == CU_GET_PROC_ADDRESS_SUCCESS,
          "cuGetProcAddress_v2(%s, %d, %s): %d, status %d", name, version, variant, r, st);
    CHECK(p == want, "cuGetProcAddress_v2(%s, %d, %s) is not %s", name, version, variant, symbol);
  }
  fclose(f);
  CHECK(rows > 500, "only %d triples read from %s", rows, argv[1]);

  /* Before a name existed; a name that never did; the per-thread flag at a
   * version before the per-thread variant existed; an alias. */
  lookup("cuStreamWaitValue32", 7000, 0, &r, &st);
  CHECK(r == CUDA_ERROR_NOT_FOUND && st == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT,
        "too old a version: %d, status %d", r, st);
  lookup("cuNoSuchFunction", 13000, 0, &r, &st);
  CHECK(r == CUDA_ERROR_NOT_FOUND && st == CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
        "unknown name: %d, status %d", r, st);
  void* p = lookup("cuMemcpyHtoD", 6000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &r, &st);
  CHECK(p == dlsym(RTLD_DEFAULT, "cuMemcpyHtoD_v2"), "per-thread flag before 7000");
  p = lookup("cuGraphInstantiate", 12000, 0, &r, &st);
  CHECK(p == dlsym(RTLD_DEFAULT, "cuGraphInstantiateWithFlags"), "cuGraphInstantiate at 12000");
  p = lookup("cuGraphInstantiate", 11000, 0, &r, &st);
  CHECK(p == dlsym(RTLD_DEFAULT, "cuGraphInstantiate_v2"), "cuGraphInstantiate at 11000");

  /* An entry point that is not simulated: a stub that says so, once. */
  typedef CUresult (*mipmap_create_fn)(CUmipmappedArray*, const CUDA_ARRAY3D_DESCRIPTOR*,
                                       unsigned);
  mipmap_create_fn create =
      (mipmap_create_fn)lookup("cuMipmappedArrayCreate", 13000, 0, &r, &st);
  CHECK(r == CUDA_SUCCESS && create != NULL, "cuMipmappedArrayCreate does not resolve");
  if (create != NULL) {
    CUmipmappedArray a;
    CUDA_ARRAY3D_DESCRIPTOR d = {16, 16, 0, CU_AD_FORMAT_FLOAT, 1, 0};
    int cap = errcap_begin();
    CUresult r1 = create(&a, &d, 2), r2 = create(&a, &d, 2);
    char* text = errcap_end(cap);
    CHECK(r1 == CUDA_ERROR_NOT_SUPPORTED && r2 == CUDA_ERROR_NOT_SUPPORTED,
          "cuMipmappedArrayCreate: %d, %d", r1, r2);
    CHECK(errcap_count(text, "simcu: cuMipmappedArrayCreate is not simulated") == 1 &&
              errcap_count(text, "\n") == 1,
          "cuMipmappedArrayCreate printed: %s", text);
    free(text);
  }
  if (failures == 0)
    printf("%d triples resolve to their symbols\n", rows);
  return failures ? 1 : 0;
}

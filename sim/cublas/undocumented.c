/* undocumented.c: the names NVIDIA's libcublas.so.13 exports without a
 * header that NVIDIA's other libraries import from it, so that they load
 * beside the stand-in: cuSOLVER (libcusolver.so.12, libcusolverMg.so.12,
 * which PyTorch loads for torch.linalg) imports cublasSetEnvironmentMode.
 *
 * DESIGN: no header gives their prototypes, so each takes what an integer
 * mode would be passed in and returns a cublasStatus_t: NOT_SUPPORTED, said
 * once, like the generated stubs (gen_stubs.py). A caller that passes more
 * arguments is unharmed (the C calling convention leaves them unread). */
#include <cublas_api.h>
#include <stdatomic.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

static void unsimulated(const char* name, atomic_int* said) {
  if (atomic_exchange(said, 1) == 0)
    fprintf(stderr, "simcu: %s (libcublas.so.13, undocumented) is not simulated: returning "
                    "CUBLAS_STATUS_NOT_SUPPORTED\n", name);
}

EXPORT cublasStatus_t cublasSetEnvironmentMode(int mode) {
  static atomic_int said;
  (void)mode;
  unsimulated("cublasSetEnvironmentMode", &said);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

EXPORT cublasStatus_t cublasGetEnvironmentMode(int* mode) {
  static atomic_int said;
  (void)mode;
  unsimulated("cublasGetEnvironmentMode", &said);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

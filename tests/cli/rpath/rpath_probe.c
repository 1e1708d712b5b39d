/* Prints how many devices the CUDA runtime it was linked to reports. Linked
 * with DT_RPATH to a folder holding fake_cudart (libcudart.so.13), as
 * PyTorch's libtorch_cuda.so is to NVIDIA's runtime: under grape run on the
 * sim it must still reach the sim's runtime (tests/cli/test_run.py, rpath). */
#include <stdio.h>

int cudaGetDeviceCount(int* n);

int main(void) {
  int n = -1;
  int rc = cudaGetDeviceCount(&n);
  printf("devices %d (rc %d)\n", rc == 0 ? n : 0, rc);
  return 0;
}

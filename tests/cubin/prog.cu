// A host program around the test kernels, linked non-PIE so that its
// __fatBinC_Wrapper_t records hold absolute addresses (tests the
// .nvFatBinSegment route once .nv_fatbin is renamed away).
#include "kernels.cu"

int main(void) {
  return 0;
}

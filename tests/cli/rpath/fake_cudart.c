/* A stand-in for NVIDIA's runtime where a framework's DT_RPATH finds it
 * (PyTorch's wheel: nvidia/cu13/lib): it reports no device, as NVIDIA's does
 * on a machine with the sim only. rpath_probe is linked to it with DT_RPATH,
 * which wins over LD_LIBRARY_PATH. */
int cudaGetDeviceCount(int* n) {
  *n = 0;
  return 100;   /* cudaErrorNoDevice */
}

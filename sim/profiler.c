/* profiler.c: the profiler control of cudaProfiler.h (cuProfilerStart,
 * cuProfilerStop, the deprecated cuProfilerInitialize), which NVIDIA's driver
 * exports and resolves through cuGetProcAddress, and which PyTorch reaches
 * through cudaProfilerStart (torch.cuda.profiler).
 *
 * DESIGN: no profiling tool ever attaches to the simulated device, so start
 * and stop only do what CUDA documents for the call itself: they need a
 * current context (CUDA_ERROR_INVALID_CONTEXT without one) and otherwise
 * succeed; with no tool there is no state to change, so a second start or stop
 * has no effect, as documented. cuProfilerInitialize always answers CUDA_ERROR_NOT_SUPPORTED, as
 * CUDA 12.0 and later document, and says nothing (it is not a gap of the sim).
 */
#include "internal.h"

SIM_EXPORT CUresult cuProfilerInitialize(const char* configFile, const char* outputFile,
                                         CUoutput_mode outputMode) {
  SIM_COUNT(cuProfilerInitialize);
  (void)configFile;
  (void)outputFile;
  (void)outputMode;
  return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult profiler_control(void) {
  SIM_TRY(grape__sim_check_init());
  return grape__sim_current_ctx() == NULL ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuProfilerStart(void) {
  SIM_COUNT(cuProfilerStart);
  return profiler_control();
}

SIM_EXPORT CUresult cuProfilerStop(void) {
  SIM_COUNT(cuProfilerStop);
  return profiler_control();
}

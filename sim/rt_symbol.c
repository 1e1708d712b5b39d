/* rt_symbol.c: the runtime's device variables: cudaMemcpyToSymbol,
 * cudaMemcpyFromSymbol (each with its Async and per-thread forms),
 * cudaGetSymbolAddress and cudaGetSymbolSize.
 *
 * DESIGN: a symbol is the address of a variable's host shadow, which nvcc
 * registers (__cudaRegisterVar, rt.c); the variable is found in its fatbin's
 * library (cuLibraryGetGlobal) and then copied like any device memory at
 * its address plus the offset. CUDA's checks: the symbol must be
 * registered (cudaErrorInvalidSymbol), the range must lie in the variable
 * (cudaErrorInvalidValue), and the kind must name the device side as the
 * variable's (cudaErrorInvalidMemcpyDirection). */
#include "rt_internal.h"

/* The variable's address at offset, for count bytes. */
static cudaError_t symbol_at(const void* symbol, size_t count, size_t offset, char** out) {
  CUdeviceptr p;
  size_t size;
  RT_TRY(grape__rt_symbol(symbol, &p, &size));
  if (offset > size || count > size - offset)
    return grape__rt_err(cudaErrorInvalidValue);
  *out = (char*)(uintptr_t)p + offset;
  return cudaSuccess;
}

/* to: the variable is the destination; its kinds are the host's or the
 * device's copy into (or out of) device memory, or cudaMemcpyDefault. */
static cudaError_t copy_symbol(int to, void* mem, const void* symbol, size_t count, size_t offset,
                               enum cudaMemcpyKind k, cudaStream_t s, int async, int pt) {
  RT_ENTER();
  enum cudaMemcpyKind host = to ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (k != host && k != cudaMemcpyDeviceToDevice && k != cudaMemcpyDefault)
    return grape__rt_err(cudaErrorInvalidMemcpyDirection);
  char* var = NULL;
  RT_TRY(symbol_at(symbol, count, offset, &var));
  return to ? grape__rt_memcpy(var, mem, count, k, s, async, pt)
            : grape__rt_memcpy(mem, var, count, k, s, async, pt);
}

#define TO(...) copy_symbol(1, (void*)(uintptr_t)src, symbol, count, offset, k, __VA_ARGS__)
#define FROM(...) copy_symbol(0, dst, symbol, count, offset, k, __VA_ARGS__)

RT_API cudaError_t cudaMemcpyToSymbol(const void* symbol, const void* src, size_t count,
                                      size_t offset, enum cudaMemcpyKind k) {
  return TO(NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpyToSymbol_ptds(const void* symbol, const void* src, size_t count,
                                           size_t offset, enum cudaMemcpyKind k) {
  return TO(NULL, 0, 1);
}
RT_API cudaError_t cudaMemcpyToSymbolAsync(const void* symbol, const void* src, size_t count,
                                           size_t offset, enum cudaMemcpyKind k, cudaStream_t s) {
  return TO(s, 1, 0);
}
RT_API cudaError_t cudaMemcpyToSymbolAsync_ptsz(const void* symbol, const void* src, size_t count,
                                                size_t offset, enum cudaMemcpyKind k,
                                                cudaStream_t s) {
  return TO(s, 1, 1);
}
RT_API cudaError_t cudaMemcpyFromSymbol(void* dst, const void* symbol, size_t count, size_t offset,
                                        enum cudaMemcpyKind k) {
  return FROM(NULL, 0, 0);
}
RT_API cudaError_t cudaMemcpyFromSymbol_ptds(void* dst, const void* symbol, size_t count,
                                             size_t offset, enum cudaMemcpyKind k) {
  return FROM(NULL, 0, 1);
}
RT_API cudaError_t cudaMemcpyFromSymbolAsync(void* dst, const void* symbol, size_t count,
                                             size_t offset, enum cudaMemcpyKind k, cudaStream_t s) {
  return FROM(s, 1, 0);
}
RT_API cudaError_t cudaMemcpyFromSymbolAsync_ptsz(void* dst, const void* symbol, size_t count,
                                                  size_t offset, enum cudaMemcpyKind k,
                                                  cudaStream_t s) {
  return FROM(s, 1, 1);
}

RT_API cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  RT_ENTER();
  if (devPtr == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  CUdeviceptr p;
  size_t size;
  RT_TRY(grape__rt_symbol(symbol, &p, &size));
  *devPtr = (void*)(uintptr_t)p;
  return cudaSuccess;
}

RT_API cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  RT_ENTER();
  if (size == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  CUdeviceptr p;
  RT_TRY(grape__rt_symbol(symbol, &p, size));
  return cudaSuccess;
}

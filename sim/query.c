/* query.c: small queries of the simulated driver that the runtime's getters
 * need (cuStreamGetDevice, cuGraphExecGetFlags, cuDeviceGetByPCIBusId) and
 * the context-taking forms CUDA 12.5/13.0 added (cuCtxSynchronize_v2,
 * cuCtxGetDevice_v2, cuStreamGetCtx_v2), which cuGetProcAddress returns for
 * those names at versions 13000/12050 and NVIDIA's runtime asks for.
 *
 * DESIGN: each answers from state other files own (streams, executable
 * graphs, the one device) through internal.h, without touching it.
 */
#include "internal.h"

#include <string.h>

static CUresult stream_device(CUstream h, CUdevice* d, int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if (d == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}

SIM_TWINS(cuStreamGetDevice, _ptsz, (CUstream h, CUdevice* d), stream_device, h, d)

SIM_EXPORT CUresult cuGraphExecGetFlags(CUgraphExec x, cuuint64_t* flags) {
  SIM_COUNT(cuGraphExecGetFlags);
  if (!grape__sim_reg_has(x, K_EXEC))
    return CUDA_ERROR_INVALID_VALUE;
  if (flags == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *flags = x->flags;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* d, const char* id) {
  SIM_COUNT(cuDeviceGetByPCIBusId);
  SIM_TRY(grape__sim_check_init());
  if (d == NULL || id == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  /* The one device's id (cuDeviceGetPCIBusId), with or without the domain. */
  if (strcasecmp(id, "0000:00:00.0") != 0 && strcasecmp(id, "00:00.0") != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}

/* ---- The context-taking forms of CUDA 12.5/13.0 ---- */

/* ctx NULL means the calling thread's current context; the sim has one. */
static CUresult context_of(CUcontext ctx) {
  SIM_TRY(grape__sim_check_init());
  if (ctx == NULL)
    return grape__sim_ctx_error();
  struct CUctx_st* p = grape__sim_primary();
  return ctx == p && p->refs > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  SIM_COUNT(cuCtxSynchronize_v2);
  SIM_TRY(context_of(ctx));
  SIM_TRY(grape__sim_unsafe_call());
  return grape__sim_wait_all();
}

SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* d, CUcontext ctx) {
  SIM_COUNT(cuCtxGetDevice_v2);
  SIM_TRY(context_of(ctx));
  if (d == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *d = 0;
  return CUDA_SUCCESS;
}

/* Streams belong to the primary context; green contexts are not simulated. */
static CUresult stream_ctx(CUstream h, CUcontext* ctx, CUgreenCtx* green, int ptds) {
  struct CUstream_st* s;
  SIM_TRY(grape__sim_stream(h, ptds, &s));
  if (ctx == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *ctx = grape__sim_primary();
  if (green != NULL)
    *green = NULL;
  return CUDA_SUCCESS;
}

SIM_TWINS(cuStreamGetCtx_v2, _ptsz, (CUstream h, CUcontext* ctx, CUgreenCtx* green),
          stream_ctx, h, ctx, green)

/* The hook table generated from hooks.def: indices, routes, function types and
 * the shapes of the real-function slots (real.h holds the slots).
 *
 * DESIGN: a hooked symbol reaches the program in one of four ways, and each
 * needs the real function the caller would otherwise have called:
 *   EXPORT  the shim's exported override; real = next definition (RTLD_NEXT)
 *   DLSYM   a wrapper returned by the dlsym override; real = what dlsym found
 *   GPA     a wrapper returned by cuGetProcAddress[_v2]; real = what it returned
 *   EP      a wrapper returned by cudaGetDriverEntryPoint[ByVersion]
 * so every row has one real slot per way (grape_slot_t), and one function per
 * way that calls its body with the real function of its slot. The report
 * counts launches by five routes (grape_route_t): the EXPORT slot serves two,
 * runtime overrides (cuda*) and driver overrides (cu*). _ptsz rows are
 * separate rows with ptds = 1: one wrapper per (symbol, per-thread flag). */
#ifndef GRAPE_INTERPOSE_HOOKS_H
#define GRAPE_INTERPOSE_HOOKS_H

#include "grape/report.h"
#include "cuda_types.h"

/* Exported overrides need default visibility: the build hides everything else. */
#define GRAPE_EXPORT __attribute__((visibility("default")))

/* For code that runs before a sanitizer runtime is initialised (dlsym). */
#if defined(__clang__) || (defined(__GNUC__) && __GNUC__ >= 8)
#define GRAPE_NO_SANITIZE __attribute__((no_sanitize("address", "thread", "undefined")))
#else
#define GRAPE_NO_SANITIZE
#endif

typedef enum grape_slot_e {
  GRAPE_SLOT_EXPORT = 0,
  GRAPE_SLOT_DLSYM,
  GRAPE_SLOT_GPA,
  GRAPE_SLOT_EP,
  GRAPE_SLOT_COUNT
} grape_slot_t;

/* Report routes of a launch (launches_by_route). */
typedef enum grape_route_e {
  GRAPE_ROUTE_RUNTIME = 0,
  GRAPE_ROUTE_DRIVER,
  GRAPE_ROUTE_DLSYM,
  GRAPE_ROUTE_GPA,
  GRAPE_ROUTE_EP,
  GRAPE_ROUTE_COUNT
} grape_route_t;
/* The report names them by GRAPE_REPORT_ROUTES (grape/report.h), in this order. */
#define GRAPE_ROUTE_ONE(r) +1
_Static_assert(GRAPE_ROUTE_COUNT == 0 GRAPE_REPORT_ROUTES(GRAPE_ROUTE_ONE),
               "grape_route_t and GRAPE_REPORT_ROUTES list the same routes");
#undef GRAPE_ROUTE_ONE

typedef enum grape_hook_e {
#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) GRAPE_HOOK_##name,
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) GRAPE_HOOK_##name,
#define GRAPE_RT(name, base, ptds, kind, stream, params, args) GRAPE_HOOK_##name,
#define GRAPE_RT0(name, base, ptds, kind) GRAPE_HOOK_##name,
#define GRAPE_RT_OWN(name) GRAPE_HOOK_##name,
#include "hooks.def"
  GRAPE_HOOK_COUNT
} grape_hook_t;

typedef struct grape_hook_desc_s {
  const char* name;        /* exported symbol */
  const char* gpa;         /* name asked of cuGetProcAddress; NULL for runtime rows */
  int version;             /* lowest cudaVersion of this row's ABI */
  int ptds;                /* per-thread default stream variant */
  void* wrapper[GRAPE_SLOT_COUNT];   /* the shim's function per route (NULL: none) */
} grape_hook_desc_t;

/* The per-route wrappers of driver rows (hidden; handed out by pointer). */
#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) \
  ret grape__w_##name##_dlsym params;                                          \
  ret grape__w_##name##_gpa params;                                            \
  ret grape__w_##name##_ep params;
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) \
  GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, 0, (void), ())
#include "hooks.def"

/* The exported overrides (declared again here with default visibility). */
#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) GRAPE_EXPORT ret name params;
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) GRAPE_EXPORT ret name(void);
#define GRAPE_RT(name, base, ptds, kind, stream, params, args) GRAPE_EXPORT cudaError_t name params;
#define GRAPE_RT0(name, base, ptds, kind) GRAPE_EXPORT cudaError_t name(void);
#include "hooks.def"
GRAPE_EXPORT void** __cudaRegisterFatBinary(void* fatCubin);
GRAPE_EXPORT void __cudaRegisterFatBinaryEnd(void** fatCubinHandle);
GRAPE_EXPORT void __cudaUnregisterFatBinary(void** fatCubinHandle);
GRAPE_EXPORT void __cudaRegisterFunction(void** fatCubinHandle, const char* hostFun, char* deviceFun,
                                         const char* deviceName, int thread_limit, uint3* tid, uint3* bid,
                                         dim3* bDim, dim3* gDim, int* wSize);

/* Result of a call whose real function is missing. */
#define GRAPE_MISSING_CUresult CUDA_ERROR_NOT_FOUND
#define GRAPE_MISSING_cudaError_t cudaErrorSymbolNotFound

#endif

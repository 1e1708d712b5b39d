/* Function info: name and parameter layout of every kernel handle a launch names.
 *
 * DESIGN: one lock-free open-addressing table maps a handle (runtime host stub,
 * cudaKernel_t, CUfunction or CUkernel: all are pointers, all distinct) to its
 * info. Registration calls (__cudaRegisterFunction, __cudaGetKernel,
 * cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction) insert names and
 * image pointers only; the layout is resolved on the handle's first launch,
 * after the real launch has loaded the function (lazy loading), from
 * cuFuncGetParamInfo / cuKernelGetParamInfo / cudaFuncGetParamInfo, falling back
 * to the .nv.info records of the image (cubin/). Later launches find a resolved
 * info with one probe: no parsing on the hot path. Infos live until exit. */
#ifndef GRAPE_INTERPOSE_FUNCINFO_H
#define GRAPE_INTERPOSE_FUNCINFO_H

#include <stddef.h>
#include <stdint.h>

#include "grape/cubin.h"

typedef enum grape_handle_kind_e {
  GRAPE_FN_RUNTIME = 1,    /* host stub or cudaKernel_t: ask the runtime */
  GRAPE_FN_FUNCTION = 2,   /* CUfunction */
  GRAPE_FN_KERNEL = 3,     /* CUkernel (also accepted where a CUfunction is) */
} grape_handle_kind_t;

typedef struct grape_func_param_s {
  uint32_t offset;
  uint32_t size;
} grape_func_param_t;

typedef struct grape_func_s {
  int kind;                    /* grape_handle_kind_t */
  int resolved;                /* 1 once the layout below is final (acquire) */
  const char* name;            /* mangled name (owned), NULL when unknown */
  char* demangled;             /* owned, NULL when unknown */
  uint64_t id;                 /* grape__fp_name(name), or the handle when unknown */
  const void* image;           /* handle of the image it came from (fatbin handle, module, library) */
  int nparams;                 /* -1: layout unknown */
  uint32_t param_bytes;        /* size of the parameter block */
  grape_func_param_t* params;  /* nparams entries in ordinal order (owned) */
  const char* layout_source;   /* "driver", "runtime", "cubin" or "none" */
  const void* handle;          /* the handle this info was created for (aliases share it) */
  int holes;                   /* the parameters leave alignment gaps (zeroed on capture) */
} grape_func_t;

/* Info of handle h, created on first sight and resolved on first call here.
 * Never NULL unless out of memory. Call after the launch succeeded. */
grape_func_t* grape__func_get(const void* h, grape_handle_kind_t kind);

/* Lookup without creating or resolving; NULL when unknown. */
grape_func_t* grape__func_peek(const void* h);

/* Records a handle's name and image at registration (name is copied). */
void grape__func_register(const void* h, grape_handle_kind_t kind, const char* name,
                          const void* image);

/* Makes handle alias share the info of handle of (same name, same layout). */
void grape__func_alias(const void* alias, grape_handle_kind_t kind, const void* of);

/* Remembers the image behind a fatbin handle (__cudaRegisterFatBinary: the
 * wrapper is static data, parsed on the first launch that needs it) or a module
 * / library (parsed at load: the caller may free its buffer; fb is adopted). */
void grape__image_register(const void* handle, const void* image);
void grape__image_register_parsed(const void* handle, grape_fatbin_t* fb);

/* Copies the parameters of one launch into out (capacity cap bytes) following
 * f's layout: kernelParams[i] -> out + offset_i, or the 'extra' buffer as a
 * whole. @return bytes written (the parameter block size), or 0 when unknown or
 * too large. */
size_t grape__func_capture(const grape_func_t* f, void** kernelParams, void** extra, void* out,
                           size_t cap);

/* Size of the parameter buffer of an 'extra' launch array (0 when absent). */
size_t grape__extra_size(void** extra);

/* Forgets every info (fork child / tests; memory is kept in the child). */
void grape__func_reset(int free_memory);

#endif

/* Function info: name and parameter layout of every kernel handle a launch names.
 *
 * DESIGN: one lock-free handle map (handles.h) takes a handle (runtime host
 * stub, cudaKernel_t, CUfunction or CUkernel: all are pointers, all distinct
 * while loaded) to its info. Registration calls (__cudaRegisterFunction,
 * __cudaGetKernel, cuModuleGetFunction, cuLibraryGetKernel, cuKernelGetFunction)
 * insert names and image pointers only: no copy of a runtime-registered name (it
 * lives in the registering image), no demangling, no hashing, because a process
 * such as PyTorch registers tens of thousands of kernels it never launches. The
 * layout is resolved on the handle's first launch, after the real launch has
 * loaded the function (lazy loading), from the driver (cuFuncGetParamInfo /
 * cuKernelGetParamInfo on the function behind the handle: a runtime query would
 * set the thread's last error when it reaches the end of the list), falling back
 * to the .nv.info records of its image (the image registry, images.h, parses
 * it with cubin/). Later launches find a resolved
 * info with one probe: no parsing on the hot path.
 *
 * Handle values are reused by drivers after an unload, so an unload forgets the
 * infos of its image and a registration of a known handle with another name or
 * image replaces its info. A forgotten info is retired, not freed (another
 * thread may still hold it): it lives until exit and still names its kernel in
 * the report. Either bumps a generation number that drops per-thread caches. */
#ifndef GRAPE_INTERPOSE_FUNCINFO_H
#define GRAPE_INTERPOSE_FUNCINFO_H

#include <stddef.h>
#include <stdint.h>

#include <string.h>

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
  const char* name;            /* mangled name, NULL when unknown; owned when owns_name */
  char* demangled;             /* owned; made on first grape__func_display_name */
  uint64_t id;                 /* grape__fp_name(name) once resolved, else the handle */
  const void* image;           /* handle of the image it came from (fatbin handle, module, library) */
  void* drv;                   /* the driver function to launch it with (CUfunction, or a
                                  CUkernel when drv_kernel), NULL when unknown; set at resolve */
  int drv_kernel;
  int owns_name;               /* name was copied (driver registrations: the caller's string) */
  int stub;                    /* handle is a host stub registered with __cudaRegisterFunction */
  int retired;                 /* forgotten by an unload or replaced (under the retire lock) */
  int lim_state;               /* graph mode's launch limits: 0 not asked, 1 known, -1 unknown */
  uint32_t lim_threads;        /* CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK */
  uint32_t lim_smem;           /* CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */
  int nparams;                 /* -1: layout unknown */
  uint32_t param_bytes;        /* size of the parameter block */
  grape_func_param_t* params;  /* nparams entries in ordinal order (owned) */
  const char* layout_source;   /* "driver", "runtime", "cubin" or "none" */
  const void* handle;          /* the handle this info was created for (aliases share it) */
  int holes;                   /* the parameters leave alignment gaps (zeroed on capture) */
  int packed8;                 /* every parameter is 8 bytes, at offset 8 * i (pointers) */
  int wide;                    /* parameters of 4 and 8 bytes whose 8-byte stores in ordinal
                                  order cover the block, gaps included (funcinfo.c) */
  int coll;                    /* collective.h: GRAPE_COLL_* (0: not classified yet) */
} grape_func_t;

/* Info of handle h, created on first sight and resolved on first call here.
 * Never NULL unless out of memory. Call after the launch succeeded.
 * The last handle each thread asked for is cached (most launch sequences
 * repeat a kernel), so a repeat costs a compare; a generation number drops the
 * cache when the table is reset (fork child, tests). */
grape_func_t* grape__func_get_slow(const void* h, grape_handle_kind_t kind);
/* The functions' generation: moves whenever an info is replaced or retired
 * (a handle registered again, an image unloaded) or a function's limits are
 * forgotten (an attribute change). The thread caches below, and the slots a
 * launch was held in (launch.h, grape__hold_stamp), stand only while it holds.
 * Threads: bumped (relaxed) by any thread that makes such a change, read (relaxed) by every
 * launch: a stale value only keeps a cached info one more launch (a launch and such a change
 * on another thread are unordered for the program too), and infos are never freed. */
extern unsigned grape__func_generation;
void grape__func_changed(void);
/* Thread-local: the thread's own cache of its last info; no other thread touches them. */
extern __thread const void* grape__func_cache_key __attribute__((tls_model("initial-exec")));
extern __thread grape_func_t* grape__func_cache_info __attribute__((tls_model("initial-exec")));
extern __thread unsigned grape__func_cache_gen __attribute__((tls_model("initial-exec")));

static inline grape_func_t* grape__func_get(const void* h, grape_handle_kind_t kind) {
  if (grape__func_cache_key == h &&
      grape__func_cache_gen == __atomic_load_n(&grape__func_generation, __ATOMIC_RELAXED))
    return grape__func_cache_info;
  return grape__func_get_slow(h, kind);
}

/* Lookup without creating or resolving; NULL when unknown. */
grape_func_t* grape__func_peek(const void* h);

/* Records a handle's name and image at registration. A runtime registration's
 * name is kept by pointer (it lives as long as its image); a driver's is copied.
 * A known handle registered with another name or image gets a new info. */
void grape__func_register(const void* h, grape_handle_kind_t kind, const char* name,
                          const void* image);

/* Forgets every info of image (a module, library or fatbin handle being
 * unloaded) and the image itself: their handle values may come back for other
 * kernels. Not for the hot path (scans the table). */
void grape__func_forget_image(const void* image);

/* The driver functions (grape_func_t.drv) of image's infos, into a malloc'd
 * array *out (*n of them; NULL when none or out of memory). Call before
 * grape__func_forget_image. */
void grape__func_image_drvs(const void* image, void*** out, size_t* n);

/* The name to print: demangled on first call (cached), else the mangled name,
 * else "(unnamed)". */
const char* grape__func_display_name(grape_func_t* f);

/* Makes handle alias share the info of handle of (same name, same layout). */
void grape__func_alias(const void* alias, grape_handle_kind_t kind, const void* of);

/* Copies the parameter buffer of a launch's 'extra' form ({BUFFER_POINTER, p,
 * BUFFER_SIZE, &size, END} in any order) into out, of cap bytes.
 * @return its size, or 0 when absent or larger than cap. */
size_t grape__capture_extra(void** extra, void* out, size_t cap);

/* Runs P(k) for k = n down to 1, that is for parameter n - k in ordinal
 * order: up to 8 unrolled (a switch that falls through), more in a loop
 * first. */
#define GRAPE_EACH_PARAM(n, P)                      \
  switch (n) {                                      \
  default:                                          \
    for (int k_ = (n); k_ > 8; k_--)                \
      P(k_);                                        \
    __attribute__((fallthrough));                   \
  case 8: P(8); __attribute__((fallthrough));       \
  case 7: P(7); __attribute__((fallthrough));       \
  case 6: P(6); __attribute__((fallthrough));       \
  case 5: P(5); __attribute__((fallthrough));       \
  case 4: P(4); __attribute__((fallthrough));       \
  case 3: P(3); __attribute__((fallthrough));       \
  case 2: P(2); __attribute__((fallthrough));       \
  case 1: P(1); __attribute__((fallthrough));       \
  case 0: break;                                    \
  }

/* Copies kernelParams into out following f's layout (f->nparams >= 0) and
 * returns f->param_bytes. out must hold max(f->param_bytes, 64) bytes: the
 * launch path reserves that, so nothing is checked here. Inlined into it. */
static inline __attribute__((always_inline)) size_t grape__func_copy_params(
    const grape_func_t* f, void** kernelParams, void* out) {
  uint8_t* o = out;
  if (f->packed8) {
    /* The common case (pointers and 64-bit sizes): one load pair and a store each. */
    for (int i = 0; i < f->nparams; i++)
      __builtin_memcpy(o + 8 * (size_t)i, kernelParams[i], 8);
    return f->param_bytes;
  }
  if (f->wide) {
    int n = f->nparams;
    const grape_func_param_t* pe = f->params + n;   /* parameter n - k is pe[-k], ke[-k] */
    void** ke = kernelParams + n;
    /* Each parameter one 8-byte store, a 4-byte one zero-extended: the gap
     * after it is cleared, or the next parameter (stored after it) overwrites
     * it. */
#define GRAPE_WIDE_PARAM(k)                          \
  do {                                               \
    uint64_t v_;                                     \
    if (pe[-(k)].size == 8) {                        \
      __builtin_memcpy(&v_, ke[-(k)], 8);            \
    } else {                                         \
      uint32_t w_;                                   \
      __builtin_memcpy(&w_, ke[-(k)], 4);            \
      v_ = w_;                                       \
    }                                                \
    __builtin_memcpy(o + pe[-(k)].offset, &v_, 8);   \
  } while (0)
    GRAPE_EACH_PARAM(n, GRAPE_WIDE_PARAM);
#undef GRAPE_WIDE_PARAM
    return f->param_bytes;
  }
  if (f->holes) {
    /* Alignment gaps stay defined. A constant size compiles to a few stores. */
    if (f->param_bytes <= 64)
      __builtin_memset(o, 0, 64);
    else
      memset(o, 0, f->param_bytes);
  }
  /* 8- and 4-byte parameters (pointers, ints, floats) are one load and store
   * each; a call to memcpy per parameter would cost more than the whole path. */
  int n = f->nparams;
  const grape_func_param_t* pe = f->params + n;
  void** ke = kernelParams + n;
#define GRAPE_COPY_PARAM(k)                                  \
  do {                                                       \
    uint8_t* d_ = o + pe[-(k)].offset;                       \
    const void* s_ = ke[-(k)];                               \
    uint32_t z_ = pe[-(k)].size;                             \
    if (z_ == 8)                                             \
      __builtin_memcpy(d_, s_, 8);                           \
    else if (z_ == 4)                                        \
      __builtin_memcpy(d_, s_, 4);                           \
    else                                                     \
      memcpy(d_, s_, z_);                                    \
  } while (0)
  GRAPE_EACH_PARAM(n, GRAPE_COPY_PARAM);
#undef GRAPE_COPY_PARAM
  return f->param_bytes;
}

/* Calls fn for every known function info once (aliases skipped), retired ones
 * included. Not for the hot path: it scans the whole table (the exit report
 * uses it). */
void grape__func_each(void (*fn)(const grape_func_t* f, void* arg), void* arg);

/* Size of the parameter buffer of an 'extra' launch array (0 when absent). */
size_t grape__extra_size(void** extra);

/* Forgets every info (fork child / tests; memory is kept in the child). */
void grape__func_reset(int free_memory);

#endif

/* module.c: modules and libraries loaded from real kernel images, functions
 * and kernels, CPU-body binding, and the kernel launch entry points.
 *
 * DESIGN: an image (fatbin wrapper, fatbin, cubin or PTX) is parsed by cubin/
 * and the entry for sm_90 selected; its variables (__device__, __constant__)
 * get device memory with their initial bytes; every kernel in it becomes a CUfunction
 * that knows its parameter layout, which is what lets a launch copy its
 * arguments at call time (the caller's kernelParams die when it returns,
 * while the work runs later on the stream's worker). A CUkernel is the same
 * object as its CUfunction, which makes "a CUkernel may be passed where a
 * CUfunction is expected" hold by construction.
 *
 * A kernel's CPU body is looked up by name when first launched (see simcu.h);
 * a launch without one fails with CUDA_ERROR_NOT_FOUND, never silently: the
 * first lookup that finds none says once what that means, and each function
 * without a body is named once. SIMCU_KERNELS=timed (the word among the
 * paths) instead runs such a kernel timed, not computed (timed.c): it passes
 * every check a launch gets, takes modelled device time and writes nothing,
 * which lets a framework's own kernels through; cuInit says so once.
 *
 * Unloading a module keeps its module and function objects for the next
 * load (last freed, first reused), so handle values come back for other
 * kernels as with a real driver; SIMCU_NO_REUSE=1 parks them instead. The
 * free lists are guarded by bind_lock, which also orders body lookups. Each
 * load of a function is a new incarnation (gen), recorded in the work made
 * for it, so a graph node whose function was unloaded is recognised even
 * when a later load hands out the same value (grape__sim_work_func_live).
 */
#include "internal.h"
#include "cost.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"

/* ---- Body binding ---- */

static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;
static void** extra_libs;   /* handles of SIMCU_KERNELS objects */
static int nextra_libs = -1;
static struct CUfunc_st* free_funcs;   /* bind_lock */
static sim_module_t* free_modules;     /* bind_lock */
static struct CUfunc_st* parked_free_funcs; /* SIMCU_NO_REUSE: kept, never handed out again */
static sim_module_t* parked_free_modules;
static _Atomic uint64_t func_gens;          /* incarnations of functions so far */

/* bind_lock is taken first before fork (no other sim lock is held under it). */
void grape__sim_module_atfork(int phase) {
  grape__sim_fork_lock(&bind_lock, phase);
}

/* The word of SIMCU_KERNELS that asks for timed kernels; a library of that
 * name is written with a path ("./timed"). */
#define TIMED_WORD "timed"

static pthread_once_t timed_once = PTHREAD_ONCE_INIT;
static int timed_mode;

static void read_timed_mode(void) {
  const char* env = getenv("SIMCU_KERNELS");
  size_t n = strlen(TIMED_WORD);
  for (const char* p = env; p != NULL && *p != '\0';) {
    const char* end = strchr(p, ':');
    size_t len = end != NULL ? (size_t)(end - p) : strlen(p);
    if (len == n && strncmp(p, TIMED_WORD, n) == 0)
      timed_mode = 1;
    p = end != NULL ? end + 1 : NULL;
  }
  if (timed_mode)
    grape__sim_logf("SIMCU_KERNELS=timed: kernels without a CPU body (a framework's or a vendor "
                    "library's, from their fatbins) are checked and timed but not run: their "
                    "results are NOT computed, and the memory they would write keeps its "
                    "contents");
}

int grape__sim_kernels_timed(void) {
  pthread_once(&timed_once, read_timed_mode);
  return timed_mode;
}

static void load_extra_libs(void) {
  nextra_libs = 0;
  const char* env = getenv("SIMCU_KERNELS");
  if (env == NULL || env[0] == '\0')
    return;
  char* copy = strdup(env);
  if (copy == NULL)
    return;
  size_t cap = 0;
  for (char* save = NULL, *tok = strtok_r(copy, ":", &save); tok != NULL;
       tok = strtok_r(NULL, ":", &save)) {
    if (strcmp(tok, TIMED_WORD) == 0)
      continue;   /* the mode, not a library */
    void* h = dlopen(tok, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
      grape__sim_logf("SIMCU_KERNELS: cannot load %s: %s", tok, dlerror());
      continue;
    }
    if ((size_t)nextra_libs == cap) {
      void** n = grape__grow(extra_libs, &cap, cap + 1, sizeof(void*), 4);
      if (n == NULL) {
        dlclose(h);
        break;
      }
      extra_libs = n;
    }
    extra_libs[nextra_libs++] = h;
  }
  free(copy);
}

/* The names of the loaded objects, copied while dl_iterate_phdr holds the
 * loader's lock: they are opened only after it returns, since a dlopen
 * inside the callback nests the loader's locks (a sanitizer's dlopen and
 * dlclose hooks take their own lock around them: two threads then wait on
 * each other). */
typedef struct objects_s {
  char** names;
  size_t n, cap;
} objects_t;

static int note_object(struct dl_phdr_info* info, size_t size, void* arg) {
  (void)size;
  objects_t* o = arg;
  if (info->dlpi_name == NULL || info->dlpi_name[0] == '\0')
    return 0;
  if (o->n == o->cap) {
    char** n = grape__grow(o->names, &o->cap, o->n + 1, sizeof(char*), 16);
    if (n == NULL)
      return 1;
    o->names = n;
  }
  char* name = strdup(info->dlpi_name);
  if (name == NULL)
    return 1;
  o->names[o->n++] = name;
  return 0;
}

static void* find_symbol(const char* sym) {
  void* p = dlsym(RTLD_DEFAULT, sym);
  if (p != NULL)
    return p;
  if (nextra_libs < 0)
    load_extra_libs();
  for (int i = 0; i < nextra_libs && p == NULL; i++)
    p = dlsym(extra_libs[i], sym);
  if (p != NULL)
    return p;
  objects_t o = {NULL, 0, 0};
  dl_iterate_phdr(note_object, &o);
  for (size_t i = 0; i < o.n; i++) {
    void* h = p == NULL ? dlopen(o.names[i], RTLD_LAZY | RTLD_NOLOAD) : NULL;
    if (h != NULL) {
      p = dlsym(h, sym);
      dlclose(h);
    }
    free(o.names[i]);
  }
  free(o.names);
  return p;
}

static void* find_prefixed(const char* prefix, const char* name) {
  size_t n = strlen(prefix) + strlen(name) + 1;
  char* sym = malloc(n);
  if (sym == NULL)
    return NULL;
  snprintf(sym, n, "%s%s", prefix, name);
  void* p = find_symbol(sym);
  free(sym);
  return p;
}

/* Said once per function, when its lookup finds no body; the first time in a
 * process with what it means: kernels of programs not built for the sim (a
 * framework's or a vendor library's, compiled for GPUs alone) have no CPU
 * body and cannot run here whatever runtime loaded them. */
static atomic_int explained;

static void say_no_body(const char* name) {
  if (atomic_exchange(&explained, 1) == 0)
    grape__sim_logf("no CPU body for kernel %s: the simulated device runs only programs built "
                    "against it, whose kernels have CPU bodies (export " SIMCU_BODY_PREFIX
                    "<name>, see sim/simcu.h, or name their library in SIMCU_KERNELS). Kernels "
                    "built for GPUs alone, such as PyTorch's or a vendor library's, need a real "
                    "GPU: their launches fail with CUDA_ERROR_NOT_FOUND "
                    "(cudaErrorInvalidDeviceFunction), unless SIMCU_KERNELS=timed (grape run "
                    "--sim-kernels timed) runs them timed, their results not computed.", name);
  else
    grape__sim_logf("no CPU body for kernel %s either", name);
}

CUresult grape__sim_bind_body(struct CUfunc_st* f) {
  int first = 0;
  pthread_mutex_lock(&bind_lock);
  if (!f->body_looked_up) {
    f->body = (simcu_body_fn)find_prefixed(SIMCU_BODY_PREFIX, f->name);
    if (f->body != NULL)   /* optional: what a launch costs the device model (device.c) */
      f->cost = (simcu_cost_fn)find_prefixed(SIMCU_COST_PREFIX, f->name);
    f->timed = f->body == NULL && grape__sim_kernels_timed();
    f->body_looked_up = 1;
    first = 1;
  }
  pthread_mutex_unlock(&bind_lock);
  if (f->body == NULL && !f->timed) {
    if (first)
      say_no_body(f->name);
    return CUDA_ERROR_NOT_FOUND;
  }
  return CUDA_SUCCESS;
}

/* Parameter layout from SIMCU_PARAMS, for images the parser could not read. */
static void params_from_body(struct CUfunc_st* f) {
  const unsigned* p = find_prefixed(SIMCU_PARAMS_PREFIX, f->name);
  if (p == NULL)
    return;
  uint32_t n = p[0], off = 0;
  f->poff = calloc(n ? n : 1, sizeof(uint32_t));
  f->psize = calloc(n ? n : 1, sizeof(uint32_t));
  if (f->poff == NULL || f->psize == NULL)
    return;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t sz = p[1 + i], al = sz >= 8 ? 8 : (sz >= 4 ? 4 : (sz >= 2 ? 2 : 1));
    off = (off + al - 1) & ~(al - 1);
    f->poff[i] = off;
    f->psize[i] = sz;
    off += sz;
  }
  f->nparams = n;
  f->param_bytes = off;
  f->params_known = 1;
}

/* ---- Modules ---- */

/* A zeroed object from the free list (its handle value is reused) or new. */
static void* take_or_calloc(void** list, size_t size, size_t next_off) {
  pthread_mutex_lock(&bind_lock);
  void* p = *list;
  if (p != NULL)
    memcpy(list, (char*)p + next_off, sizeof(void*));
  pthread_mutex_unlock(&bind_lock);
  if (p == NULL)
    return calloc(1, size);
  memset(p, 0, size);
  return p;
}

/* Gives an unloaded object back for reuse, or parks it (SIMCU_NO_REUSE). */
static void give_back(void** list, void** parked, void* p, size_t next_off) {
  if (grape__sim.no_reuse)
    list = parked;
  pthread_mutex_lock(&bind_lock);
  memcpy((char*)p + next_off, list, sizeof(void*));
  *list = p;
  pthread_mutex_unlock(&bind_lock);
}

#define TAKE(list, type) \
  ((type*)take_or_calloc((void**)&(list), sizeof(type), offsetof(type, free_next)))
#define GIVE_BACK(list, type, p)                                                 \
  give_back((void**)&(list), (void**)&(parked_##list), (p), offsetof(type, free_next))

static struct CUfunc_st* func_new(sim_module_t* m, const char* name) {
  struct CUfunc_st* f = TAKE(free_funcs, struct CUfunc_st);
  if (f == NULL)
    return NULL;
  f->name = strdup(name);
  if (f->name == NULL) {
    GIVE_BACK(free_funcs, struct CUfunc_st, f);
    return NULL;
  }
  f->gen = atomic_fetch_add(&func_gens, 1) + 1;
  f->mod = m;
  f->registers = -1;
  f->max_threads = -1;
  f->cuda_api_version = -1;
  f->max_dyn_smem = 49152;
  return f;
}

static void func_free(struct CUfunc_st* f) {
  free(f->name);
  free(f->poff);
  free(f->psize);
  f->name = NULL;
  f->poff = f->psize = NULL;
  GIVE_BACK(free_funcs, struct CUfunc_st, f);
}

static int module_add_func(sim_module_t* m, struct CUfunc_st* f) {
  struct CUfunc_st** nf = realloc(m->funcs, (m->nfuncs + 1) * sizeof(*nf));
  if (nf == NULL)
    return -ENOMEM;
  m->funcs = nf;
  m->funcs[m->nfuncs++] = f;
  return grape__sim_reg_add(f, K_FUNC);
}

static void module_free(sim_module_t* m) {
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    grape__sim_reg_del(m->funcs[i]);
    func_free(m->funcs[i]);
  }
  free(m->funcs);
  for (uint32_t i = 0; i < m->nvars; i++)
    (void)grape__sim_free_now(m->vars[i].dptr);
  free(m->vars);
  m->vars = NULL;
  m->nvars = 0;
  if (m->fb != NULL)
    grape_fatbin_free(m->fb);
  m->funcs = NULL;
  m->fb = NULL;
  GIVE_BACK(free_modules, sim_module_t, m);
}

/* size 0: the image's extent is read from its headers (cuModuleLoadData). */
/* What any load checks first: an initialised driver, a current context for
 * a module, no sticky error. */
static CUresult load_ready(int is_library) {
  SIM_TRY(grape__sim_check_init());
  if (!is_library)
    SIM_TRY(grape__sim_ctx_error());
  return grape__sim_sticky();
}

/* The image's variables in device memory, with their initial bytes (zero
 * where the image gives none), as a module load places them. */
static CUresult module_vars(sim_module_t* m, const grape_image_t* img) {
  if (img->nglobals == 0)
    return CUDA_SUCCESS;
  m->vars = calloc(img->nglobals, sizeof(*m->vars));
  if (m->vars == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < img->nglobals; i++) {
    const grape_global_t* g = &img->globals[i];
    sim_var_t* v = &m->vars[m->nvars];
    SIM_TRY(grape__sim_dev_alloc(&v->dptr, g->size));
    m->nvars++;
    v->name = g->name;
    v->size = g->size;
    if (g->init != NULL)
      memcpy((void*)(uintptr_t)v->dptr, g->init, g->size);
    else
      memset((void*)(uintptr_t)v->dptr, 0, g->size);
  }
  return CUDA_SUCCESS;
}

static CUresult module_load(const void* image, size_t size, int is_library, sim_module_t** out) {
  SIM_TRY(load_ready(is_library));
  if (image == NULL || out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  sim_module_t* m = TAKE(free_modules, sim_module_t);
  if (m == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  m->is_library = is_library;
  grape_cubin_err_t err;
  /* Only the sm_90 image is decompressed and parsed (fatbins of real
   * libraries carry many architectures). */
  if (grape_image_load_arch(image, size, SIM_ARCH, &m->fb, &err) != 0) {
    grape__sim_logf("cannot load image: %s", err.msg);
    GIVE_BACK(free_modules, sim_module_t, m);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  const grape_image_t* img = grape_fatbin_select(m->fb, SIM_ARCH);
  if (img == NULL) {
    module_free(m);
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  for (uint32_t i = 0; i < img->nkernels; i++) {
    const grape_kernel_t* k = &img->kernels[i];
    struct CUfunc_st* f = func_new(m, k->name);
    if (f == NULL || module_add_func(m, f) != 0) {
      if (f != NULL && (m->nfuncs == 0 || m->funcs[m->nfuncs - 1] != f))
        func_free(f);
      module_free(m);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (k->params != NULL) {
      f->nparams = k->nparams;
      f->poff = calloc(k->nparams ? k->nparams : 1, sizeof(uint32_t));
      f->psize = calloc(k->nparams ? k->nparams : 1, sizeof(uint32_t));
      if (f->poff == NULL || f->psize == NULL) {
        module_free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      for (uint32_t j = 0; j < k->nparams; j++) {
        f->poff[j] = k->params[j].offset;
        f->psize[j] = k->params[j].size;
      }
      f->param_bytes = k->param_bytes;
      f->params_known = 1;
    } else if (k->nparams == 0 && k->param_bytes == 0) {
      f->params_known = 1;   /* a kernel without parameters */
    }
    f->registers = k->registers;
    f->shared_bytes = (int)k->shared_bytes;
    f->max_threads = k->max_threads;
    f->cuda_api_version = k->cuda_api_version;
    if (!f->params_known)
      params_from_body(f);
  }
  CUresult r = module_vars(m, img);
  if (r != CUDA_SUCCESS) {
    module_free(m);
    return r;
  }
  if (grape__sim_reg_add(m, K_MODULE) != 0) {
    module_free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *out = m;
  return CUDA_SUCCESS;
}

static CUresult module_get(sim_module_t* m, const char* name, struct CUfunc_st** out) {
  if (out == NULL || name == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(m, K_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&bind_lock);
  CUresult r = CUDA_ERROR_NOT_FOUND;
  for (uint32_t i = 0; i < m->nfuncs; i++)
    if (strcmp(m->funcs[i]->name, name) == 0) {
      *out = m->funcs[i];
      r = CUDA_SUCCESS;
      break;
    }
  pthread_mutex_unlock(&bind_lock);
  return r;
}

/* Function objects are never freed (an unloaded one waits for reuse), so a
 * stale pointer may be read; its registration and incarnation tell whether
 * it is still the function the work was made for. gen is written before the
 * object is registered (the registry's lock orders the two), and needs no
 * lock of its own: callers may hold grape__sim.lock, which bind_lock may not
 * be taken under. */
int grape__sim_work_func_live(const sim_work_t* w) {
  if (w->kind != OP_KERNEL)
    return 1;
  return grape__sim_reg_has(w->u.k.f, K_FUNC) && w->u.k.f->gen == w->u.k.fgen;
}

static CUresult module_unload(sim_module_t* m) {
  if (!grape__sim_reg_has(m, K_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  grape__sim_reg_del(m);
  (void)grape__sim_wait_all();   /* no queued launch may still use its functions */
  module_free(m);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleLoadData(CUmodule* mod, const void* image) {
  SIM_COUNT(cuModuleLoadData);
  if (mod == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return module_load(image, 0, 0, (sim_module_t**)mod);
}

SIM_EXPORT CUresult cuModuleLoadDataEx(CUmodule* mod, const void* image, unsigned int n,
                                       CUjit_option* opts, void** vals) {
  SIM_COUNT(cuModuleLoadDataEx);
  (void)n;
  (void)opts;
  (void)vals;
  if (mod == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return module_load(image, 0, 0, (sim_module_t**)mod);
}

SIM_EXPORT CUresult cuModuleLoadFatBinary(CUmodule* mod, const void* image) {
  SIM_COUNT(cuModuleLoadFatBinary);
  if (mod == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return module_load(image, 0, 0, (sim_module_t**)mod);
}

/* A module or library from an image file, as Triton's and PyTorch's
 * launchers load the cubins they compile: the file is read whole and loaded
 * as the same bytes in memory would be (cubin/ keeps its own copy). */
static CUresult module_load_file(const char* path, int is_library, sim_module_t** out) {
  SIM_TRY(load_ready(is_library));
  if (path == NULL || out == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  FILE* f = fopen(path, "rb");
  if (f == NULL) {
    grape__sim_logf("cannot open module file %s: %s", path, strerror(errno));
    return CUDA_ERROR_FILE_NOT_FOUND;
  }
  uint8_t* buf = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    uint8_t* grown = grape__grow(buf, &cap, size + 1, 1, 1 << 16);
    if (grown == NULL) {
      free(buf);
      fclose(f);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    buf = grown;
    size_t n = fread(buf + size, 1, cap - size, f);
    size += n;
    if (n == 0)
      break;
  }
  int bad = ferror(f);
  fclose(f);
  CUresult r = bad || size == 0 ? CUDA_ERROR_INVALID_IMAGE : module_load(buf, size, is_library, out);
  if (bad)
    grape__sim_logf("cannot read module file %s", path);
  free(buf);
  return r;
}

SIM_EXPORT CUresult cuModuleLoad(CUmodule* mod, const char* fname) {
  SIM_COUNT(cuModuleLoad);
  return module_load_file(fname, 0, (sim_module_t**)mod);
}

SIM_EXPORT CUresult cuModuleUnload(CUmodule mod) {
  SIM_COUNT(cuModuleUnload);
  return module_unload((sim_module_t*)mod);
}

SIM_EXPORT CUresult cuModuleGetFunction(CUfunction* f, CUmodule mod, const char* name) {
  SIM_COUNT(cuModuleGetFunction);
  return module_get((sim_module_t*)mod, name, (struct CUfunc_st**)f);
}

SIM_EXPORT CUresult cuModuleGetFunctionCount(unsigned int* n, CUmodule mod) {
  SIM_COUNT(cuModuleGetFunctionCount);
  if (n == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(mod, K_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  *n = ((sim_module_t*)mod)->nfuncs;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  SIM_COUNT(cuModuleGetLoadingMode);
  if (mode == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_EAGER_LOADING;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option* jo,
                                      void** jv, unsigned int nj, CUlibraryOption* lo,
                                      void** lv, unsigned int nl) {
  SIM_COUNT(cuLibraryLoadData);
  (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;   /* no JIT; every load is eager */
  if (lib == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  return module_load(code, 0, 1, (sim_module_t**)lib);
}

SIM_EXPORT CUresult cuLibraryLoadFromFile(CUlibrary* lib, const char* path, CUjit_option* jo,
                                          void** jv, unsigned int nj, CUlibraryOption* lo,
                                          void** lv, unsigned int nl) {
  SIM_COUNT(cuLibraryLoadFromFile);
  (void)jo, (void)jv, (void)nj, (void)lo, (void)lv, (void)nl;   /* no JIT; every load is eager */
  return module_load_file(path, 1, (sim_module_t**)lib);
}

SIM_EXPORT CUresult cuLibraryUnload(CUlibrary lib) {
  SIM_COUNT(cuLibraryUnload);
  return module_unload((sim_module_t*)lib);
}

SIM_EXPORT CUresult cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  SIM_COUNT(cuLibraryGetKernel);
  return module_get((sim_module_t*)lib, name, (struct CUfunc_st**)k);
}

/* cuModuleGetGlobal / cuLibraryGetGlobal: the variable's address and size,
 * each optional. */
static CUresult module_global(CUdeviceptr* dptr, size_t* bytes, sim_module_t* m, const char* name) {
  SIM_TRY(grape__sim_check_init());
  if (name == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(m, K_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  for (uint32_t i = 0; i < m->nvars; i++)
    if (strcmp(m->vars[i].name, name) == 0) {
      if (dptr != NULL)
        *dptr = m->vars[i].dptr;
      if (bytes != NULL)
        *bytes = m->vars[i].size;
      return CUDA_SUCCESS;
    }
  return CUDA_ERROR_NOT_FOUND;
}

SIM_EXPORT CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule mod,
                                         const char* name) {
  SIM_COUNT(cuModuleGetGlobal_v2);
  return module_global(dptr, bytes, (sim_module_t*)mod, name);
}

SIM_EXPORT CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary lib,
                                       const char* name) {
  SIM_COUNT(cuLibraryGetGlobal);
  return module_global(dptr, bytes, (sim_module_t*)lib, name);
}

SIM_EXPORT CUresult cuLibraryGetModule(CUmodule* mod, CUlibrary lib) {
  SIM_COUNT(cuLibraryGetModule);
  if (mod == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(lib, K_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  *mod = (CUmodule)lib;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuLibraryGetKernelCount(unsigned int* n, CUlibrary lib) {
  SIM_COUNT(cuLibraryGetKernelCount);
  if (n == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_reg_has(lib, K_MODULE))
    return CUDA_ERROR_INVALID_HANDLE;
  *n = ((sim_module_t*)lib)->nfuncs;
  return CUDA_SUCCESS;
}

/* ---- Functions and kernels ---- */

static struct CUfunc_st* as_func(const void* h) {
  return grape__sim_reg_has(h, K_FUNC) ? (struct CUfunc_st*)h : NULL;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction* f, CUkernel k) {
  SIM_COUNT(cuKernelGetFunction);
  if (f == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (as_func(k) == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  *f = (CUfunction)k;
  return CUDA_SUCCESS;
}

static CUresult get_name(const void* h, const char** name) {
  if (name == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  *name = f->name;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuKernelGetName(const char** name, CUkernel k) {
  SIM_COUNT(cuKernelGetName);
  return get_name(k, name);
}

SIM_EXPORT CUresult cuFuncGetName(const char** name, CUfunction f) {
  SIM_COUNT(cuFuncGetName);
  return get_name(f, name);
}

static CUresult param_info(const void* h, size_t idx, size_t* off, size_t* size) {
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!f->params_known || idx >= f->nparams)
    return CUDA_ERROR_INVALID_VALUE;
  if (off != NULL)
    *off = f->poff[idx];
  if (size != NULL)
    *size = f->psize[idx];
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction f, size_t idx, size_t* off, size_t* size) {
  SIM_COUNT(cuFuncGetParamInfo);
  return param_info(f, idx, off, size);
}

SIM_EXPORT CUresult cuKernelGetParamInfo(CUkernel k, size_t idx, size_t* off, size_t* size) {
  SIM_COUNT(cuKernelGetParamInfo);
  return param_info(k, idx, off, size);
}

static CUresult func_attr(int* v, CUfunction_attribute a, struct CUfunc_st* f) {
  if (v == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = grape__sim_max_threads(f); break;
  case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = f->shared_bytes; break;
  case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_NUM_REGS: *v = f->registers >= 0 ? f->registers : 32; break;
  case CU_FUNC_ATTRIBUTE_PTX_VERSION: *v = SIM_ARCH; break;
  case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *v = SIM_ARCH; break;
  case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA: *v = 0; break;
  case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *v = f->max_dyn_smem; break;
  case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *v = -1; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetAttribute(int* v, CUfunction_attribute a, CUfunction h) {
  SIM_COUNT(cuFuncGetAttribute);
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  return func_attr(v, a, f);
}

SIM_EXPORT CUresult cuKernelGetAttribute(int* v, CUfunction_attribute a, CUkernel k, CUdevice d) {
  SIM_COUNT(cuKernelGetAttribute);
  if (d != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  struct CUfunc_st* f = as_func(k);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  return func_attr(v, a, f);
}

SIM_EXPORT CUresult cuFuncSetAttribute(CUfunction h, CUfunction_attribute a, int v) {
  SIM_COUNT(cuFuncSetAttribute);
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (a == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (v < 0 || v > 232448 - f->shared_bytes)
      return CUDA_ERROR_INVALID_VALUE;
    f->max_dyn_smem = v;
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncSetCacheConfig(CUfunction h, CUfunc_cache c) {
  SIM_COUNT(cuFuncSetCacheConfig);
  (void)c;
  return as_func(h) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

SIM_EXPORT CUresult cuFuncGetModule(CUmodule* mod, CUfunction h) {
  SIM_COUNT(cuFuncGetModule);
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  if (mod == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  *mod = (CUmodule)f->mod;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncIsLoaded(CUfunctionLoadingState* st, CUfunction h) {
  SIM_COUNT(cuFuncIsLoaded);
  if (st == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (as_func(h) == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  *st = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncLoad(CUfunction h) {
  SIM_COUNT(cuFuncLoad);
  return as_func(h) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* ---- Launches ---- */

CUresult grape__sim_make_kernel_work(struct CUfunc_st* f, const unsigned grid[3],
                                     const unsigned block[3], unsigned smem, void** params,
                                     void** extra, sim_work_t* w) {
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  for (int i = 0; i < 3; i++)
    if (grid[i] == 0 || block[i] == 0)
      return CUDA_ERROR_INVALID_VALUE;
  if (block[0] > 1024 || block[1] > 1024 || block[2] > 64 ||
      (uint64_t)block[0] * block[1] * block[2] > 1024 ||
      (f->max_threads > 0 && (uint64_t)block[0] * block[1] * block[2] > (uint64_t)f->max_threads))
    return CUDA_ERROR_INVALID_VALUE;
  if (grid[0] > 2147483647u || grid[1] > 65535 || grid[2] > 65535)
    return CUDA_ERROR_INVALID_VALUE;
  if ((int)smem > f->max_dyn_smem)
    return CUDA_ERROR_INVALID_VALUE;
  if (!grape__sim_regs_fit(f, block[0] * block[1] * block[2]))
    return CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES;
  SIM_TRY(grape__sim_bind_body(f));
  memset(w, 0, sizeof(*w));
  w->kind = OP_KERNEL;
  w->u.k.f = f;
  w->u.k.fgen = f->gen;
  memcpy(w->u.k.grid, grid, sizeof(w->u.k.grid));
  memcpy(w->u.k.block, block, sizeof(w->u.k.block));
  w->u.k.smem = smem;
  if (params != NULL && extra != NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (extra != NULL) {
    void* buf = NULL;
    size_t size = 0;
    for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buf = extra[i + 1];
      else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
        size = *(size_t*)extra[i + 1];
      else
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (buf == NULL || (f->params_known && size < f->param_bytes))
      return CUDA_ERROR_INVALID_VALUE;
    w->u.k.params = malloc(size ? size : 1);
    if (w->u.k.params == NULL)
      return CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(w->u.k.params, buf, size);
    w->u.k.params_size = (uint32_t)size;
    if (!f->params_known) {
      free(w->u.k.params);
      return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
  }
  if (!f->params_known) {
    grape__sim_logf("parameter layout of kernel %s is unknown", f->name);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  if (f->nparams > 0 && params == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  w->u.k.params_size = f->param_bytes;
  w->u.k.params = calloc(1, f->param_bytes ? f->param_bytes : 1);
  if (w->u.k.params == NULL)
    return CUDA_ERROR_OUT_OF_MEMORY;
  for (uint32_t i = 0; i < f->nparams; i++)
    memcpy(w->u.k.params + f->poff[i], params[i], f->psize[i]);
  return CUDA_SUCCESS;
}

static CUresult launch(CUfunction h, const unsigned grid[3], const unsigned block[3], unsigned smem,
                       CUstream hs, void** params, void** extra, int ptds) {
  struct CUstream_st* s;
  CUresult r = grape__sim_stream(hs, ptds, &s);
  if (r != CUDA_SUCCESS)
    return r;
  struct CUfunc_st* f = as_func(h);
  if (f == NULL)
    return CUDA_ERROR_INVALID_HANDLE;
  sim_work_t w;
  r = grape__sim_make_kernel_work(f, grid, block, smem, params, extra, &w);
  if (r != CUDA_SUCCESS)
    return r;
  return grape__sim_submit(s, &w, NULL, 0);
}

SIM_TWINS(cuLaunchKernel, _ptsz,
          (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
           unsigned bz, unsigned smem, CUstream s, void** params, void** extra),
          launch, f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, smem, s, params, extra)

static CUresult launch_ex(const CUlaunchConfig* c, CUfunction f, void** params, void** extra,
                          int ptds) {
  if (c == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  if (c->numAttrs > 0 && c->attrs == NULL)
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < c->numAttrs; i++) {
    const CUlaunchAttribute* a = &c->attrs[i];
    if (a->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
      unsigned n = a->value.clusterDim.x * a->value.clusterDim.y * a->value.clusterDim.z;
      if (n == 0 || n > 16 || c->gridDimX % a->value.clusterDim.x != 0 ||
          c->gridDimY % a->value.clusterDim.y != 0 || c->gridDimZ % a->value.clusterDim.z != 0)
        return CUDA_ERROR_INVALID_VALUE;
    } else if (a->id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE && a->value.cooperative) {
      /* A cooperative grid must fit on the device at once. */
      if ((uint64_t)c->gridDimX * c->gridDimY * c->gridDimZ > 132u * 32u)
        return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
    }
  }
  return launch(f, (unsigned[3]){c->gridDimX, c->gridDimY, c->gridDimZ},
                (unsigned[3]){c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
                c->hStream, params, extra, ptds);
}

SIM_TWINS(cuLaunchKernelEx, _ptsz,
          (const CUlaunchConfig* c, CUfunction f, void** params, void** extra),
          launch_ex, c, f, params, extra)

static CUresult launch_coop(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                            unsigned by, unsigned bz, unsigned smem, CUstream s, void** params,
                            int ptds) {
  if ((uint64_t)gx * gy * gz > 132u * 32u)
    return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  return launch(f, (unsigned[3]){gx, gy, gz}, (unsigned[3]){bx, by, bz}, smem, s, params, NULL,
                ptds);
}

SIM_TWINS(cuLaunchCooperativeKernel, _ptsz,
          (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
           unsigned bz, unsigned smem, CUstream s, void** params),
          launch_coop, f, gx, gy, gz, bx, by, bz, smem, s, params)

/* Function info (see funcinfo.h for the design). */
#include "funcinfo.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
#include "graphcache/fingerprint.h"
#include "grape/cubin.h"
#include "internal.h"
#include "log.h"
#include "real.h"
#include "util/grow.h"

#define TABLE_BITS 16   /* 65536 handles: 1 MiB of table, touched sparsely */
#define TABLE_SIZE ((size_t)1 << TABLE_BITS)

typedef struct slot_s {
  const void* key;      /* 0 = free; claimed by CAS */
  grape_func_t* info;   /* published after the key */
} slot_t;

static slot_t* table;
static slot_t* images;                           /* handle -> image (info = image ptr) */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

static inline size_t mix(const void* p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= UINT64_C(0xff51afd7ed558ccd);
  x ^= x >> 33;
  return (size_t)x & (TABLE_SIZE - 1);
}

static int tables_init(void) {
  pthread_mutex_lock(&init_lock);
  if (table == NULL) {
    slot_t* im = calloc(TABLE_SIZE, sizeof(slot_t));
    slot_t* t = calloc(TABLE_SIZE, sizeof(slot_t));
    if (t && im) {
      images = im;
      __atomic_store_n(&table, t, __ATOMIC_RELEASE);
    } else {
      free(t);
      free(im);
    }
  }
  pthread_mutex_unlock(&init_lock);
  return table ? 0 : -1;
}

/* Finds key's slot in t; with create, claims a free one. NULL: absent / full. */
static slot_t* find(slot_t* t, const void* key, int create) {
  size_t i = mix(key);
  for (size_t n = 0; n < TABLE_SIZE; n++, i = (i + 1) & (TABLE_SIZE - 1)) {
    const void* k = __atomic_load_n(&t[i].key, __ATOMIC_ACQUIRE);
    if (k == key)
      return &t[i];
    if (k == NULL) {
      if (!create)
        return NULL;
      const void* expected = NULL;
      if (__atomic_compare_exchange_n(&t[i].key, &expected, key, 0, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE))
        return &t[i];
      if (expected == key)
        return &t[i];
    }
  }
  grape_log_warn_once("function table full: further kernels are counted without parameters");
  return NULL;
}

static grape_func_t* info_new(const void* h, grape_handle_kind_t kind) {
  grape_func_t* f = calloc(1, sizeof(*f));
  if (f == NULL)
    return NULL;
  f->kind = kind;
  f->id = (uint64_t)(uintptr_t)h;
  f->handle = h;
  f->nparams = -1;
  f->layout_source = "none";
  return f;
}

/* The info of slot s, creating it (lock-free: the loser frees its copy). */
static grape_func_t* slot_info(slot_t* s, const void* h, grape_handle_kind_t kind) {
  grape_func_t* f = __atomic_load_n(&s->info, __ATOMIC_ACQUIRE);
  if (f != NULL)
    return f;
  grape_func_t* n = info_new(h, kind);
  if (n == NULL)
    return NULL;
  grape_func_t* expected = NULL;
  if (__atomic_compare_exchange_n(&s->info, &expected, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return n;
  free(n);
  return expected;
}

grape_func_t* grape__func_peek(const void* h) {
  slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL)
    return NULL;
  slot_t* s = find(t, h, 0);
  return s ? __atomic_load_n(&s->info, __ATOMIC_ACQUIRE) : NULL;
}

/* Sets f's name if it has none. copy: the caller's string may not outlive the
 * call (driver registrations), so it is copied. Under resolve_lock. */
static void set_name(grape_func_t* f, const char* name, int copy) {
  if (f->name != NULL || name == NULL)
    return;
  const char* n = copy ? strdup(name) : name;
  if (n == NULL)
    return;
  f->owns_name = copy;
  __atomic_store_n(&f->name, n, __ATOMIC_RELEASE);
}

/* ---- Retired infos: forgotten by an unload or replaced, kept until exit ---- */

static pthread_mutex_t retire_lock = PTHREAD_MUTEX_INITIALIZER;
static grape_func_t** retired;
static size_t nretired, retired_cap;

/* Keeps f (once) for the report; a name it does not own is copied when the
 * function was launched (the report may name it), dropped otherwise (its image
 * is going away). */
static void retire(grape_func_t* f) {
  pthread_mutex_lock(&retire_lock);
  if (!f->retired) {
    f->retired = 1;
    if (f->name != NULL && !f->owns_name) {
      char* copy = __atomic_load_n(&f->resolved, __ATOMIC_ACQUIRE) ? strdup(f->name) : NULL;
      f->name = copy;
      f->owns_name = copy != NULL;
    }
    grape_func_t** v = grape__grow(retired, &retired_cap, nretired + 1, sizeof(*retired), 64);
    if (v != NULL) {
      retired = v;
      retired[nretired++] = f;
    }   /* else leaked: out of memory, and it must stay valid */
  }
  pthread_mutex_unlock(&retire_lock);
}

static void drop_thread_caches(void) {
  __atomic_add_fetch(&grape__func_generation, 1, __ATOMIC_RELAXED);
}

void grape__func_register(const void* h, grape_handle_kind_t kind, const char* name,
                          const void* image) {
  if (h == NULL || (table == NULL && tables_init()))
    return;
  slot_t* s = find(table, h, 1);
  grape_func_t* f = s ? slot_info(s, h, kind) : NULL;
  if (f == NULL)
    return;
  int copy = kind != GRAPE_FN_RUNTIME;
  pthread_mutex_lock(&resolve_lock);
  /* A handle value seen before for another kernel (reused after an unload, or
   * an alias's slot): a new info, so that no launch follows the old layout. */
  if (f->handle != h || (f->name != NULL && name != NULL && strcmp(f->name, name) != 0) ||
      (image != NULL && f->image != NULL && f->image != image)) {
    grape_func_t* n = info_new(h, kind);
    if (n != NULL && __atomic_compare_exchange_n(&s->info, &f, n, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
      if (f->handle == h)
        retire(f);
      f = n;
      drop_thread_caches();
    } else {
      free(n);
    }
  }
  set_name(f, name, copy);
  if (image != NULL)
    f->image = image;
  if (kind == GRAPE_FN_RUNTIME)
    f->stub = 1;
  pthread_mutex_unlock(&resolve_lock);
}

void grape__func_alias(const void* alias, grape_handle_kind_t kind, const void* of) {
  if (alias == NULL || alias == of || (table == NULL && tables_init()))
    return;
  grape_func_t* f = grape__func_peek(of);
  slot_t* s = find(table, alias, 1);
  if (s == NULL)
    return;
  if (f == NULL) {
    slot_info(s, alias, kind);
    return;
  }
  /* The alias follows the current info of `of`, whatever it held before. */
  grape_func_t* old = __atomic_exchange_n(&s->info, f, __ATOMIC_ACQ_REL);
  if (old != NULL && old != f) {
    if (old->handle == alias)
      retire(old);
    drop_thread_caches();
  }
}

typedef struct image_s {
  const void* raw;             /* fatbin wrapper, parsed lazily; NULL when parsed at load */
  grape_fatbin_t* parsed;
  int tried;                   /* a lazy parse was attempted (under resolve_lock) */
} image_t;

static void image_put(const void* handle, const void* raw, grape_fatbin_t* fb) {
  if (handle == NULL || (table == NULL && tables_init())) {
    grape_fatbin_free(fb);
    return;
  }
  image_t* im = calloc(1, sizeof(*im));
  slot_t* s = im ? find(images, handle, 1) : NULL;
  if (s == NULL) {
    free(im);
    grape_fatbin_free(fb);
    return;
  }
  im->raw = raw;
  im->parsed = fb;
  im->tried = fb != NULL;
  /* A handle value reused after an unload replaces the old image (kept: a
   * function info may still point at it). */
  __atomic_store_n(&s->info, (grape_func_t*)(void*)im, __ATOMIC_RELEASE);
}

void grape__image_register(const void* handle, const void* image) {
  image_put(handle, image, NULL);
}

void grape__image_register_parsed(const void* handle, grape_fatbin_t* fb) {
  image_put(handle, NULL, fb);
}

/* SM version of the current device (90 for sm_90), or 0 when unknown: only
 * the image this device loads is parsed (grape_image_load_arch). Asked of the
 * driver once, after a launch or a module load, when a context exists. */
static int device_arch(void) {
  static int arch = -1;
  if (arch >= 0)
    return arch;
  typedef CUresult (*ctx_dev_fn)(CUdevice*);
  typedef CUresult (*attr_fn)(int*, CUdevice_attribute, CUdevice);
  ctx_dev_fn ctx_dev = (ctx_dev_fn)grape__real_driver("cuCtxGetDevice");
  attr_fn attr = (attr_fn)grape__real_driver("cuDeviceGetAttribute");
  CUdevice dev;
  int major = 0, minor = 0, rc = 1;
  if (ctx_dev != NULL && attr != NULL)
    GRAPE_NO_REENTRY(rc = ctx_dev(&dev) == CUDA_SUCCESS &&
                          attr(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev) == CUDA_SUCCESS &&
                          attr(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev) == CUDA_SUCCESS
                      ? 0 : 1);
  arch = rc == 0 ? major * 10 + minor : 0;
  return arch;
}

int grape__image_load(const void* image, grape_fatbin_t** out, grape_cubin_err_t* err) {
  int arch;
  pthread_mutex_lock(&resolve_lock);
  arch = device_arch();
  pthread_mutex_unlock(&resolve_lock);
  return grape_image_load_arch(image, 0, arch, out, err);
}

/* The parsed image of handle, parsing it now if needed. Under resolve_lock. */
static grape_fatbin_t* image_get(const void* handle) {
  if (table == NULL || handle == NULL)
    return NULL;
  slot_t* s = find(images, handle, 0);
  image_t* im = s ? (image_t*)(void*)__atomic_load_n(&s->info, __ATOMIC_ACQUIRE) : NULL;
  if (im == NULL)
    return NULL;
  if (!im->tried) {
    im->tried = 1;
    grape_cubin_err_t err;
    if (grape_image_load_arch(im->raw, 0, device_arch(), &im->parsed, &err) != 0) {
      im->parsed = NULL;
      grape_log_debug("kernel image not parsed: %s", err.msg);
    }
  }
  return im->parsed;
}

void grape__func_forget_image(const void* image) {
  slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL || image == NULL)
    return;
  pthread_mutex_lock(&resolve_lock);
  for (size_t i = 0; i < TABLE_SIZE; i++) {
    grape_func_t* f = __atomic_load_n(&t[i].info, __ATOMIC_ACQUIRE);
    if (f == NULL || f->image != image)
      continue;
    __atomic_store_n(&t[i].info, NULL, __ATOMIC_RELEASE);
    retire(f);
  }
  /* The image itself stays registered (the trace writer names it at exit); a
   * new registration of its handle value replaces it (image_put). */
  pthread_mutex_unlock(&resolve_lock);
  drop_thread_caches();
}

const char* grape__func_display_name(grape_func_t* f) {
  if (f == NULL || f->name == NULL)
    return "(unnamed)";
  char* d = __atomic_load_n(&f->demangled, __ATOMIC_ACQUIRE);
  if (d == NULL) {
    d = grape_demangle(f->name);
    char* expected = NULL;
    if (d != NULL && !__atomic_compare_exchange_n(&f->demangled, &expected, d, 0,
                                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      free(d);
      d = expected;
    }
  }
  return d ? d : f->name;
}

const grape_fatbin_t* grape__image_get(const void* handle) {
  pthread_mutex_lock(&resolve_lock);
  const grape_fatbin_t* fb = image_get(handle);
  pthread_mutex_unlock(&resolve_lock);
  return fb;
}

void grape__image_each(void (*fn)(const void* handle, void* arg), void* arg) {
  slot_t* im = __atomic_load_n(&images, __ATOMIC_ACQUIRE);
  if (im == NULL)
    return;
  for (size_t i = 0; i < TABLE_SIZE; i++)
    if (__atomic_load_n(&im[i].info, __ATOMIC_ACQUIRE) != NULL)
      fn(im[i].key, arg);
}

/* ---- Resolution (first launch of a handle; under resolve_lock) ---- */

typedef CUresult (*param_info_fn)(void*, size_t, size_t*, size_t*);
typedef CUresult (*name_fn)(const char**, void*);

/* Asks fn(h, i, &off, &size) for i = 0, 1, ... until it fails. */
static int query_layout(grape_func_t* f, const void* h, param_info_fn fn) {
  grape_func_param_t tmp[1024];
  int n = 0, rc = 0;
  for (; n < 1024; n++) {
    size_t off, size;
    GRAPE_NO_REENTRY(rc = fn((void*)(uintptr_t)h, (size_t)n, &off, &size));
    if (rc != 0)
      break;
    tmp[n] = (grape_func_param_t){(uint32_t)off, (uint32_t)size};
  }
  /* The end of the list is CUDA_ERROR_INVALID_VALUE; anything else at index 0
   * means the call is unsupported, and n == 1024 means too many. */
  if ((n == 0 && rc != CUDA_ERROR_INVALID_VALUE) || n == 1024)
    return -1;
  f->params = n ? malloc((size_t)n * sizeof(*f->params)) : NULL;
  if (n && f->params == NULL)
    return -1;
  memcpy(f->params, tmp, (size_t)n * sizeof(*tmp));
  f->nparams = n;
  f->param_bytes = 0;
  for (int i = 0; i < n; i++)
    if (tmp[i].offset + tmp[i].size > f->param_bytes)
      f->param_bytes = tmp[i].offset + tmp[i].size;
  return 0;
}

static int layout_from_image(grape_func_t* f) {
  grape_fatbin_t* fb = f->name ? image_get(f->image) : NULL;
  if (fb == NULL)
    return -1;
  int rc = -1;
  for (size_t i = 0; i < grape_fatbin_count(fb) && rc != 0; i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    const grape_kernel_t* k = grape_image_find_kernel(img, f->name);
    if (k == NULL || (k->nparams > 0 && k->params == NULL))
      continue;
    f->params = k->nparams ? malloc(k->nparams * sizeof(*f->params)) : NULL;
    if (k->nparams && f->params == NULL)
      break;
    for (uint32_t j = 0; j < k->nparams; j++)
      f->params[j] = (grape_func_param_t){k->params[j].offset, k->params[j].size};
    f->nparams = (int)k->nparams;
    f->param_bytes = k->param_bytes;
    rc = 0;
  }
  return rc;
}

static void find_holes(grape_func_t* f) {
  uint32_t sum = 0;
  int packed8 = 1;
  for (int i = 0; i < f->nparams; i++) {
    sum += f->params[i].size;
    packed8 &= f->params[i].size == 8 && f->params[i].offset == 8 * (uint32_t)i;
  }
  f->holes = sum != f->param_bytes;
  f->packed8 = packed8 && f->param_bytes == 8 * (uint32_t)f->nparams;
}

/* The driver function behind handle h into f->drv. A registered host stub is
 * asked of the runtime (cudaGetFuncBySymbol, which succeeds for a registered
 * stub, so the thread's last error is untouched); any other runtime handle is
 * a cudaKernel_t, which is a CUkernel. */
static void find_driver_function(grape_func_t* f, const void* h) {
  f->drv = (void*)(uintptr_t)h;
  f->drv_kernel = f->kind == GRAPE_FN_KERNEL;
  if (f->kind != GRAPE_FN_RUNTIME)
    return;
  f->drv_kernel = 1;
  if (!f->stub)
    return;
  typedef int (*by_symbol_fn)(void**, const void*);
  by_symbol_fn by_symbol = (by_symbol_fn)grape__real_runtime("cudaGetFuncBySymbol");
  void* cf = NULL;
  int rc = 1;
  if (by_symbol != NULL)
    GRAPE_NO_REENTRY(rc = by_symbol(&cf, h));
  f->drv = rc == 0 ? cf : NULL;
  f->drv_kernel = 0;
}

/* The driver's query `name` for f->drv: the CUkernel form first when drv is
 * a CUkernel, then the CUfunction form (which accepts a CUkernel too). */
static void* driver_query(const grape_func_t* f, const char* kernel_form, const char* func_form,
                          int second) {
  if (!f->drv_kernel)
    return second ? NULL : grape__real_driver(func_form);
  return grape__real_driver(second ? func_form : kernel_form);
}

/* Name and parameter layout from the driver, else from the image. Only driver
 * queries: a failing runtime call would set the thread's last error, which the
 * program reads with cudaGetLastError after its launch. */
static void resolve(grape_func_t* f, const void* h) {
  find_driver_function(f, h);
  for (int second = 0; second < 2 && f->name == NULL && f->drv != NULL; second++) {
    name_fn fn = (name_fn)driver_query(f, "cuKernelGetName", "cuFuncGetName", second);
    const char* name = NULL;
    int rc = 1;
    if (fn != NULL)
      GRAPE_NO_REENTRY(rc = fn(&name, f->drv));
    if (rc == 0 && name != NULL)
      set_name(f, name, 1);
  }
  if (f->name != NULL)
    f->id = grape__fp_name(f->name);
  int found = 0;
  for (int second = 0; second < 2 && !found && f->drv != NULL; second++) {
    param_info_fn q =
        (param_info_fn)driver_query(f, "cuKernelGetParamInfo", "cuFuncGetParamInfo", second);
    found = q != NULL && query_layout(f, f->drv, q) == 0;
  }
  if (found)
    f->layout_source = "driver";
  else if (layout_from_image(f) == 0)
    f->layout_source = "cubin";
  else
    grape_log_debug("no parameter layout for kernel %s", f->name ? f->name : "(unnamed)");
  find_holes(f);
}

static grape_func_t* func_get_slow(const void* h, grape_handle_kind_t kind);

/* The per-thread cache of grape__func_get (funcinfo.h). */
unsigned grape__func_generation = 1;
__thread const void* grape__func_cache_key __attribute__((tls_model("initial-exec")));
__thread grape_func_t* grape__func_cache_info __attribute__((tls_model("initial-exec")));
__thread unsigned grape__func_cache_gen __attribute__((tls_model("initial-exec")));

grape_func_t* grape__func_get_slow(const void* h, grape_handle_kind_t kind) {
  grape_func_t* f = func_get_slow(h, kind);
  if (f != NULL && __atomic_load_n(&f->resolved, __ATOMIC_ACQUIRE)) {
    grape__func_cache_key = h;
    grape__func_cache_info = f;
    grape__func_cache_gen = __atomic_load_n(&grape__func_generation, __ATOMIC_RELAXED);
  }
  return f;
}

static grape_func_t* func_get_slow(const void* h, grape_handle_kind_t kind) {
  slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (__builtin_expect(t == NULL, 0)) {
    if (tables_init())
      return NULL;
    t = table;
  }
  slot_t* s = find(t, h, 1);
  if (s == NULL)
    return NULL;
  grape_func_t* f = __atomic_load_n(&s->info, __ATOMIC_ACQUIRE);
  if (__builtin_expect(f == NULL, 0) && (f = slot_info(s, h, kind)) == NULL)
    return NULL;
  if (__builtin_expect(!__atomic_load_n(&f->resolved, __ATOMIC_ACQUIRE), 0)) {
    pthread_mutex_lock(&resolve_lock);
    if (!f->resolved) {
      resolve(f, f->handle);
      __atomic_store_n(&f->resolved, 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&resolve_lock);
  }
  return f;
}

/* ---- Capture ---- */

size_t grape__capture_extra(void** extra, void* out, size_t cap) {
  const void* buf = NULL;
  size_t size = 0;
  for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL)
      size = *(const size_t*)extra[i + 1];
  }
  if (buf == NULL || size > cap)
    return 0;
  memcpy(out, buf, size);
  return size;
}

size_t grape__extra_size(void** extra) {
  for (int i = 0; i < 16 && extra[i] != CU_LAUNCH_PARAM_END; i += 2)
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1] != NULL)
      return *(const size_t*)extra[i + 1];
  return 0;
}

void grape__func_each(void (*fn)(const grape_func_t* f, void* arg), void* arg) {
  slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL)
    return;
  for (size_t i = 0; i < TABLE_SIZE; i++) {
    grape_func_t* f = __atomic_load_n(&t[i].info, __ATOMIC_ACQUIRE);
    if (f != NULL && t[i].key == f->handle)
      fn(f, arg);
  }
  pthread_mutex_lock(&retire_lock);
  for (size_t i = 0; i < nretired; i++)
    fn(retired[i], arg);
  pthread_mutex_unlock(&retire_lock);
}

static void info_free(grape_func_t* f) {
  if (f->owns_name)
    free((char*)f->name);
  free(f->demangled);
  free(f->params);
  free(f);
}

void grape__func_reset(int free_memory) {
  if (free_memory && table != NULL) {
    for (size_t i = 0; i < TABLE_SIZE; i++) {
      grape_func_t* f = table[i].info;
      if (f == NULL)
        continue;
      if (table[i].key != f->handle || f->retired)
        continue;   /* an alias: freed at its own handle; retired: below */
      info_free(f);
    }
    for (size_t i = 0; i < nretired; i++)
      info_free(retired[i]);
    free(retired);
    for (size_t i = 0; i < TABLE_SIZE; i++) {
      image_t* im = (image_t*)(void*)images[i].info;
      if (im != NULL) {
        grape_fatbin_free(im->parsed);
        free(im);
      }
    }
    free(table);
    free(images);
  }
  table = NULL;
  images = NULL;
  retired = NULL;
  nretired = retired_cap = 0;
  drop_thread_caches();
  pthread_mutex_init(&init_lock, NULL);
  pthread_mutex_init(&resolve_lock, NULL);
  pthread_mutex_init(&retire_lock, NULL);
}

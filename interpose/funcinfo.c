/* Function info (see funcinfo.h for the design). */
#include "funcinfo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_types.h"
#include "graphcache/fingerprint.h"
#include "grape/cubin.h"
#include "handles.h"
#include "images.h"
#include "state.h"
#include "log.h"
#include "real.h"
#include "util/grow.h"

static grape_handle_slot_t* table;   /* handle -> grape_func_t*; made on first use */
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t resolve_lock = PTHREAD_MUTEX_INITIALIZER;

/* Finds key's slot in t; with create, claims a free one. NULL: absent / full.
 * Inlined: every registration and every first launch of a handle probes. */
static inline __attribute__((always_inline)) grape_handle_slot_t* find(grape_handle_slot_t* t,
                                                                      const void* key, int create) {
  grape_handle_slot_t* s = grape__handle_slot(t, key, create);
  if (__builtin_expect(s == NULL && create, 0))
    grape_log_warn_once("function table full: further kernels are counted without parameters");
  return s;
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
static grape_func_t* slot_info(grape_handle_slot_t* s, const void* h, grape_handle_kind_t kind) {
  grape_func_t* f = grape__handle_value(s);
  if (f != NULL)
    return f;
  grape_func_t* n = info_new(h, kind);
  if (n == NULL)
    return NULL;
  void* expected = NULL;
  if (__atomic_compare_exchange_n(&s->value, &expected, n, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return n;
  free(n);
  return expected;
}

grape_func_t* grape__func_peek(const void* h) {
  grape_handle_slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL)
    return NULL;
  grape_handle_slot_t* s = find(t, h, 0);
  return s ? grape__handle_value(s) : NULL;
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

/* ---- Handles by image: what an unload forgets, without scanning the table ----
 * Every handle registered with an image (and every alias of such a handle) is
 * listed under the image, so that unloading it touches only its own handles:
 * a library of thousands of fatbins unregisters each at exit. Under
 * resolve_lock. */

typedef struct image_handles_s {
  const void* image;   /* NULL = free entry */
  const void** handles;
  size_t n, cap;
} image_handles_t;

static image_handles_t* by_image;
static size_t by_image_cap, by_image_len;

static image_handles_t* image_entry(const void* image, int create) {
  if (by_image_cap == 0 || (create && (by_image_len + 1) * 2 > by_image_cap)) {
    if (!create)
      return NULL;
    size_t ncap = by_image_cap ? by_image_cap * 2 : 256;
    image_handles_t* nv = calloc(ncap, sizeof(*nv));
    if (nv == NULL)
      return NULL;
    for (size_t i = 0; i < by_image_cap; i++) {
      if (by_image[i].image == NULL)
        continue;
      size_t j = grape__handle_hash(by_image[i].image) & (ncap - 1);
      while (nv[j].image != NULL)
        j = (j + 1) & (ncap - 1);
      nv[j] = by_image[i];
    }
    free(by_image);
    by_image = nv;
    by_image_cap = ncap;
  }
  size_t i = grape__handle_hash(image) & (by_image_cap - 1);
  for (; by_image[i].image != NULL; i = (i + 1) & (by_image_cap - 1))
    if (by_image[i].image == image)
      return &by_image[i];
  if (!create)
    return NULL;
  by_image[i].image = image;
  by_image_len++;
  return &by_image[i];
}

/* Lists handle h under image (out of memory: h is not listed, and an unload
 * leaves its info in place, as a driver that never reuses the value would). */
static void image_add_handle(const void* image, const void* h) {
  image_handles_t* e = image_entry(image, 1);
  if (e == NULL)
    return;
  const void** v = grape__grow(e->handles, &e->cap, e->n + 1, sizeof(*e->handles), 8);
  if (v == NULL)
    return;
  e->handles = v;
  e->handles[e->n++] = h;
}

void grape__func_changed(void) {
  __atomic_add_fetch(&grape__func_generation, 1, __ATOMIC_RELAXED);
}

void grape__func_register(const void* h, grape_handle_kind_t kind, const char* name,
                          const void* image) {
  grape_handle_slot_t* t = h != NULL ? grape__handle_table(&table, &init_lock) : NULL;
  grape_handle_slot_t* s = t != NULL ? find(t, h, 1) : NULL;
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
    void* cur = f;
    if (n != NULL && __atomic_compare_exchange_n(&s->value, &cur, n, 0, __ATOMIC_ACQ_REL,
                                                 __ATOMIC_ACQUIRE)) {
      if (f->handle == h)
        retire(f);
      f = n;
      grape__func_changed();
    } else {
      free(n);
      f = cur;   /* what the slot holds now */
    }
  }
  set_name(f, name, copy);
  if (image != NULL) {
    if (f->image != image)
      image_add_handle(image, h);
    f->image = image;
  }
  if (kind == GRAPE_FN_RUNTIME)
    f->stub = 1;
  pthread_mutex_unlock(&resolve_lock);
}

void grape__func_alias(const void* alias, grape_handle_kind_t kind, const void* of) {
  grape_handle_slot_t* t = alias != NULL && alias != of ? grape__handle_table(&table, &init_lock) : NULL;
  if (t == NULL)
    return;
  grape_func_t* f = grape__func_peek(of);
  grape_handle_slot_t* s = find(t, alias, 1);
  if (s == NULL)
    return;
  if (f == NULL) {
    slot_info(s, alias, kind);
    return;
  }
  /* The alias follows the current info of `of`, whatever it held before. */
  if (f->image != NULL) {
    pthread_mutex_lock(&resolve_lock);
    image_add_handle(f->image, alias);
    pthread_mutex_unlock(&resolve_lock);
  }
  grape_func_t* old = __atomic_exchange_n(&s->value, f, __ATOMIC_ACQ_REL);
  if (old != NULL && old != f) {
    if (old->handle == alias)
      retire(old);
    grape__func_changed();
  }
}

void grape__func_forget_image(const void* image) {
  grape_handle_slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL || image == NULL)
    return;
  pthread_mutex_lock(&resolve_lock);
  image_handles_t* e = image_entry(image, 0);
  for (size_t i = 0; e != NULL && i < e->n; i++) {
    grape_handle_slot_t* s = find(t, e->handles[i], 0);
    grape_func_t* f = s ? grape__handle_value(s) : NULL;
    if (f == NULL || f->image != image)
      continue;   /* already forgotten, or since registered for another image */
    __atomic_store_n(&s->value, NULL, __ATOMIC_RELEASE);
    retire(f);
  }
  if (e != NULL)
    e->n = 0;   /* the entry stays: its image handle may be registered again */
  /* The image itself stays registered (the trace writer names it at exit); a
   * new registration of its handle value replaces it (images.c). */
  pthread_mutex_unlock(&resolve_lock);
  grape__func_changed();
}

void grape__func_image_drvs(const void* image, void*** out, size_t* n) {
  *out = NULL;
  *n = 0;
  grape_handle_slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL || image == NULL)
    return;
  pthread_mutex_lock(&resolve_lock);
  image_handles_t* e = image_entry(image, 0);
  void** v = e != NULL && e->n ? malloc(e->n * sizeof(*v)) : NULL;
  size_t k = 0;
  for (size_t i = 0; v != NULL && i < e->n; i++) {
    grape_handle_slot_t* s = find(t, e->handles[i], 0);
    grape_func_t* f = s ? grape__handle_value(s) : NULL;
    if (f != NULL && f->image == image && f->drv != NULL)
      v[k++] = f->drv;
  }
  pthread_mutex_unlock(&resolve_lock);
  *out = v;
  *n = k;
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
  const grape_fatbin_t* fb = f->name ? grape__image_get(f->image) : NULL;
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
  /* Widened: each parameter written as one 8-byte word in ordinal order (a
   * 4-byte one zero-extended) covers the block, gaps included, and stays in
   * the room the launch path reserves (max(param_bytes, 64)). */
  uint32_t room = f->param_bytes > 64 ? f->param_bytes : 64, covered = 0, used = 0;
  int wide = f->nparams >= 0;
  for (int i = 0; i < f->nparams && wide; i++) {
    uint32_t off = f->params[i].offset, size = f->params[i].size;
    wide = (size == 4 || size == 8) && off >= used && off <= covered && off + 8 <= room;
    used = off + size;
    covered = off + 8;
  }
  f->wide = wide && covered >= f->param_bytes;
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
  grape_handle_slot_t* t = grape__handle_table(&table, &init_lock);
  if (__builtin_expect(t == NULL, 0))
    return NULL;
  grape_handle_slot_t* s = find(t, h, 1);
  if (s == NULL)
    return NULL;
  grape_func_t* f = grape__handle_value(s);
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
  grape_handle_slot_t* t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
  if (t == NULL)
    return;
  for (size_t i = 0; i < GRAPE_HANDLE_SLOTS; i++) {
    grape_func_t* f = grape__handle_value(&t[i]);
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
    for (size_t i = 0; i < GRAPE_HANDLE_SLOTS; i++) {
      grape_func_t* f = table[i].value;
      if (f == NULL)
        continue;
      if (table[i].key != f->handle || f->retired)
        continue;   /* an alias: freed at its own handle; retired: below */
      info_free(f);
    }
    for (size_t i = 0; i < nretired; i++)
      info_free(retired[i]);
    free(retired);
    free(table);
    for (size_t i = 0; i < by_image_cap; i++)
      free(by_image[i].handles);
    free(by_image);
  }
  table = NULL;
  by_image = NULL;
  by_image_cap = by_image_len = 0;
  retired = NULL;
  nretired = retired_cap = 0;
  grape__func_changed();
  pthread_mutex_init(&init_lock, NULL);
  pthread_mutex_init(&resolve_lock, NULL);
  pthread_mutex_init(&retire_lock, NULL);
}

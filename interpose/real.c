/* The one door to the real CUDA: resolves and holds the real entry points.
 *
 * DESIGN: nothing here initialises CUDA. The libc dlsym is found once with
 * dlvsym (GLIBC_2.34, else GLIBC_2.2.5), which the dlsym override does not
 * intercept. An exported override's real function is the next definition
 * (RTLD_NEXT); a library loaded RTLD_LOCAL (libcudart inside a Python extension)
 * is not in the global scope, so the fallback asks an already-loaded
 * libcuda.so.1 / libcudart.so.13 by RTLD_NOLOAD handle. Wrappers handed out by
 * dlsym, cuGetProcAddress and cudaGetDriverEntryPoint call the pointer their
 * routing call found, stored in that route's slot: a per-thread-stream pointer
 * from cuGetProcAddress thus keeps its semantics. A slot is written once; a
 * different pointer for a filled slot is handed back unwrapped (two ABIs must
 * never share one wrapper). */
#include "real.h"

#include <dlfcn.h>
#include <string.h>

#include "state.h"
#include "log.h"

void* grape__real[GRAPE_SLOT_COUNT][GRAPE_HOOK_COUNT];

const grape_hook_desc_t grape__hooks[GRAPE_HOOK_COUNT] = {
#define GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, stream, params, args) \
  [GRAPE_HOOK_##name] = {#name, gpa, ver, ptds,                               \
                         {(void*)name, (void*)grape__w_##name##_dlsym,        \
                          (void*)grape__w_##name##_gpa, (void*)grape__w_##name##_ep}},
#define GRAPE_DRV0(ret, name, base, gpa, ver, ptds, kind) \
  GRAPE_DRV(ret, name, base, gpa, ver, ptds, kind, 0, (void), ())
#define GRAPE_RT0(name, base, ptds, kind) [GRAPE_HOOK_##name] = {#name, NULL, 0, ptds, {(void*)name, NULL, NULL, NULL}},
#define GRAPE_RT(name, base, ptds, kind, stream, params, args) \
  [GRAPE_HOOK_##name] = {#name, NULL, 0, ptds, {(void*)name, NULL, NULL, NULL}},
#define GRAPE_RT_OWN(name) [GRAPE_HOOK_##name] = {#name, NULL, 0, 0, {(void*)name, NULL, NULL, NULL}},
#include "hooks.def"
};

/* ---- dlsym ---- */

typedef void* (*dlsym_fn)(void*, const char*);
static dlsym_fn libc_dlsym;

GRAPE_NO_SANITIZE void* grape__real_dlsym(void* handle, const char* name) {
  dlsym_fn f = __atomic_load_n(&libc_dlsym, __ATOMIC_RELAXED);
  if (__builtin_expect(f == NULL, 0)) {
    f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (f == NULL)
      f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    if (f == NULL)
      return NULL;
    __atomic_store_n(&libc_dlsym, f, __ATOMIC_RELAXED);
  }
  return f(handle, name);
}

/* ---- Exported overrides' real functions ---- */

/* Keeps the library that defines p loaded for the rest of the process: the
 * shim holds p (and, for the driver, tables it returned) until its exit
 * report, but a program may unload the library it loaded itself (NVIDIA's
 * static runtime in CuPy or cuDNN dlopens libcuda.so.1 RTLD_LOCAL and
 * dlcloses it when it finds no device). */
static void pin(void* p) {
  Dl_info info;
  if (dladdr(p, &info) == 0 || info.dli_fname == NULL)
    return;
  void* h = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  if (h != NULL)
    dlclose(h);
}

/* The next definition of name, else the one in lib if it is loaded already;
 * its library stays loaded (pin). */
static void* lookup(const char* name, const char* lib) {
  void* p = grape__real_dlsym(RTLD_NEXT, name);
  if (p == NULL) {
    void* lh = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
    if (lh != NULL) {
      p = grape__real_dlsym(lh, name);
      dlclose(lh);
    }
  }
  if (p != NULL)
    pin(p);
  return p;
}

void* grape__real_export_slow(grape_hook_t h) {
  const char* name = grape__hooks[h].name;
  void* p = lookup(name, grape__hooks[h].gpa ? "libcuda.so.1" : "libcudart.so.13");
  if (p == NULL || p == grape__hooks[h].wrapper[GRAPE_SLOT_EXPORT]) {
    grape_log_warn("no real %s found; the call fails with a not-found error", name);
    return NULL;
  }
  __atomic_store_n(&grape__real[GRAPE_SLOT_EXPORT][h], p, __ATOMIC_RELAXED);
  return p;
}

/* ---- Routing tables ---- */

int grape__hook_by_name(const char* name) {
  if (name[0] != 'c' || name[1] != 'u')
    return -1;
  for (int i = 0; i < GRAPE_HOOK_COUNT; i++)
    if (grape__hooks[i].gpa != NULL && strcmp(grape__hooks[i].name, name) == 0)
      return i;
  return -1;
}

int grape__hook_by_gpa(const char* symbol, int version, int ptds) {
  int best = -1, best_plain = -1;
  for (int i = 0; i < GRAPE_HOOK_COUNT; i++) {
    const grape_hook_desc_t* d = &grape__hooks[i];
    if (d->gpa == NULL || d->version > version || strcmp(d->gpa, symbol) != 0)
      continue;
    if (d->ptds == ptds && (best < 0 || d->version > grape__hooks[best].version))
      best = i;
    if (!d->ptds && (best_plain < 0 || d->version > grape__hooks[best_plain].version))
      best_plain = i;
  }
  if (best >= 0)
    return best;
  /* A symbol with no _ptsz twin serves both flags (cuGetProcAddress does too). */
  if (ptds && best_plain >= 0) {
    for (int i = 0; i < GRAPE_HOOK_COUNT; i++)
      if (grape__hooks[i].gpa && grape__hooks[i].ptds && strcmp(grape__hooks[i].gpa, symbol) == 0)
        return -1;   /* a twin exists but not for this version: leave it alone */
    return best_plain;
  }
  return -1;
}

void* grape__wrap(grape_slot_t slot, int h, void* real) {
  if (real == NULL || h < 0)
    return real;
  /* A driver that resolves names through the global scope hands back the shim's
   * own exported override: wrap the function behind it instead, so that the
   * launch is counted under the route the caller used. */
  for (int i = 0; i < GRAPE_HOOK_COUNT; i++)
    if (grape__hooks[i].wrapper[GRAPE_SLOT_EXPORT] == real) {
      real = grape__real_export((grape_hook_t)i);
      if (real == NULL)
        return grape__hooks[i].wrapper[GRAPE_SLOT_EXPORT];
      break;
    }
  if (grape__is_own(real))
    return real;   /* a route wrapper already */
  void* expected = NULL;
  if (!__atomic_compare_exchange_n(&grape__real[slot][h], &expected, real, 0, __ATOMIC_RELAXED,
                                   __ATOMIC_RELAXED) &&
      expected != real) {
    grape_log_debug("%s: a second real function for one route; handed back unwrapped",
                    grape__hooks[h].name);
    return real;
  }
  return grape__hooks[h].wrapper[slot];
}

void* grape__unown(void* p) {
  for (int i = 0; i < GRAPE_HOOK_COUNT; i++)
    if (grape__hooks[i].wrapper[GRAPE_SLOT_EXPORT] == p) {
      void* real = grape__real_export((grape_hook_t)i);
      return real ? real : p;
    }
  return p;
}

int grape__is_own(const void* p) {
  for (int i = 0; i < GRAPE_HOOK_COUNT; i++)
    for (int s = 0; s < GRAPE_SLOT_COUNT; s++)
      if (grape__hooks[i].wrapper[s] == p)
        return 1;
  return 0;
}

/* ---- Functions the shim calls for itself ---- */

void* grape__real_runtime(const char* name) {
  return lookup(name, "libcudart.so.13");
}

void* grape__real_driver(const char* name) {
  return lookup(name, "libcuda.so.1");
}

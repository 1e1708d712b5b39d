/* The door to the real CUDA (real.c): the hook table, the real-function
 * slots of each hook (one per route, hooks.h), wrapping a real function for a
 * route, plus lookups of CUDA functions the shim calls for itself (parameter
 * info, names). */
#ifndef GRAPE_INTERPOSE_REAL_H
#define GRAPE_INTERPOSE_REAL_H

#include "hooks.h"

/* Threads: constant (generated); any thread reads it. */
extern const grape_hook_desc_t grape__hooks[GRAPE_HOOK_COUNT];

/* Real functions, one slot per route. EXPORT slots fill lazily; the others are
 * filled when the routing call hands a wrapper out. Read with relaxed loads. */
/* Threads: each slot stored once (relaxed store or CAS) by the first thread to resolve it, read
 * (relaxed) by every hook: racing resolvers store the same pointer, and NULL resolves again. */
extern void* grape__real[GRAPE_SLOT_COUNT][GRAPE_HOOK_COUNT];

/* The real function behind the exported override of hook h: RTLD_NEXT, then the
 * already-loaded libcuda.so.1 / libcudart.so.13. NULL if none (logged once). */
void* grape__real_export_slow(grape_hook_t h);

static inline void* grape__real_export(grape_hook_t h) {
  void* p = __atomic_load_n(&grape__real[GRAPE_SLOT_EXPORT][h], __ATOMIC_RELAXED);
  if (__builtin_expect(p == NULL, 0))
    p = grape__real_export_slow(h);
  return p;
}

/* The libc dlsym, found with dlvsym so that the override never calls itself. */
GRAPE_NO_SANITIZE void* grape__real_dlsym(void* handle, const char* name);

/* Row of a driver symbol by exported name (dlsym), or -1. */
int grape__hook_by_name(const char* name);

/* Row that cuGetProcAddress(symbol, version, flags) should wrap: same gpa name,
 * same per-thread flag (else the flag-less row), the highest version <= version.
 * -1 when the shim has no wrapper for it. */
int grape__hook_by_gpa(const char* symbol, int version, int ptds);

/* Wraps a real pointer for route slot (DLSYM, GPA, EP): stores it in the slot
 * and returns the shim's wrapper, or returns real unchanged when the slot
 * already holds a different function (never mix two ABIs behind one wrapper). */
void* grape__wrap(grape_slot_t slot, int h, void* real);

/* The real function behind p when p is one of the shim's exported overrides
 * (a driver whose cuGetProcAddress resolves through the global scope hands
 * those back); p otherwise. */
void* grape__unown(void* p);

/* True when p is one of the shim's own functions (exported or wrapper). */
int grape__is_own(const void* p);

/* A runtime / driver function by name from the next definition or the loaded
 * libcudart.so.13 / libcuda.so.1; NULL when absent. Never loads a library and
 * never initialises CUDA. Not for the hot path (a dlsym per call). */
void* grape__real_runtime(const char* name);
void* grape__real_driver(const char* name);

#endif

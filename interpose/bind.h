/* bind.h: libraries that would bind past the shim — opened with RTLD_DEEPBIND,
 * or into another link-map namespace with dlmopen.
 *
 * DESIGN: a library opened RTLD_DEEPBIND looks up its symbols in itself and
 * its own dependencies before the global scope, so its calls to dlsym, dlopen
 * and the driver reach libc and libcuda directly, past the preloaded shim: its
 * kernels would overtake work the shim holds. The shim exports dlopen and
 * dlmopen; an ordinary call jumps straight to libc's (glibc finds the caller's
 * RUNPATH and namespace from the return address, which the jump keeps). A
 * deep-binding call is loaded by the shim, and every object it brought in has
 * its relocations to CUDA entry points and to dlsym/dlopen/dlmopen pointed at
 * the shim's own definitions, which the global scope would have given them.
 * An object the shim cannot rewrite, and any library loaded into a namespace
 * of its own (where the shim is not loaded at all) that may reach CUDA, stops
 * graph mode's holding for the process, with one warning: never a wrong
 * result. docs/interpose.md, "Deep binding and namespaces", says what is and
 * is not covered. */
#ifndef GRAPE_INTERPOSE_BIND_H
#define GRAPE_INTERPOSE_BIND_H

/* Objects rewritten so far, and relocations pointed at the shim (report). */
typedef struct grape_bind_stats_s {
  long objects;
  long slots;
  long bypasses;   /* libraries that could not be rewritten */
} grape_bind_stats_t;

void grape__bind_stats(grape_bind_stats_t* out);

/* Resolves libc's dlopen and dlmopen (called from the shim's constructor; the
 * exports resolve them themselves if called earlier). */
void grape__bind_init(void);

/* Points the relocations of the object loaded at handle, and of every object
 * loaded since `before` objects were known, at the shim (tests call it to
 * check the rewrite on its own). @return 0, or -1 when an object could not be
 * rewritten. */
int grape__bind_rewrite_new(void* handle);

#endif

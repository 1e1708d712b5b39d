/* The door to the real CUDA (real.c): the real-function slots of hooks.h,
 * plus lookups of CUDA functions the shim calls for itself (parameter info,
 * names). */
#ifndef GRAPE_INTERPOSE_REAL_H
#define GRAPE_INTERPOSE_REAL_H

#include "hooks.h"

/* A runtime / driver function by name from the next definition or the loaded
 * libcudart.so.13 / libcuda.so.1; NULL when absent. Never loads a library and
 * never initialises CUDA. Not for the hot path (a dlsym per call). */
void* grape__real_runtime(const char* name);
void* grape__real_driver(const char* name);

#endif

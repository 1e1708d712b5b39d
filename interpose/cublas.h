/* cuBLAS and cuBLASLt GEMM calls on every route (see cublas.c). */
#ifndef GRAPE_INTERPOSE_CUBLAS_H
#define GRAPE_INTERPOSE_CUBLAS_H

#include <stdint.h>

/* What dlsym should hand back for a 'cublas' symbol that the real dlsym
 * resolved to p: the shim's route wrapper for an interposed GEMM, else p
 * (NULL for the shim's own export when no real library follows it). */
void* grape__cublas_dlsym(void* handle, const char* symbol, void* p);

/* True when p is one of this file's exports or wrappers. */
int grape__cublas_is_own(const void* p);

/* go mode (GRAPE_CONCURRENCY=go): SM-count targets applied to calls, the
 * sampled checks made (each shape and target once), those whose outputs
 * held values, and the largest relative difference they found. */
void grape__cublas_go_stats(uint64_t* targets, uint64_t* checks, uint64_t* valued, double* max_rel);

#endif

/* cuBLAS and cuBLASLt GEMM calls on every route (see cublas.c). */
#ifndef GRAPE_INTERPOSE_CUBLAS_H
#define GRAPE_INTERPOSE_CUBLAS_H

/* What dlsym should hand back for a 'cublas' symbol that the real dlsym
 * resolved to p: the shim's route wrapper for an interposed GEMM, else p
 * (NULL for the shim's own export when no real library follows it). */
void* grape__cublas_dlsym(void* handle, const char* symbol, void* p);

/* True when p is one of this file's exports or wrappers. */
int grape__cublas_is_own(const void* p);

#endif

/* The real driver behind graph mode: the entry points it calls, the function
 * table graphcache/ is given, and the context held work is submitted in.
 *
 * DESIGN: graphcache/ reaches the driver only through grape__graph_driver
 * (graphcache/cache.h's grape_gc_driver_t). Every call it makes runs in the
 * *submission context*, set per thread by grape__ctx_enter before the cache is
 * called: held work belongs to the context it was issued in, and may be
 * submitted by any thread (a new thread whose runtime has not yet made a
 * context current, another device's thread, the watchdog), so the context is
 * made current around the submission and restored afterwards. The common case
 * costs nothing: when the process has one context and the thread that held
 * the work submits it, the context is already current. Node parameters that
 * name a context (a CUkernel node, memset and memcpy nodes) use the
 * submission context too, never a cuCtxGetCurrent per node. */
#ifndef GRAPE_INTERPOSE_GRAPH_DRIVER_H
#define GRAPE_INTERPOSE_GRAPH_DRIVER_H

#include "cuda_types.h"
#include "graphcache/cache.h"

typedef struct grape_real_graph_s {
  CUresult (*graph_create)(CUgraph*, unsigned);
  CUresult (*add_kernel)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_KERNEL_NODE_PARAMS*);
  CUresult (*add_memset)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMSET_NODE_PARAMS*, CUcontext);
  CUresult (*add_memcpy)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, const CUDA_MEMCPY3D*, CUcontext);
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long);
  CUresult (*graph_destroy)(CUgraph);
  CUresult (*exec_destroy)(CUgraphExec);
  CUresult (*set_kernel)(CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS*);
  CUresult (*set_memset)(CUgraphExec, CUgraphNode, const CUDA_MEMSET_NODE_PARAMS*, CUcontext);
  CUresult (*set_memcpy)(CUgraphExec, CUgraphNode, const CUDA_MEMCPY3D*, CUcontext);
  CUresult (*launch)(CUgraphExec, CUstream);
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            unsigned, CUstream, void**, void**);
  CUresult (*launch_kernel_ex)(const CUlaunchConfig*, CUfunction, void**, void**);
  CUresult (*node_set_attr)(CUgraphNode, CUkernelNodeAttrID, const CUkernelNodeAttrValue*);
  CUresult (*memset8)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*memset16)(CUdeviceptr, unsigned short, size_t, CUstream);
  CUresult (*memset32)(CUdeviceptr, unsigned int, size_t, CUstream);
  CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, size_t, CUstream);
  CUresult (*ctx_get)(CUcontext*);
  CUresult (*ctx_set)(CUcontext);
  CUresult (*ctx_device)(CUdevice*);
  CUresult (*stream_flags)(CUstream, unsigned*);
  CUresult (*stream_ctx)(CUstream, CUcontext*);
  CUresult (*func_attr)(int*, CUfunction_attribute, CUfunction);
  CUresult (*kernel_attr)(int*, CUfunction_attribute, CUkernel, CUdevice);
  CUresult (*device_attr)(int*, CUdevice_attribute, CUdevice);
  CUresult (*device_count)(int*);
  CUresult (*event_create)(CUevent*, unsigned);
  CUresult (*event_destroy)(CUevent);
  CUresult (*event_elapsed)(float*, CUevent, CUevent);
  CUresult (*add_event_record)(CUgraphNode*, CUgraph, const CUgraphNode*, size_t, CUevent);
} grape_real_graph_t;

/* The entry points, complete once grape__graph_real_resolve returned 1. */
/* Threads: filled once under graph_driver.c's lock before its state is published (release);
 * read lock-free only after grape__graph_real_resolve returned 1 (acquire): never while written. */
extern grape_real_graph_t grape__rg;

/* Resolves them once. @return 1 when all are there, -1 when one is missing
 * (graph mode then runs as observe, said once). */
int grape__graph_real_resolve(void);

/* The table the cache is given. */
/* Threads: constant; any thread reads it. */
extern const grape_gc_driver_t grape__graph_driver;

/* The calling thread's current context (NULL: none, or the driver failed). */
CUcontext grape__ctx_current(void);

/* ---- The submission context ---- */

/* True when the process may have more than one context (several devices, or
 * a context the program created): then every submission checks the current
 * context. Asked of the driver once; grape__ctx_note_created sets it. */
int grape__ctx_multi(void);
void grape__ctx_note_created(void);

/* This thread's tag, to tell the thread that held a stream's work. */
/* Thread-local: only its address is used (a tag); nothing reads or writes it. */
extern __thread char grape__ctx_thread_tag __attribute__((tls_model("initial-exec")));

typedef struct grape_ctx_guard_s {
  CUcontext prev;      /* to restore */
  int switched;
} grape_ctx_guard_t;

/* Makes ctx the submission context (and the current one, unless it is
 * already; holder: the tag of the thread that held the work). Pair with
 * grape__ctx_leave. */
grape_ctx_guard_t grape__ctx_enter(CUcontext ctx, const void* holder);
void grape__ctx_leave(grape_ctx_guard_t g);

#endif

/* rt_stream.c: streams, events, stream capture, host functions and
 * callbacks, graphs and their nodes, and libraries of the sim's runtime.
 *
 * DESIGN: as in rt_mem.c, each function translates its arguments to the
 * driver entry point NVIDIA's runtime uses and records a failure as the
 * thread's last error; the runtime's handles are the driver's (cudaStream_t
 * is CUstream, cudaGraphNode_t is CUgraphNode, ...), and the runtime's node
 * parameter structures are translated field by field where they differ. The
 * _ptsz forms call the driver's per-thread variants.
 */
#include "rt_internal.h"

/* ---- Streams and events ---- */

RT_API cudaError_t cudaStreamCreate(cudaStream_t* s) {
  RT_ENTER();
  return RT_CALL(StreamCreate, s, CU_STREAM_DEFAULT);
}
RT_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(StreamCreate, s, flags);
}
RT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned int flags, int prio) {
  RT_ENTER();
  return RT_CALL(StreamCreateWithPriority, s, flags, prio);
}
RT_API cudaError_t cudaStreamDestroy(cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(StreamDestroy, s);
}
RT_API cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(StreamSynchronize, s);
}
RT_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_StreamSynchronize, s);
}
RT_API cudaError_t cudaStreamQuery(cudaStream_t s) {
  RT_ENTER();
  cudaError_t e = grape__rt_map(drv.StreamQuery(s));
  return e == cudaErrorNotReady ? e : grape__rt_err(e);   /* not-ready is not an error to remember */
}
RT_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t s) {
  RT_ENTER();
  cudaError_t e = grape__rt_map(drv.pt_StreamQuery(s));
  return e == cudaErrorNotReady ? e : grape__rt_err(e);
}
RT_API cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(StreamWaitEvent, s, e, flags);
}
RT_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(pt_StreamWaitEvent, s, e, flags);
}
RT_API cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int* flags) {
  RT_ENTER();
  return RT_CALL(StreamGetFlags, s, flags);
}
RT_API cudaError_t cudaStreamGetPriority(cudaStream_t s, int* prio) {
  RT_ENTER();
  return RT_CALL(StreamGetPriority, s, prio);
}
RT_API cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  RT_ENTER();
  return RT_CALL(StreamBeginCapture, s, (CUstreamCaptureMode)mode);
}
RT_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  RT_ENTER();
  return RT_CALL(pt_StreamBeginCapture, s, (CUstreamCaptureMode)mode);
}
RT_API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* g) {
  RT_ENTER();
  return RT_CALL(StreamEndCapture, s, g);
}
RT_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t* g) {
  RT_ENTER();
  return RT_CALL(pt_StreamEndCapture, s, g);
}
RT_API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* st) {
  RT_ENTER();
  return RT_CALL(StreamIsCapturing, s, (CUstreamCaptureStatus*)st);
}
RT_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* st) {
  RT_ENTER();
  return RT_CALL(pt_StreamIsCapturing, s, (CUstreamCaptureStatus*)st);
}
RT_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t s, enum cudaStreamCaptureStatus* st,
                                            unsigned long long* id, cudaGraph_t* g,
                                            const cudaGraphNode_t** deps,
                                            const cudaGraphEdgeData** edges, size_t* n) {
  RT_ENTER();
  return RT_CALL(StreamGetCaptureInfo, s, (CUstreamCaptureStatus*)st, (cuuint64_t*)id, g,
                 (const CUgraphNode**)deps, (const CUgraphEdgeData**)edges, n);
}
RT_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus* st,
                                                 unsigned long long* id, cudaGraph_t* g,
                                                 const cudaGraphNode_t** deps,
                                                 const cudaGraphEdgeData** edges, size_t* n) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetCaptureInfo, s, (CUstreamCaptureStatus*)st, (cuuint64_t*)id, g,
                 (const CUgraphNode**)deps, (const CUgraphEdgeData**)edges, n);
}
RT_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t s, unsigned int* flags) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetFlags, s, flags);
}
RT_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t s, int* prio) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetPriority, s, prio);
}
RT_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(pt_EventRecordWithFlags, e, s, flags);
}
RT_API cudaError_t cudaThreadExchangeStreamCaptureMode(enum cudaStreamCaptureMode* mode) {
  RT_ENTER();
  return RT_CALL(ThreadExchangeStreamCaptureMode, (CUstreamCaptureMode*)mode);
}
RT_API cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void* data) {
  RT_ENTER();
  return RT_CALL(LaunchHostFunc, s, fn, data);
}
RT_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t s, cudaHostFn_t fn, void* data) {
  RT_ENTER();
  return RT_CALL(pt_LaunchHostFunc, s, fn, data);
}

RT_API cudaError_t cudaEventCreate(cudaEvent_t* e) {
  RT_ENTER();
  return RT_CALL(EventCreate, e, CU_EVENT_DEFAULT);
}
RT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(EventCreate, e, flags);
}
RT_API cudaError_t cudaEventDestroy(cudaEvent_t e) {
  RT_ENTER();
  return RT_CALL(EventDestroy, e);
}
RT_API cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(EventRecord, e, s);
}
RT_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_EventRecord, e, s);
}
RT_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(EventRecordWithFlags, e, s, flags);
}
RT_API cudaError_t cudaEventQuery(cudaEvent_t e) {
  RT_ENTER();
  cudaError_t r = grape__rt_map(drv.EventQuery(e));
  return r == cudaErrorNotReady ? r : grape__rt_err(r);
}
RT_API cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  RT_ENTER();
  return RT_CALL(EventSynchronize, e);
}
RT_API cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  RT_ENTER();
  return RT_CALL(EventElapsedTime, ms, a, b);
}

/* ---- More stream queries and operations ---- */

RT_API cudaError_t cudaStreamGetId(cudaStream_t s, unsigned long long* id) {
  RT_ENTER();
  return RT_CALL(StreamGetId, s, id);
}
RT_API cudaError_t cudaStreamGetId_ptsz(cudaStream_t s, unsigned long long* id) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetId, s, id);
}

RT_API cudaError_t cudaStreamGetDevice(cudaStream_t s, int* d) {
  RT_ENTER();
  return RT_CALL(StreamGetDevice, s, d);
}
RT_API cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int* d) {
  RT_ENTER();
  return RT_CALL(pt_StreamGetDevice, s, d);
}

/* cudaStreamCallback_t and CUstreamCallback differ only in the names of the
 * status and stream types, which are the same values. */
RT_API cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void* data,
                                         unsigned int flags) {
  RT_ENTER();
  return RT_CALL(StreamAddCallback, s, (CUstreamCallback)cb, data, flags);
}
RT_API cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t cb, void* data,
                                              unsigned int flags) {
  RT_ENTER();
  return RT_CALL(pt_StreamAddCallback, s, (CUstreamCallback)cb, data, flags);
}

/* Capture into the caller's graph, after its nodes deps (cudaGraphEdgeData
 * is CUgraphEdgeData). */
RT_API cudaError_t cudaStreamBeginCaptureToGraph(cudaStream_t s, cudaGraph_t g,
                                                 const cudaGraphNode_t* deps,
                                                 const cudaGraphEdgeData* edges, size_t n,
                                                 enum cudaStreamCaptureMode mode) {
  RT_ENTER();
  return RT_CALL(StreamBeginCaptureToGraph, s, g, deps, (const CUgraphEdgeData*)edges, n,
                 (CUstreamCaptureMode)mode);
}
RT_API cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t s, cudaGraph_t g,
                                                      const cudaGraphNode_t* deps,
                                                      const cudaGraphEdgeData* edges, size_t n,
                                                      enum cudaStreamCaptureMode mode) {
  RT_ENTER();
  return RT_CALL(pt_StreamBeginCaptureToGraph, s, g, deps, (const CUgraphEdgeData*)edges, n,
                 (CUstreamCaptureMode)mode);
}

/* ---- Graphs ---- */

static cudaError_t kernel_params(const struct cudaKernelNodeParams* p, CUDA_KERNEL_NODE_PARAMS* d) {
  if (p == NULL)
    return cudaErrorInvalidValue;
  CUfunction f;
  cudaError_t e = grape__rt_resolve_func(p->func, &f);
  if (e != cudaSuccess)
    return e;
  memset(d, 0, sizeof(*d));
  d->func = f;
  d->gridDimX = p->gridDim.x;
  d->gridDimY = p->gridDim.y;
  d->gridDimZ = p->gridDim.z;
  d->blockDimX = p->blockDim.x;
  d->blockDimY = p->blockDim.y;
  d->blockDimZ = p->blockDim.z;
  d->sharedMemBytes = p->sharedMemBytes;
  d->kernelParams = p->kernelParams;
  d->extra = p->extra;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphCreate(cudaGraph_t* g, unsigned int flags) {
  RT_ENTER();
  return RT_CALL(GraphCreate, g, flags);
}
RT_API cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  RT_ENTER();
  return RT_CALL(GraphDestroy, g);
}
RT_API cudaError_t cudaGraphAddKernelNode(cudaGraphNode_t* n, cudaGraph_t g, const cudaGraphNode_t* deps,
                                          size_t ndeps, const struct cudaKernelNodeParams* p) {
  RT_ENTER();
  CUDA_KERNEL_NODE_PARAMS d;
  RT_TRY(kernel_params(p, &d));
  return RT_CALL(GraphAddKernelNode, n, g, deps, ndeps, &d);
}
RT_API cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  RT_ENTER();
  return RT_CALL(GraphGetNodes, g, nodes, n);
}
RT_API cudaError_t cudaGraphInstantiate(cudaGraphExec_t* x, cudaGraph_t g, unsigned long long flags) {
  RT_ENTER();
  return RT_CALL(GraphInstantiateWithFlags, x, g, flags);
}
RT_API cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* x, cudaGraph_t g,
                                                 unsigned long long flags) {
  RT_ENTER();
  return RT_CALL(GraphInstantiateWithFlags, x, g, flags);
}
RT_API cudaError_t cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(GraphLaunch, x, s);
}
RT_API cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t x, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_GraphLaunch, x, s);
}
RT_API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t x) {
  RT_ENTER();
  return RT_CALL(GraphExecDestroy, x);
}
RT_API cudaError_t cudaGraphExecKernelNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t n,
                                                    const struct cudaKernelNodeParams* p) {
  RT_ENTER();
  CUDA_KERNEL_NODE_PARAMS d;
  RT_TRY(kernel_params(p, &d));
  return RT_CALL(GraphExecKernelNodeSetParams, x, n, &d);
}
RT_API cudaError_t cudaGraphExecUpdate(cudaGraphExec_t x, cudaGraph_t g,
                                       cudaGraphExecUpdateResultInfo* info) {
  RT_ENTER();
  return RT_CALL(GraphExecUpdate, x, g, (CUgraphExecUpdateResultInfo*)info);
}

/* ---- More graph functions ---- */

RT_API cudaError_t cudaGraphUpload(cudaGraphExec_t x, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(GraphUpload, x, s);
}
RT_API cudaError_t cudaGraphUpload_ptsz(cudaGraphExec_t x, cudaStream_t s) {
  RT_ENTER();
  return RT_CALL(pt_GraphUpload, x, s);
}

RT_API cudaError_t cudaGraphExecGetFlags(cudaGraphExec_t x, unsigned long long* flags) {
  RT_ENTER();
  return RT_CALL(GraphExecGetFlags, x, (cuuint64_t*)flags);
}

/* Instantiation with a parameter block: the flags (an upload flag uploads on
 * the given stream) and a result code in the block, as the runtime reports. */
static cudaError_t instantiate_params(cudaGraphExec_t* x, cudaGraph_t g,
                                      cudaGraphInstantiateParams* p, int pt) {
  RT_ENTER();
  if (p == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  p->errNode_out = NULL;
  CUresult r = drv.GraphInstantiateWithFlags(x, g, p->flags & ~(unsigned long long)cudaGraphInstantiateFlagUpload);
  if (r == CUDA_SUCCESS && (p->flags & cudaGraphInstantiateFlagUpload))
    r = RT_PT(pt, GraphUpload)(*x, p->uploadStream);
  p->result_out = r == CUDA_SUCCESS ? cudaGraphInstantiateSuccess : cudaGraphInstantiateError;
  return grape__rt_err(grape__rt_map(r));
}

RT_API cudaError_t cudaGraphInstantiateWithParams(cudaGraphExec_t* x, cudaGraph_t g,
                                                  cudaGraphInstantiateParams* p) {
  return instantiate_params(x, g, p, 0);
}
RT_API cudaError_t cudaGraphInstantiateWithParams_ptsz(cudaGraphExec_t* x, cudaGraph_t g,
                                                       cudaGraphInstantiateParams* p) {
  return instantiate_params(x, g, p, 1);
}

RT_API cudaError_t cudaGraphNodeGetType(cudaGraphNode_t n, enum cudaGraphNodeType* t) {
  RT_ENTER();
  return RT_CALL(GraphNodeGetType, n, (CUgraphNodeType*)t);
}

RT_API cudaError_t cudaGraphKernelNodeGetParams(cudaGraphNode_t n, struct cudaKernelNodeParams* p) {
  RT_ENTER();
  if (p == NULL)
    return grape__rt_err(cudaErrorInvalidValue);
  CUDA_KERNEL_NODE_PARAMS d;
  cudaError_t e = RT_CALL(GraphKernelNodeGetParams, n, &d);
  if (e != cudaSuccess)
    return e;
  p->func = (void*)grape__rt_host_of(d.func);
  p->gridDim = (dim3){d.gridDimX, d.gridDimY, d.gridDimZ};
  p->blockDim = (dim3){d.blockDimX, d.blockDimY, d.blockDimZ};
  p->sharedMemBytes = d.sharedMemBytes;
  p->kernelParams = d.kernelParams;
  p->extra = d.extra;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphKernelNodeSetParams(cudaGraphNode_t n,
                                                const struct cudaKernelNodeParams* p) {
  RT_ENTER();
  CUDA_KERNEL_NODE_PARAMS d;
  RT_TRY(kernel_params(p, &d));
  return RT_CALL(GraphKernelNodeSetParams, n, &d);
}

/* cudaKernelNodeAttrValue is CUkernelNodeAttrValue (both the launch attribute value union). */
RT_API cudaError_t cudaGraphKernelNodeSetAttribute(cudaGraphNode_t n, cudaKernelNodeAttrID a,
                                                   const cudaKernelNodeAttrValue* v) {
  RT_ENTER();
  return RT_CALL(GraphKernelNodeSetAttribute, n, (CUkernelNodeAttrID)a,
                 (const CUkernelNodeAttrValue*)v);
}
RT_API cudaError_t cudaGraphKernelNodeGetAttribute(cudaGraphNode_t n, cudaKernelNodeAttrID a,
                                                   cudaKernelNodeAttrValue* v) {
  RT_ENTER();
  return RT_CALL(GraphKernelNodeGetAttribute, n, (CUkernelNodeAttrID)a, (CUkernelNodeAttrValue*)v);
}

static cudaError_t memset_params(const struct cudaMemsetParams* p, CUDA_MEMSET_NODE_PARAMS* d) {
  if (p == NULL)
    return cudaErrorInvalidValue;
  memset(d, 0, sizeof(*d));
  d->dst = (CUdeviceptr)(uintptr_t)p->dst;
  d->pitch = p->pitch;
  d->value = p->value;
  d->elementSize = p->elementSize;
  d->width = p->width;
  d->height = p->height;
  return cudaSuccess;
}

RT_API cudaError_t cudaGraphAddMemsetNode(cudaGraphNode_t* n, cudaGraph_t g,
                                          const cudaGraphNode_t* deps, size_t ndeps,
                                          const struct cudaMemsetParams* p) {
  RT_ENTER();
  CUDA_MEMSET_NODE_PARAMS d;
  RT_TRY(memset_params(p, &d));
  return RT_CALL(GraphAddMemsetNode, n, g, deps, ndeps, &d, grape__rt_primary_ctx);
}

RT_API cudaError_t cudaGraphAddMemcpyNode(cudaGraphNode_t* n, cudaGraph_t g,
                                          const cudaGraphNode_t* deps, size_t ndeps,
                                          const struct cudaMemcpy3DParms* p) {
  RT_ENTER();
  CUDA_MEMCPY3D c;
  RT_TRY(grape__rt_copy3d_params(p, &c));
  return RT_CALL(GraphAddMemcpyNode, n, g, deps, ndeps, &c, grape__rt_primary_ctx);
}

/* A 1-D copy as the 3-D parameters of a one-row box. */
static cudaError_t copy1d_params(void* dst, const void* src, size_t count, enum cudaMemcpyKind k,
                                 CUDA_MEMCPY3D* c) {
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof(p));
  p.srcPtr = (struct cudaPitchedPtr){(void*)src, count, count, 1};
  p.dstPtr = (struct cudaPitchedPtr){dst, count, count, 1};
  p.extent = (struct cudaExtent){count, 1, 1};
  p.kind = k;
  return grape__rt_copy3d_params(&p, c);
}

RT_API cudaError_t cudaGraphAddMemcpyNode1D(cudaGraphNode_t* n, cudaGraph_t g,
                                            const cudaGraphNode_t* deps, size_t ndeps, void* dst,
                                            const void* src, size_t count, enum cudaMemcpyKind k) {
  RT_ENTER();
  CUDA_MEMCPY3D c;
  RT_TRY(copy1d_params(dst, src, count, k, &c));
  return RT_CALL(GraphAddMemcpyNode, n, g, deps, ndeps, &c, grape__rt_primary_ctx);
}

/* cudaHostNodeParams is CUDA_HOST_NODE_PARAMS: a function and its data. */
RT_API cudaError_t cudaGraphAddHostNode(cudaGraphNode_t* n, cudaGraph_t g,
                                        const cudaGraphNode_t* deps, size_t ndeps,
                                        const struct cudaHostNodeParams* p) {
  RT_ENTER();
  return RT_CALL(GraphAddHostNode, n, g, deps, ndeps, (const CUDA_HOST_NODE_PARAMS*)p);
}

RT_API cudaError_t cudaGraphAddEmptyNode(cudaGraphNode_t* n, cudaGraph_t g,
                                         const cudaGraphNode_t* deps, size_t ndeps) {
  RT_ENTER();
  return RT_CALL(GraphAddEmptyNode, n, g, deps, ndeps);
}

RT_API cudaError_t cudaGraphAddEventRecordNode(cudaGraphNode_t* n, cudaGraph_t g,
                                               const cudaGraphNode_t* deps, size_t ndeps,
                                               cudaEvent_t e) {
  RT_ENTER();
  return RT_CALL(GraphAddEventRecordNode, n, g, deps, ndeps, e);
}

RT_API cudaError_t cudaGraphAddEventWaitNode(cudaGraphNode_t* n, cudaGraph_t g,
                                             const cudaGraphNode_t* deps, size_t ndeps,
                                             cudaEvent_t e) {
  RT_ENTER();
  return RT_CALL(GraphAddEventWaitNode, n, g, deps, ndeps, e);
}

RT_API cudaError_t cudaGraphExecMemsetNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t n,
                                                    const struct cudaMemsetParams* p) {
  RT_ENTER();
  CUDA_MEMSET_NODE_PARAMS d;
  RT_TRY(memset_params(p, &d));
  return RT_CALL(GraphExecMemsetNodeSetParams, x, n, &d, grape__rt_primary_ctx);
}

RT_API cudaError_t cudaGraphExecMemcpyNodeSetParams(cudaGraphExec_t x, cudaGraphNode_t n,
                                                    const struct cudaMemcpy3DParms* p) {
  RT_ENTER();
  CUDA_MEMCPY3D c;
  RT_TRY(grape__rt_copy3d_params(p, &c));
  return RT_CALL(GraphExecMemcpyNodeSetParams, x, n, &c, grape__rt_primary_ctx);
}

RT_API cudaError_t cudaGraphExecMemcpyNodeSetParams1D(cudaGraphExec_t x, cudaGraphNode_t n,
                                                      void* dst, const void* src, size_t count,
                                                      enum cudaMemcpyKind k) {
  RT_ENTER();
  CUDA_MEMCPY3D c;
  RT_TRY(copy1d_params(dst, src, count, k, &c));
  return RT_CALL(GraphExecMemcpyNodeSetParams, x, n, &c, grape__rt_primary_ctx);
}

/* ---- Libraries ---- */

/* The runtime's JIT and library option enums are the driver's. */
RT_API cudaError_t cudaLibraryLoadData(cudaLibrary_t* lib, const void* code,
                                       enum cudaJitOption* jo, void** jv, unsigned int njit,
                                       enum cudaLibraryOption* lo, void** lv, unsigned int nlib) {
  RT_ENTER();
  return RT_CALL(LibraryLoadData, (CUlibrary*)lib, code, (CUjit_option*)jo, jv, njit,
                 (CUlibraryOption*)lo, lv, nlib);
}

RT_API cudaError_t cudaLibraryUnload(cudaLibrary_t lib) {
  RT_ENTER();
  return RT_CALL(LibraryUnload, (CUlibrary)lib);
}

RT_API cudaError_t cudaLibraryGetKernel(cudaKernel_t* k, cudaLibrary_t lib, const char* name) {
  RT_ENTER();
  return RT_CALL(LibraryGetKernel, (CUkernel*)k, (CUlibrary)lib, name);
}

RT_API cudaError_t cudaLibraryGetKernelCount(unsigned int* n, cudaLibrary_t lib) {
  RT_ENTER();
  return RT_CALL(LibraryGetKernelCount, n, (CUlibrary)lib);
}

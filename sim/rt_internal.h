/* rt_internal.h: what the files of the sim's runtime (libcudart.so.13
 * stand-in: rt.c, rt_mem.c, rt_stream.c and the generated sim_rt_stubs.c)
 * share: the driver table, the per-thread error state, and the helpers that
 * turn a host stub or cudaKernel_t into a driver function.
 *
 * DESIGN: the runtime reaches the driver only through the table below, filled
 * once by rt_init() through cuGetProcAddress_v2 with the runtime's version
 * (13000): field pt_X holds the per-thread-default-stream variant of cuX, the
 * one the _ptsz/_ptds entry points use. Every failing runtime call records its
 * error as the thread's last error (grape__rt_err), which cudaGetLastError
 * returns and clears and cudaPeekAtLastError returns, as NVIDIA's runtime does.
 */
#ifndef GRAPE_SIM_RT_INTERNAL_H
#define GRAPE_SIM_RT_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cudaProfilerTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "cost.h"

#define RT_API __attribute__((visibility("default")))
#define RT_VERSION 13000

/* D(field, "cuGetProcAddress name", PFN type, version, per-thread variant):
 * each entry point is asked for at the version whose signature the runtime
 * calls, as NVIDIA's runtime does (it asks for cuCtxSynchronize at 2000, whose
 * function takes no context, and at 13000 for the _v2 that takes one). */
#define RT_DRIVER_TABLE(D)                                                                          \
  D(Init, "cuInit", PFN_cuInit_v2000, 2000, 0)                                                      \
  D(ProfilerStart, "cuProfilerStart", PFN_cuProfilerStart_v4000, 4000, 0)                          \
  D(ProfilerStop, "cuProfilerStop", PFN_cuProfilerStop_v4000, 4000, 0)                             \
  D(DriverGetVersion, "cuDriverGetVersion", PFN_cuDriverGetVersion_v2020, 2020, 0)                  \
  D(DeviceGet, "cuDeviceGet", PFN_cuDeviceGet_v2000, 2000, 0)                                       \
  D(DeviceGetCount, "cuDeviceGetCount", PFN_cuDeviceGetCount_v2000, 2000, 0)                        \
  D(DeviceGetName, "cuDeviceGetName", PFN_cuDeviceGetName_v2000, 2000, 0)                           \
  D(DeviceGetAttribute, "cuDeviceGetAttribute", PFN_cuDeviceGetAttribute_v2000, 2000, 0)            \
  D(DeviceTotalMem, "cuDeviceTotalMem", PFN_cuDeviceTotalMem_v3020, 3020, 0)                        \
  D(DeviceGetPCIBusId, "cuDeviceGetPCIBusId", PFN_cuDeviceGetPCIBusId_v4010, 4010, 0)               \
  D(DeviceGetByPCIBusId, "cuDeviceGetByPCIBusId", PFN_cuDeviceGetByPCIBusId_v4010, 4010, 0)         \
  D(DeviceCanAccessPeer, "cuDeviceCanAccessPeer", PFN_cuDeviceCanAccessPeer_v4000, 4000, 0)         \
  D(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", PFN_cuDevicePrimaryCtxRetain_v7000, 7000, 0) \
  D(DevicePrimaryCtxReset, "cuDevicePrimaryCtxReset", PFN_cuDevicePrimaryCtxReset_v11000, 11000, 0) \
  D(DevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease", PFN_cuDevicePrimaryCtxRelease_v11000, 11000, 0) \
  D(CtxSetCurrent, "cuCtxSetCurrent", PFN_cuCtxSetCurrent_v4000, 4000, 0)                           \
  D(CtxSynchronize, "cuCtxSynchronize", PFN_cuCtxSynchronize_v2000, 2000, 0)                        \
  D(CtxGetStreamPriorityRange, "cuCtxGetStreamPriorityRange", PFN_cuCtxGetStreamPriorityRange_v5050, 5050, 0) \
  D(CtxSetLimit, "cuCtxSetLimit", PFN_cuCtxSetLimit_v3010, 3010, 0)                                 \
  D(CtxGetLimit, "cuCtxGetLimit", PFN_cuCtxGetLimit_v3010, 3010, 0)                                 \
  D(MemAlloc, "cuMemAlloc", PFN_cuMemAlloc_v3020, 3020, 0)                                          \
  D(MemFree, "cuMemFree", PFN_cuMemFree_v3020, 3020, 0)                                             \
  D(MemAllocManaged, "cuMemAllocManaged", PFN_cuMemAllocManaged_v6000, 6000, 0)                     \
  D(MemAllocHost, "cuMemAllocHost", PFN_cuMemAllocHost_v3020, 3020, 0)                              \
  D(MemHostAlloc, "cuMemHostAlloc", PFN_cuMemHostAlloc_v2020, 2020, 0)                              \
  D(MemFreeHost, "cuMemFreeHost", PFN_cuMemFreeHost_v2000, 2000, 0)                                 \
  D(MemHostRegister, "cuMemHostRegister", PFN_cuMemHostRegister_v6050, 6050, 0)                     \
  D(MemHostUnregister, "cuMemHostUnregister", PFN_cuMemHostUnregister_v4000, 4000, 0)               \
  D(MemHostGetDevicePointer, "cuMemHostGetDevicePointer", PFN_cuMemHostGetDevicePointer_v3020, 3020, 0) \
  D(MemGetInfo, "cuMemGetInfo", PFN_cuMemGetInfo_v3020, 3020, 0)                                    \
  D(MemAllocPitch, "cuMemAllocPitch", PFN_cuMemAllocPitch_v3020, 3020, 0)                           \
  D(PointerGetAttributes, "cuPointerGetAttributes", PFN_cuPointerGetAttributes_v7000, 7000, 0)      \
  D(MemPoolCreate, "cuMemPoolCreate", PFN_cuMemPoolCreate_v11020, 11020, 0)                         \
  D(MemPoolDestroy, "cuMemPoolDestroy", PFN_cuMemPoolDestroy_v11020, 11020, 0)                      \
  D(MemPoolTrimTo, "cuMemPoolTrimTo", PFN_cuMemPoolTrimTo_v11020, 11020, 0)                         \
  D(MemPoolSetAttribute, "cuMemPoolSetAttribute", PFN_cuMemPoolSetAttribute_v11020, 11020, 0)       \
  D(MemPoolGetAttribute, "cuMemPoolGetAttribute", PFN_cuMemPoolGetAttribute_v11020, 11020, 0)       \
  D(MemPoolSetAccess, "cuMemPoolSetAccess", PFN_cuMemPoolSetAccess_v11020, 11020, 0)                \
  D(MemPoolGetAccess, "cuMemPoolGetAccess", PFN_cuMemPoolGetAccess_v11020, 11020, 0)                \
  D(DeviceGetDefaultMemPool, "cuDeviceGetDefaultMemPool", PFN_cuDeviceGetDefaultMemPool_v11020, 11020, 0) \
  D(DeviceGetMemPool, "cuDeviceGetMemPool", PFN_cuDeviceGetMemPool_v11020, 11020, 0)                \
  D(DeviceSetMemPool, "cuDeviceSetMemPool", PFN_cuDeviceSetMemPool_v11020, 11020, 0)                \
  D(MemAdvise, "cuMemAdvise", PFN_cuMemAdvise_v12020, 12020, 0)                                     \
  D(MemcpyHtoD, "cuMemcpyHtoD", PFN_cuMemcpyHtoD_v3020, 3020, 0)                                    \
  D(MemcpyDtoH, "cuMemcpyDtoH", PFN_cuMemcpyDtoH_v3020, 3020, 0)                                    \
  D(MemcpyDtoD, "cuMemcpyDtoD", PFN_cuMemcpyDtoD_v3020, 3020, 0)                                    \
  D(MemcpyHtoDAsync, "cuMemcpyHtoDAsync", PFN_cuMemcpyHtoDAsync_v3020, 3020, 0)                     \
  D(MemcpyDtoHAsync, "cuMemcpyDtoHAsync", PFN_cuMemcpyDtoHAsync_v3020, 3020, 0)                     \
  D(MemcpyDtoDAsync, "cuMemcpyDtoDAsync", PFN_cuMemcpyDtoDAsync_v3020, 3020, 0)                     \
  D(StreamCreate, "cuStreamCreate", PFN_cuStreamCreate_v2000, 2000, 0)                              \
  D(StreamCreateWithPriority, "cuStreamCreateWithPriority", PFN_cuStreamCreateWithPriority_v5050, 5050, 0) \
  D(StreamDestroy, "cuStreamDestroy", PFN_cuStreamDestroy_v4000, 4000, 0)                           \
  D(ThreadExchangeStreamCaptureMode, "cuThreadExchangeStreamCaptureMode", PFN_cuThreadExchangeStreamCaptureMode_v10010, 10010, 0) \
  D(EventCreate, "cuEventCreate", PFN_cuEventCreate_v2000, 2000, 0)                                 \
  D(EventDestroy, "cuEventDestroy", PFN_cuEventDestroy_v4000, 4000, 0)                              \
  D(EventQuery, "cuEventQuery", PFN_cuEventQuery_v2000, 2000, 0)                                    \
  D(EventSynchronize, "cuEventSynchronize", PFN_cuEventSynchronize_v2000, 2000, 0)                  \
  D(EventElapsedTime, "cuEventElapsedTime", PFN_cuEventElapsedTime_v12080, 12080, 0)                \
  D(LibraryLoadData, "cuLibraryLoadData", PFN_cuLibraryLoadData_v12000, 12000, 0)                   \
  D(LibraryUnload, "cuLibraryUnload", PFN_cuLibraryUnload_v12000, 12000, 0)                         \
  D(LibraryGetKernel, "cuLibraryGetKernel", PFN_cuLibraryGetKernel_v12000, 12000, 0)                \
  D(LibraryGetGlobal, "cuLibraryGetGlobal", PFN_cuLibraryGetGlobal_v12000, 12000, 0)                \
  D(Array3DCreate, "cuArray3DCreate", PFN_cuArray3DCreate_v3020, 3020, 0)                           \
  D(Array3DGetDescriptor, "cuArray3DGetDescriptor", PFN_cuArray3DGetDescriptor_v3020, 3020, 0)      \
  D(ArrayDestroy, "cuArrayDestroy", PFN_cuArrayDestroy_v2000, 2000, 0)                              \
  D(LibraryGetKernelCount, "cuLibraryGetKernelCount", PFN_cuLibraryGetKernelCount_v12040, 12040, 0) \
  D(KernelGetName, "cuKernelGetName", PFN_cuKernelGetName_v12030, 12030, 0)                         \
  D(KernelGetAttribute, "cuKernelGetAttribute", PFN_cuKernelGetAttribute_v12000, 12000, 0)          \
  D(KernelGetParamInfo, "cuKernelGetParamInfo", PFN_cuKernelGetParamInfo_v12040, 12040, 0)          \
  D(FuncSetAttribute, "cuFuncSetAttribute", PFN_cuFuncSetAttribute_v9000, 9000, 0)                  \
  D(FuncSetCacheConfig, "cuFuncSetCacheConfig", PFN_cuFuncSetCacheConfig_v3000, 3000, 0)            \
  D(FuncGetName, "cuFuncGetName", PFN_cuFuncGetName_v12030, 12030, 0)                               \
  D(FuncGetParamInfo, "cuFuncGetParamInfo", PFN_cuFuncGetParamInfo_v12040, 12040, 0)                \
  D(OccupancyMaxActiveBlocksPerMultiprocessorWithFlags, "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags", PFN_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000, 7000, 0) \
  D(OccupancyAvailableDynamicSMemPerBlock, "cuOccupancyAvailableDynamicSMemPerBlock", PFN_cuOccupancyAvailableDynamicSMemPerBlock_v10020, 10020, 0) \
  D(GraphCreate, "cuGraphCreate", PFN_cuGraphCreate_v10000, 10000, 0)                               \
  D(GraphDestroy, "cuGraphDestroy", PFN_cuGraphDestroy_v10000, 10000, 0)                            \
  D(GraphAddKernelNode, "cuGraphAddKernelNode", PFN_cuGraphAddKernelNode_v12000, 12000, 0)          \
  D(GraphAddMemsetNode, "cuGraphAddMemsetNode", PFN_cuGraphAddMemsetNode_v10000, 10000, 0)          \
  D(GraphAddMemcpyNode, "cuGraphAddMemcpyNode", PFN_cuGraphAddMemcpyNode_v10000, 10000, 0)          \
  D(GraphAddHostNode, "cuGraphAddHostNode", PFN_cuGraphAddHostNode_v10000, 10000, 0)                \
  D(GraphAddEmptyNode, "cuGraphAddEmptyNode", PFN_cuGraphAddEmptyNode_v10000, 10000, 0)             \
  D(GraphAddEventRecordNode, "cuGraphAddEventRecordNode", PFN_cuGraphAddEventRecordNode_v11010, 11010, 0) \
  D(GraphAddEventWaitNode, "cuGraphAddEventWaitNode", PFN_cuGraphAddEventWaitNode_v11010, 11010, 0) \
  D(GraphGetNodes, "cuGraphGetNodes", PFN_cuGraphGetNodes_v10000, 10000, 0)                         \
  D(GraphNodeGetType, "cuGraphNodeGetType", PFN_cuGraphNodeGetType_v10000, 10000, 0)                \
  D(GraphKernelNodeGetParams, "cuGraphKernelNodeGetParams", PFN_cuGraphKernelNodeGetParams_v12000, 12000, 0) \
  D(GraphKernelNodeSetParams, "cuGraphKernelNodeSetParams", PFN_cuGraphKernelNodeSetParams_v12000, 12000, 0) \
  D(GraphKernelNodeSetAttribute, "cuGraphKernelNodeSetAttribute", PFN_cuGraphKernelNodeSetAttribute_v11000, 11000, 0) \
  D(GraphKernelNodeGetAttribute, "cuGraphKernelNodeGetAttribute", PFN_cuGraphKernelNodeGetAttribute_v11000, 11000, 0) \
  D(GraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", PFN_cuGraphInstantiateWithFlags_v11040, 11040, 0) \
  D(GraphExecDestroy, "cuGraphExecDestroy", PFN_cuGraphExecDestroy_v10000, 10000, 0)                \
  D(GraphExecGetFlags, "cuGraphExecGetFlags", PFN_cuGraphExecGetFlags_v12000, 12000, 0)             \
  D(GraphExecKernelNodeSetParams, "cuGraphExecKernelNodeSetParams", PFN_cuGraphExecKernelNodeSetParams_v12000, 12000, 0) \
  D(GraphExecMemsetNodeSetParams, "cuGraphExecMemsetNodeSetParams", PFN_cuGraphExecMemsetNodeSetParams_v10020, 10020, 0) \
  D(GraphExecMemcpyNodeSetParams, "cuGraphExecMemcpyNodeSetParams", PFN_cuGraphExecMemcpyNodeSetParams_v10020, 10020, 0) \
  D(GraphExecUpdate, "cuGraphExecUpdate", PFN_cuGraphExecUpdate_v12000, 12000, 0)                   \
  D(GetErrorString, "cuGetErrorString", PFN_cuGetErrorString_v6000, 6000, 0)                        \
  D(Memcpy, "cuMemcpy", PFN_cuMemcpy_v4000, 4000, 0)                                                \
  D(MemcpyAsync, "cuMemcpyAsync", PFN_cuMemcpyAsync_v4000, 4000, 0)                                 \
  D(Memcpy2D, "cuMemcpy2D", PFN_cuMemcpy2D_v3020, 3020, 0)                                          \
  D(Memcpy2DAsync, "cuMemcpy2DAsync", PFN_cuMemcpy2DAsync_v3020, 3020, 0)                           \
  D(MemcpyBatchAsync, "cuMemcpyBatchAsync", PFN_cuMemcpyBatchAsync_v13000, 13000, 0)                \
  D(Memcpy3DBatchAsync, "cuMemcpy3DBatchAsync", PFN_cuMemcpy3DBatchAsync_v13000, 13000, 0)          \
  D(Memcpy3D, "cuMemcpy3D", PFN_cuMemcpy3D_v3020, 3020, 0)                                          \
  D(Memcpy3DAsync, "cuMemcpy3DAsync", PFN_cuMemcpy3DAsync_v3020, 3020, 0)                           \
  D(MemcpyPeer, "cuMemcpyPeer", PFN_cuMemcpyPeer_v4000, 4000, 0)                                    \
  D(MemcpyPeerAsync, "cuMemcpyPeerAsync", PFN_cuMemcpyPeerAsync_v4000, 4000, 0)                     \
  D(Memcpy3DPeer, "cuMemcpy3DPeer", PFN_cuMemcpy3DPeer_v4000, 4000, 0)                              \
  D(Memcpy3DPeerAsync, "cuMemcpy3DPeerAsync", PFN_cuMemcpy3DPeerAsync_v4000, 4000, 0)               \
  D(MemsetD8, "cuMemsetD8", PFN_cuMemsetD8_v3020, 3020, 0)                                          \
  D(MemsetD8Async, "cuMemsetD8Async", PFN_cuMemsetD8Async_v3020, 3020, 0)                           \
  D(MemsetD2D8, "cuMemsetD2D8", PFN_cuMemsetD2D8_v3020, 3020, 0)                                    \
  D(MemsetD2D8Async, "cuMemsetD2D8Async", PFN_cuMemsetD2D8Async_v3020, 3020, 0)                     \
  D(MemPrefetchAsync, "cuMemPrefetchAsync", PFN_cuMemPrefetchAsync_v12020, 12020, 0)                \
  D(MemAllocAsync, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020, 11020, 0)                         \
  D(MemFreeAsync, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020, 11020, 0)                            \
  D(MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", PFN_cuMemAllocFromPoolAsync_v11020, 11020, 0) \
  D(StreamSynchronize, "cuStreamSynchronize", PFN_cuStreamSynchronize_v2000, 2000, 0)               \
  D(StreamQuery, "cuStreamQuery", PFN_cuStreamQuery_v2000, 2000, 0)                                 \
  D(StreamWaitEvent, "cuStreamWaitEvent", PFN_cuStreamWaitEvent_v3020, 3020, 0)                     \
  D(StreamGetFlags, "cuStreamGetFlags", PFN_cuStreamGetFlags_v5050, 5050, 0)                        \
  D(StreamGetPriority, "cuStreamGetPriority", PFN_cuStreamGetPriority_v5050, 5050, 0)               \
  D(StreamGetId, "cuStreamGetId", PFN_cuStreamGetId_v12000, 12000, 0)                               \
  D(StreamGetDevice, "cuStreamGetDevice", PFN_cuStreamGetDevice_v12080, 12080, 0)                   \
  D(StreamAddCallback, "cuStreamAddCallback", PFN_cuStreamAddCallback_v5000, 5000, 0)               \
  D(StreamAttachMemAsync, "cuStreamAttachMemAsync", PFN_cuStreamAttachMemAsync_v6000, 6000, 0)      \
  D(StreamBeginCapture, "cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010, 10010, 0)          \
  D(StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", PFN_cuStreamBeginCaptureToGraph_v12030, 12030, 0) \
  D(StreamEndCapture, "cuStreamEndCapture", PFN_cuStreamEndCapture_v10000, 10000, 0)                \
  D(StreamIsCapturing, "cuStreamIsCapturing", PFN_cuStreamIsCapturing_v10000, 10000, 0)             \
  D(StreamGetCaptureInfo, "cuStreamGetCaptureInfo", PFN_cuStreamGetCaptureInfo_v12030, 12030, 0)    \
  D(LaunchHostFunc, "cuLaunchHostFunc", PFN_cuLaunchHostFunc_v10000, 10000, 0)                      \
  D(EventRecord, "cuEventRecord", PFN_cuEventRecord_v2000, 2000, 0)                                 \
  D(EventRecordWithFlags, "cuEventRecordWithFlags", PFN_cuEventRecordWithFlags_v11010, 11010, 0)    \
  D(LaunchKernel, "cuLaunchKernel", PFN_cuLaunchKernel_v4000, 4000, 0)                              \
  D(LaunchKernelEx, "cuLaunchKernelEx", PFN_cuLaunchKernelEx_v11060, 11060, 0)                      \
  D(LaunchCooperativeKernel, "cuLaunchCooperativeKernel", PFN_cuLaunchCooperativeKernel_v9000, 9000, 0) \
  D(GraphLaunch, "cuGraphLaunch", PFN_cuGraphLaunch_v10000, 10000, 0)                               \
  D(GraphUpload, "cuGraphUpload", PFN_cuGraphUpload_v11010, 11010, 0)                               \
  D(pt_Memcpy, "cuMemcpy", PFN_cuMemcpy_v7000_ptds, 7000, 1)                                        \
  D(pt_MemcpyAsync, "cuMemcpyAsync", PFN_cuMemcpyAsync_v7000_ptsz, 7000, 1)                         \
  D(pt_Memcpy2D, "cuMemcpy2D", PFN_cuMemcpy2D_v7000_ptds, 7000, 1)                                  \
  D(pt_Memcpy2DAsync, "cuMemcpy2DAsync", PFN_cuMemcpy2DAsync_v7000_ptsz, 7000, 1)                   \
  D(pt_MemcpyBatchAsync, "cuMemcpyBatchAsync", PFN_cuMemcpyBatchAsync_v13000_ptsz, 13000, 1)        \
  D(pt_Memcpy3DBatchAsync, "cuMemcpy3DBatchAsync", PFN_cuMemcpy3DBatchAsync_v13000_ptsz, 13000, 1)  \
  D(pt_Memcpy3D, "cuMemcpy3D", PFN_cuMemcpy3D_v7000_ptds, 7000, 1)                                  \
  D(pt_Memcpy3DAsync, "cuMemcpy3DAsync", PFN_cuMemcpy3DAsync_v7000_ptsz, 7000, 1)                   \
  D(pt_MemcpyPeer, "cuMemcpyPeer", PFN_cuMemcpyPeer_v7000_ptds, 7000, 1)                            \
  D(pt_MemcpyPeerAsync, "cuMemcpyPeerAsync", PFN_cuMemcpyPeerAsync_v7000_ptsz, 7000, 1)             \
  D(pt_Memcpy3DPeer, "cuMemcpy3DPeer", PFN_cuMemcpy3DPeer_v7000_ptds, 7000, 1)                      \
  D(pt_Memcpy3DPeerAsync, "cuMemcpy3DPeerAsync", PFN_cuMemcpy3DPeerAsync_v7000_ptsz, 7000, 1)       \
  D(pt_MemsetD8, "cuMemsetD8", PFN_cuMemsetD8_v7000_ptds, 7000, 1)                                  \
  D(pt_MemsetD8Async, "cuMemsetD8Async", PFN_cuMemsetD8Async_v7000_ptsz, 7000, 1)                   \
  D(pt_MemsetD2D8, "cuMemsetD2D8", PFN_cuMemsetD2D8_v7000_ptds, 7000, 1)                            \
  D(pt_MemsetD2D8Async, "cuMemsetD2D8Async", PFN_cuMemsetD2D8Async_v7000_ptsz, 7000, 1)             \
  D(pt_MemPrefetchAsync, "cuMemPrefetchAsync", PFN_cuMemPrefetchAsync_v12020_ptsz, 12020, 1)        \
  D(pt_MemAllocAsync, "cuMemAllocAsync", PFN_cuMemAllocAsync_v11020_ptsz, 11020, 1)                 \
  D(pt_MemFreeAsync, "cuMemFreeAsync", PFN_cuMemFreeAsync_v11020_ptsz, 11020, 1)                    \
  D(pt_MemAllocFromPoolAsync, "cuMemAllocFromPoolAsync", PFN_cuMemAllocFromPoolAsync_v11020_ptsz, 11020, 1) \
  D(pt_StreamSynchronize, "cuStreamSynchronize", PFN_cuStreamSynchronize_v7000_ptsz, 7000, 1)       \
  D(pt_StreamQuery, "cuStreamQuery", PFN_cuStreamQuery_v7000_ptsz, 7000, 1)                         \
  D(pt_StreamWaitEvent, "cuStreamWaitEvent", PFN_cuStreamWaitEvent_v7000_ptsz, 7000, 1)             \
  D(pt_StreamGetFlags, "cuStreamGetFlags", PFN_cuStreamGetFlags_v7000_ptsz, 7000, 1)                \
  D(pt_StreamGetPriority, "cuStreamGetPriority", PFN_cuStreamGetPriority_v7000_ptsz, 7000, 1)       \
  D(pt_StreamGetId, "cuStreamGetId", PFN_cuStreamGetId_v12000_ptsz, 12000, 1)                       \
  D(pt_StreamGetDevice, "cuStreamGetDevice", PFN_cuStreamGetDevice_v12080_ptsz, 12080, 1)           \
  D(pt_StreamAddCallback, "cuStreamAddCallback", PFN_cuStreamAddCallback_v7000_ptsz, 7000, 1)       \
  D(pt_StreamAttachMemAsync, "cuStreamAttachMemAsync", PFN_cuStreamAttachMemAsync_v7000_ptsz, 7000, 1) \
  D(pt_StreamBeginCapture, "cuStreamBeginCapture", PFN_cuStreamBeginCapture_v10010_ptsz, 10010, 1)  \
  D(pt_StreamBeginCaptureToGraph, "cuStreamBeginCaptureToGraph", PFN_cuStreamBeginCaptureToGraph_v12030_ptsz, 12030, 1) \
  D(pt_StreamEndCapture, "cuStreamEndCapture", PFN_cuStreamEndCapture_v10000_ptsz, 10000, 1)        \
  D(pt_StreamIsCapturing, "cuStreamIsCapturing", PFN_cuStreamIsCapturing_v10000_ptsz, 10000, 1)     \
  D(pt_StreamGetCaptureInfo, "cuStreamGetCaptureInfo", PFN_cuStreamGetCaptureInfo_v12030_ptsz, 12030, 1) \
  D(pt_LaunchHostFunc, "cuLaunchHostFunc", PFN_cuLaunchHostFunc_v10000_ptsz, 10000, 1)              \
  D(pt_EventRecord, "cuEventRecord", PFN_cuEventRecord_v7000_ptsz, 7000, 1)                         \
  D(pt_EventRecordWithFlags, "cuEventRecordWithFlags", PFN_cuEventRecordWithFlags_v11010_ptsz, 11010, 1) \
  D(pt_LaunchKernel, "cuLaunchKernel", PFN_cuLaunchKernel_v7000_ptsz, 7000, 1)                      \
  D(pt_LaunchKernelEx, "cuLaunchKernelEx", PFN_cuLaunchKernelEx_v11060_ptsz, 11060, 1)              \
  D(pt_LaunchCooperativeKernel, "cuLaunchCooperativeKernel", PFN_cuLaunchCooperativeKernel_v9000_ptsz, 9000, 1) \
  D(pt_GraphLaunch, "cuGraphLaunch", PFN_cuGraphLaunch_v10000_ptsz, 10000, 1)                       \
  D(pt_GraphUpload, "cuGraphUpload", PFN_cuGraphUpload_v11010_ptsz, 11010, 1)

struct grape__rt_drv_s {
#define D(field, name, type, ver, pt) type field;
  RT_DRIVER_TABLE(D)
#undef D
};

/* The driver's entry points (rt.c); one the driver lacks answers
 * CUDA_ERROR_NOT_SUPPORTED, so no field is NULL once the runtime is loaded. */
extern struct grape__rt_drv_s grape__rt_drv;
#define drv grape__rt_drv

extern PFN_cuGetProcAddress_v12000 grape__rt_get_proc;
extern CUcontext grape__rt_primary_ctx;

/* Loads the driver once and makes the primary context current on the calling
 * thread; cudaSuccess or the error every call then fails with. */
cudaError_t grape__rt_enter(void);

/* Records e as the thread's last error when it is one; returns e. */
cudaError_t grape__rt_err(cudaError_t e);

/* The runtime error for a driver result (the codes agree numerically for every
 * code the sim returns). */
static inline cudaError_t grape__rt_map(CUresult r) {
  return (cudaError_t)r;
}

/* The answer of a function the runtime does not implement: the runtime's cost
 * per call, one line naming it (once per function), cudaErrorNotSupported as
 * the thread's last error. */
cudaError_t grape__rt_unsupported(const char* name, atomic_int* warned);

/* A host stub (or a cudaKernel_t) as the driver function behind it. */
cudaError_t grape__rt_resolve_func(const void* func, CUfunction* out);

/* The host stub registered for a driver function, or the function itself. */
const void* grape__rt_host_of(CUfunction f);

/* A cudaMemcpy3D parameter block as the driver's (rt_mem.c); an array's
 * positions and extent are in elements, which need its descriptor (a driver
 * call). */
cudaError_t grape__rt_copy3d_params(const struct cudaMemcpy3DParms* p, CUDA_MEMCPY3D* c);

/* The bytes of one element of a CUDA array (rt_array.c). */
cudaError_t grape__rt_array_esize(cudaArray_const_t a, size_t* out);

/* A 1-D copy of n bytes by the runtime's copy kind, as cudaMemcpy[Async]
 * does it (rt_mem.c); pt: the per-thread default stream's form. */
cudaError_t grape__rt_memcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind kind,
                             cudaStream_t s, int async, int pt);

/* The device variable registered with host shadow `symbol` (rt.c): its
 * address (found in its fatbin's library at first use) and size;
 * cudaErrorInvalidSymbol for an address nvcc did not register. */
cudaError_t grape__rt_symbol(const void* symbol, CUdeviceptr* dptr, size_t* size);

/* Returns expr's error, recorded, from the calling entry point when it fails. */
#define RT_TRY(expr)                                                               \
  do {                                                                             \
    cudaError_t t_ = (expr);                                                       \
    if (t_ != cudaSuccess)                                                         \
      return grape__rt_err(t_);                                                    \
  } while (0)

/* Charges simulated host work (SIMCU_WORK_*) on the calling thread through the
 * sim driver's private table; nothing under a driver without it (rt.c). */
void grape__rt_host_work(int kind);

/* Every entry point starts here; a failure of the driver load or of the
 * context becomes the call's (recorded) error, and a call that gets through
 * costs the runtime's own overhead (cost row "runtime") in simulated time. */
#define RT_ENTER()                                                                 \
  do {                                                                             \
    RT_TRY(grape__rt_enter());                                                     \
    grape__rt_host_work(SIMCU_WORK_RUNTIME);                                       \
  } while (0)

/* Calls a driver entry point and records its error. */
#define RT_CALL(fn, ...) grape__rt_err(grape__rt_map(drv.fn(__VA_ARGS__)))

/* The plain or the per-thread variant of a driver entry point. */
#define RT_PT(pt, fn) ((pt) ? drv.pt_##fn : drv.fn)

#endif

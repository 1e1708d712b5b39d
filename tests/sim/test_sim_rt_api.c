/* Tests of the functions of the sim's runtime beyond nvcc's launch path:
 * 2-D/3-D/peer copies and memsets, stream callbacks, managed-memory hints,
 * occupancy, memory pools, function queries and their error semantics,
 * cooperative launches, capture into an existing graph, graph nodes, simple
 * getters, and the stubs of what is not simulated. Kernels come from PTX
 * registered as nvcc's code does (rt_fatbin.c); their CPU bodies are here. */
#include <criterion/criterion.h>
#include <cuda.h>
#include <cudaProfiler.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "errcap.h"
#include "rt_fatbin.h"
#include "simcu.h"

/* Per-thread-default-stream forms (cuda_runtime_api.h declares them only to
 * programs built with --default-stream per-thread, under the plain names). */
cudaError_t cudaMemcpy2DAsync_ptsz(void* dst, size_t dpitch, const void* src, size_t spitch,
                                   size_t width, size_t height, enum cudaMemcpyKind k,
                                   cudaStream_t s);
cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t s, cudaStreamCallback_t cb, void* data,
                                       unsigned int flags);
cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t s, int* d);
cudaError_t cudaMemPrefetchAsync_ptsz(const void* p, size_t n, struct cudaMemLocation loc,
                                      unsigned int flags, cudaStream_t s);
cudaError_t cudaLaunchCooperativeKernel_ptsz(const void* func, dim3 g, dim3 b, void** args,
                                             size_t shm, cudaStream_t s);
cudaError_t cudaStreamBeginCaptureToGraph_ptsz(cudaStream_t s, cudaGraph_t g,
                                               const cudaGraphNode_t* deps,
                                               const cudaGraphEdgeData* edges, size_t n,
                                               enum cudaStreamCaptureMode mode);
cudaError_t cudaMallocAsync_ptsz(void** p, size_t n, cudaStream_t s);
cudaError_t cudaFreeAsync_ptsz(void* p, cudaStream_t s);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char* symbol, void** fn, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult* status);

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_add(.param .u64 a, .param .u32 n, .param .u32 v)\n{\n ret;\n}\n";

SIMCU_KERNEL(k_add) {
  int* a = SIMCU_ARG(0, int*);
  int n = SIMCU_ARG(1, int), v = SIMCU_ARG(2, int);
  SIMCU_FOR_THREADS(t) {
    int i = (int)SIMCU_GLOBAL_X(t);
    if (i < n)
      a[i] += v;
  }
}

static char k_add_stub;   /* the host stub nvcc would generate */

static void setup(void) {
  const char* names[] = {"k_add"};
  const void* stubs[] = {&k_add_stub};
  cr_assert_not_null(rt_register_ptx(ptx, names, stubs, 1));
}

TestSuite(rt_api, .init = setup);

static cudaError_t add(int* a, int n, int v, unsigned grid, unsigned block, cudaStream_t s) {
  void* args[] = {&a, &n, &v};
  return cudaLaunchKernel(&k_add_stub, (dim3){grid, 1, 1}, (dim3){block, 1, 1}, args, 0, s);
}

/* ---- Copies and memsets ---- */

#define ROWS 5
#define COLS 7

Test(rt_api, copies_and_memsets_in_two_dimensions) {
  int host[ROWS][COLS], back[ROWS][COLS];
  for (int y = 0; y < ROWS; y++)
    for (int x = 0; x < COLS; x++)
      host[y][x] = 100 * y + x;
  int* d;
  size_t pitch;
  cr_assert_eq(cudaMallocPitch((void**)&d, &pitch, COLS * sizeof(int), ROWS), cudaSuccess);
  cr_assert_eq(pitch % 512, 0);
  cr_assert_geq(pitch, COLS * sizeof(int));
  cr_assert_eq(cudaMemcpy2D(d, pitch, host, sizeof(host[0]), sizeof(host[0]), ROWS,
                            cudaMemcpyHostToDevice), cudaSuccess);
  /* Clear columns 2..4 of rows 1..3 (bytes, so 0 is every int 0). */
  char* box = (char*)d + pitch + 2 * sizeof(int);
  cr_assert_eq(cudaMemset2D(box, pitch, 0, 3 * sizeof(int), 3), cudaSuccess);
  cr_assert_eq(cudaMemcpy2D(back, sizeof(back[0]), d, pitch, sizeof(back[0]), ROWS,
                            cudaMemcpyDeviceToHost), cudaSuccess);
  for (int y = 0; y < ROWS; y++)
    for (int x = 0; x < COLS; x++) {
      int cleared = y >= 1 && y <= 3 && x >= 2 && x <= 4;
      cr_assert_eq(back[y][x], cleared ? 0 : 100 * y + x, "(%d,%d) = %d", y, x, back[y][x]);
    }
  /* An async copy from pageable memory takes the source as it was at the call. */
  cudaStream_t s;
  cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cr_assert_eq(cudaMemcpy2DAsync(d, pitch, host, sizeof(host[0]), sizeof(host[0]), ROWS,
                                 cudaMemcpyDefault, s), cudaSuccess);
  host[4][6] = -1;
  cr_assert_eq(cudaMemcpy2DAsync_ptsz(back, sizeof(back[0]), d, pitch, sizeof(back[0]), ROWS,
                                      cudaMemcpyDeviceToHost, s), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  cr_assert_eq(back[4][6], 406);
  cr_assert_eq(back[1][3], 103);
  /* Errors are the runtime's and become the thread's last error. */
  cr_assert_eq(cudaMemcpy2D(d, 8, host, sizeof(host[0]), sizeof(host[0]), 2,
                            cudaMemcpyHostToDevice), cudaErrorInvalidPitchValue);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidPitchValue);
  cr_assert_eq(cudaMemcpy2D(d, pitch, host, sizeof(host[0]), 4, 1, (enum cudaMemcpyKind)9),
               cudaErrorInvalidMemcpyDirection);
  cr_assert_eq(cudaMemcpy2D(d, pitch, host, sizeof(host[0]), sizeof(host[0]), ROWS + 100,
                            cudaMemcpyHostToDevice), cudaErrorInvalidValue, "past the allocation");
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
}

Test(rt_api, a_captured_2d_copy_is_one_memcpy_node) {
  int* d;
  int* h;
  size_t pitch;
  cudaStream_t s;
  cudaGraph_t g;
  cr_assert_eq(cudaMallocPitch((void**)&d, &pitch, 64, 8), cudaSuccess);
  cr_assert_eq(cudaMallocHost((void**)&h, 64 * 8), cudaSuccess);
  cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cr_assert_eq(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  cr_assert_eq(cudaMemcpy2DAsync(d, pitch, h, 64, 64, 8, cudaMemcpyHostToDevice, s), cudaSuccess);
  cr_assert_eq(cudaStreamEndCapture(s, &g), cudaSuccess);
  size_t n = 0;
  cr_assert_eq(cudaGraphGetNodes(g, NULL, &n), cudaSuccess);
  cr_assert_eq(n, 1, "one node for the whole copy, not one per row (%zu)", n);
  cudaGraphNode_t node;
  enum cudaGraphNodeType t;
  cr_assert_eq(cudaGraphGetNodes(g, &node, &n), cudaSuccess);
  cr_assert_eq(cudaGraphNodeGetType(node, &t), cudaSuccess);
  cr_assert_eq(t, cudaGraphNodeTypeMemcpy);
}

Test(rt_api, copies_and_memsets_in_three_dimensions) {
  enum { W = 6, H = 4, D = 3 };   /* bytes, rows, slices */
  unsigned char src[D][H][W], out[D][H][W];
  for (int z = 0; z < D; z++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++)
        src[z][y][x] = (unsigned char)(z * 50 + y * 10 + x);
  struct cudaPitchedPtr pp;
  cr_assert_eq(cudaMalloc3D(&pp, (struct cudaExtent){W, H, D}), cudaSuccess);
  cr_assert_eq(pp.ysize, H);
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof(p));
  p.srcPtr = (struct cudaPitchedPtr){src, W, W, H};
  p.dstPtr = pp;
  p.extent = (struct cudaExtent){W, H, D};
  p.kind = cudaMemcpyHostToDevice;
  cr_assert_eq(cudaMemcpy3D(&p), cudaSuccess);
  /* Slices 1..2, rows 1..2, bytes 2..4 to 0xEE: extent height < ysize, so one memset per slice. */
  struct cudaPitchedPtr box = pp;
  box.ptr = (char*)pp.ptr + pp.pitch * pp.ysize + pp.pitch + 2;
  cr_assert_eq(cudaMemset3D(box, 0xEE, (struct cudaExtent){3, 2, 2}), cudaSuccess);
  memset(&p, 0, sizeof(p));
  p.srcPtr = pp;
  p.dstPtr = (struct cudaPitchedPtr){out, W, W, H};
  p.extent = (struct cudaExtent){W, H, D};
  p.kind = cudaMemcpyDefault;
  cr_assert_eq(cudaMemcpy3D(&p), cudaSuccess);
  for (int z = 0; z < D; z++)
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        int in_box = z >= 1 && y >= 1 && y <= 2 && x >= 2 && x <= 4;
        cr_assert_eq(out[z][y][x], in_box ? 0xEE : src[z][y][x], "(%d,%d,%d)", z, y, x);
      }
  /* An offset source box: srcPos in bytes, rows and slices. */
  unsigned char one[2][2][2];
  memset(&p, 0, sizeof(p));
  p.srcPtr = pp;
  p.srcPos = (struct cudaPos){1, 2, 1};
  p.dstPtr = (struct cudaPitchedPtr){one, 2, 2, 2};
  p.extent = (struct cudaExtent){2, 2, 2};
  p.kind = cudaMemcpyDeviceToHost;
  cr_assert_eq(cudaMemcpy3DAsync(&p, NULL), cudaSuccess);
  cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
  cr_assert_eq(one[0][0][0], src[1][2][1]);
  cr_assert_eq(one[1][1][1], src[2][3][2]);
  cr_assert_eq(one[0][0][1], 0xEE, "inside the memset box");
  /* An array side that names no array. */
  p.srcArray = (cudaArray_t)&one;
  cr_assert_eq(cudaMemcpy3D(&p), cudaErrorInvalidResourceHandle);
  /* A graph memcpy node holds a 3-D box too. */
  cudaGraph_t g;
  cudaGraphNode_t n;
  cudaGraphExec_t x;
  memset(&p, 0, sizeof(p));
  memset(out, 0, sizeof(out));
  p.srcPtr = pp;
  p.dstPtr = (struct cudaPitchedPtr){out, W, W, H};
  p.extent = (struct cudaExtent){W, H, D};
  p.kind = cudaMemcpyDeviceToHost;
  cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
  cr_assert_eq(cudaGraphAddMemcpyNode(&n, g, NULL, 0, &p), cudaSuccess);
  cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  cr_assert_eq(cudaGraphLaunch(x, NULL), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(NULL), cudaSuccess);
  cr_assert_eq(out[2][3][5], src[2][3][5]);
  cr_assert_eq(out[1][1][2], 0xEE);
}

Test(rt_api, peer_copies_on_the_one_device) {
  int *a, *b, out[4] = {0}, in[4] = {1, 2, 3, 4};
  cr_assert_eq(cudaMalloc((void**)&a, sizeof(in)), cudaSuccess);
  cr_assert_eq(cudaMalloc((void**)&b, sizeof(in)), cudaSuccess);
  cr_assert_eq(cudaMemcpy(a, in, sizeof(in), cudaMemcpyHostToDevice), cudaSuccess);
  cr_assert_eq(cudaMemcpyPeer(b, 0, a, 0, sizeof(in)), cudaSuccess);
  cr_assert_eq(cudaMemcpy(out, b, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(out[3], 4);
  cr_assert_eq(cudaMemset(b, 0, sizeof(in)), cudaSuccess);
  cr_assert_eq(cudaMemcpyPeerAsync(b, 0, a, 0, sizeof(in), NULL), cudaSuccess);
  cr_assert_eq(cudaMemcpy(out, b, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(out[2], 3);
  cr_assert_eq(cudaMemcpyPeer(b, 1, a, 0, sizeof(in)), cudaErrorInvalidDevice);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDevice);
  struct cudaMemcpy3DPeerParms p;
  memset(&p, 0, sizeof(p));
  p.srcPtr = (struct cudaPitchedPtr){a, sizeof(in), sizeof(in), 1};
  p.dstPtr = (struct cudaPitchedPtr){out, sizeof(out), sizeof(out), 1};
  p.extent = (struct cudaExtent){sizeof(in), 1, 1};
  memset(out, 0, sizeof(out));
  cr_assert_eq(cudaMemcpy3DPeer(&p), cudaSuccess);
  cr_assert_eq(out[1], 2);
  p.dstDevice = 3;
  cr_assert_eq(cudaMemcpy3DPeerAsync(&p, NULL), cudaErrorInvalidDevice);
  int can = -1;
  cr_assert_eq(cudaDeviceCanAccessPeer(&can, 0, 0), cudaSuccess);
  cr_assert_eq(can, 0);
  cr_assert_eq(cudaDeviceEnablePeerAccess(0, 0), cudaErrorInvalidDevice);
}

/* ---- Streams ---- */

static int cb_order[4], cb_n;
static cudaError_t cb_status;
static void CUDART_CB on_done(cudaStream_t s, cudaError_t status, void* data) {
  (void)s;
  cb_status = status;
  cb_order[cb_n++] = *(int*)data;   /* reads what the kernel before it wrote */
}

Test(rt_api, stream_callbacks_run_in_stream_order) {
  int* m;
  cudaStream_t s;
  cr_assert_eq(cudaMallocManaged((void**)&m, sizeof(int), cudaMemAttachGlobal), cudaSuccess);
  *m = 0;
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(add(m, 1, 5, 1, 1, s), cudaSuccess);
  cr_assert_eq(cudaStreamAddCallback(s, on_done, m, 0), cudaSuccess);
  cr_assert_eq(add(m, 1, 5, 1, 1, s), cudaSuccess);
  cr_assert_eq(cudaStreamAddCallback_ptsz(s, on_done, m, 0), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  cr_assert_eq(cb_n, 2);
  cr_assert_eq(cb_order[0], 5);
  cr_assert_eq(cb_order[1], 10);
  cr_assert_eq(cb_status, cudaSuccess);
  cr_assert_eq(cudaStreamAddCallback(s, on_done, m, 1), cudaErrorInvalidValue, "flags must be 0");
  unsigned long long id = 0;
  int dev = -1;
  cr_assert_eq(cudaStreamGetId(s, &id), cudaSuccess);
  cr_assert_neq(id, 0);
  cr_assert_eq(cudaStreamGetDevice_ptsz(s, &dev), cudaSuccess);
  cr_assert_eq(dev, 0);
}

Test(rt_api, managed_memory_hints_are_checked_and_ordered) {
  float* m;
  float* d;
  cudaStream_t s;
  cudaEvent_t e;
  cr_assert_eq(cudaMallocManaged((void**)&m, 4096, cudaMemAttachGlobal), cudaSuccess);
  cr_assert_eq(cudaMalloc((void**)&d, 4096), cudaSuccess);
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(cudaEventCreate(&e), cudaSuccess);
  struct cudaMemLocation dev0 = {cudaMemLocationTypeDevice, 0};
  struct cudaMemLocation host = {cudaMemLocationTypeHost, 0};
  cr_assert_eq(cudaMemPrefetchAsync(m, 4096, dev0, 0, s), cudaSuccess);
  cr_assert_eq(cudaEventRecord(e, s), cudaSuccess);
  cr_assert_eq(cudaEventSynchronize(e), cudaSuccess);
  cr_assert_eq(cudaMemPrefetchAsync_ptsz(m, 1024, host, 0, NULL), cudaSuccess);
  cr_assert_eq(cudaMemPrefetchAsync(m, 4096, (struct cudaMemLocation){cudaMemLocationTypeDevice, 1},
                                    0, s), cudaErrorInvalidDevice);
  cr_assert_eq(cudaMemPrefetchAsync(d, 4096, dev0, 0, s), cudaErrorInvalidValue, "not managed");
  cr_assert_eq(cudaMemPrefetchAsync(m, 8192, dev0, 0, s), cudaErrorInvalidValue, "past the end");
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
  cr_assert_eq(cudaMemAdvise(m, 4096, cudaMemAdviseSetReadMostly, dev0), cudaSuccess);
  cr_assert_eq(cudaMemAdvise(m, 4096, cudaMemAdviseSetPreferredLocation, host), cudaSuccess);
  cr_assert_eq(cudaMemAdvise(d, 4096, cudaMemAdviseSetAccessedBy, dev0), cudaErrorInvalidValue);
  cr_assert_eq(cudaMemAdvise(m, 4096, (enum cudaMemoryAdvise)42, dev0), cudaErrorInvalidValue);
  cr_assert_eq(cudaStreamAttachMemAsync(s, m, 0, cudaMemAttachSingle), cudaSuccess);
  cr_assert_eq(cudaStreamAttachMemAsync(s, d, 0, cudaMemAttachSingle), cudaErrorInvalidValue);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
}

/* ---- Functions ---- */

Test(rt_api, occupancy_of_an_h200) {
  int n = -1;
  /* A kernel without register information counts 32 registers per thread. */
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &k_add_stub, 256, 0), cudaSuccess);
  cr_assert_eq(n, 8, "2048 threads per SM: %d", n);
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &k_add_stub, 64, 0), cudaSuccess);
  cr_assert_eq(n, 32, "at most 32 blocks per SM: %d", n);
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &k_add_stub, 1024, 0), cudaSuccess);
  cr_assert_eq(n, 2);
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &k_add_stub, 1025, 0), cudaSuccess);
  cr_assert_eq(n, 0, "a block larger than the limit never fits");
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&n, &k_add_stub, 128, 40000,
                                                                      cudaOccupancyDefault),
               cudaSuccess);
  cr_assert_eq(n, 5, "228 KiB / (40000 + 1 KiB reserved) per block: %d", n);
  /* More dynamic shared memory than the function allows, until it opts in. */
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &k_add_stub, 128, 100000),
               cudaSuccess);
  cr_assert_eq(n, 0);
  cr_assert_eq(cudaFuncSetAttribute(&k_add_stub, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    100000), cudaSuccess);
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &k_add_stub, 128, 100000),
               cudaSuccess);
  cr_assert_eq(n, 2);
  size_t dyn = 0;
  cr_assert_eq(cudaOccupancyAvailableDynamicSMemPerBlock(&dyn, &k_add_stub, 4, 256), cudaSuccess);
  cr_assert_eq(dyn, 233472 / 4 - 1024);
  char other;
  cr_assert_eq(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, &other, 128, 0),
               cudaErrorInvalidDeviceFunction);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
}

Test(rt_api, function_queries_fail_like_cuda_and_set_the_last_error) {
  const char* name = NULL;
  cr_assert_eq(cudaFuncGetName(&name, &k_add_stub), cudaSuccess);
  cr_assert_str_eq(name, "k_add");
  size_t off, size, offs[3], sizes[3];
  for (size_t i = 0; i < 3; i++)
    cr_assert_eq(cudaFuncGetParamInfo(&k_add_stub, i, &offs[i], &sizes[i]), cudaSuccess);
  cr_assert_eq(offs[1], 8);
  cr_assert_eq(sizes[0], 8);
  cr_assert_eq(offs[2], 12);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
  /* Probing past the last parameter fails, and the failure is the thread's last error. */
  cr_assert_eq(cudaFuncGetParamInfo(&k_add_stub, 3, &off, &size), cudaErrorInvalidValue);
  cr_assert_eq(cudaPeekAtLastError(), cudaErrorInvalidValue);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);
  char other;
  cr_assert_eq(cudaFuncGetName(&name, &other), cudaErrorInvalidDeviceFunction);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidDeviceFunction);
  cr_assert_eq(cudaFuncGetName(NULL, &k_add_stub), cudaErrorInvalidValue);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
  /* A cudaKernel_t works wherever a host stub does. */
  cudaKernel_t k;
  cr_assert_eq(cudaGetKernel(&k, &k_add_stub), cudaSuccess);
  cr_assert_eq(cudaFuncGetParamInfo(k, 2, &off, &size), cudaSuccess);
  cr_assert_eq(size, 4);
}

Test(rt_api, cooperative_launches_must_fit_on_the_device) {
  int* d;
  int out[64];
  cr_assert_eq(cudaMalloc((void**)&d, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaMemset(d, 0, sizeof(out)), cudaSuccess);
  int n = 64, v = 3;
  void* args[] = {&d, &n, &v};
  cr_assert_eq(cudaLaunchCooperativeKernel(&k_add_stub, (dim3){2, 1, 1}, (dim3){32, 1, 1}, args, 0,
                                           NULL), cudaSuccess);
  cr_assert_eq(cudaLaunchCooperativeKernel_ptsz(&k_add_stub, (dim3){4, 1, 1}, (dim3){16, 1, 1},
                                                args, 0, NULL), cudaSuccess);
  cr_assert_eq(cudaDeviceSynchronize(), cudaSuccess);
  cr_assert_eq(cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(out[63], 6);
  cr_assert_eq(cudaLaunchCooperativeKernel(&k_add_stub, (dim3){132 * 32 + 1, 1, 1},
                                           (dim3){32, 1, 1}, args, 0, NULL),
               cudaErrorCooperativeLaunchTooLarge);
  cr_assert_eq(cudaGetLastError(), cudaErrorCooperativeLaunchTooLarge);
}

/* ---- Graphs ---- */

Test(rt_api, capture_into_an_existing_graph_after_its_nodes) {
  int* d;
  int out[16];
  cudaStream_t s;
  cudaGraph_t g, got;
  cudaGraphNode_t ms;
  cudaGraphExec_t x;
  cr_assert_eq(cudaMalloc((void**)&d, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
  struct cudaMemsetParams mp = {.dst = d, .pitch = 0, .value = 1, .elementSize = 4,
                                .width = 16, .height = 1};
  cr_assert_eq(cudaGraphAddMemsetNode(&ms, g, NULL, 0, &mp), cudaSuccess);
  cr_assert_eq(cudaStreamBeginCaptureToGraph(s, g, &ms, NULL, 1, cudaStreamCaptureModeGlobal),
               cudaSuccess);
  cr_assert_eq(add(d, 16, 41, 1, 16, s), cudaSuccess);
  cr_assert_eq(cudaStreamEndCapture(s, &got), cudaSuccess);
  cr_assert_eq(got, g, "capture into a graph returns that graph");
  size_t n = 0;
  cr_assert_eq(cudaGraphGetNodes(g, NULL, &n), cudaSuccess);
  cr_assert_eq(n, 2);
  cr_assert_eq(cudaMemset(d, 0, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaGraphInstantiate(&x, g, 0), cudaSuccess);
  cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  cr_assert_eq(cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost), cudaSuccess);
  cr_assert_eq(out[15], 42, "the kernel ran after the memset node it was captured after");
  /* A dependency that is not a node of that graph is refused. */
  cudaGraph_t other;
  cudaGraphNode_t foreign;
  cr_assert_eq(cudaGraphCreate(&other, 0), cudaSuccess);
  cr_assert_eq(cudaGraphAddEmptyNode(&foreign, other, NULL, 0), cudaSuccess);
  cr_assert_eq(cudaStreamBeginCaptureToGraph_ptsz(s, g, &foreign, NULL, 1,
                                                  cudaStreamCaptureModeGlobal),
               cudaErrorInvalidValue);
}

Test(rt_api, graph_nodes_and_instantiation_parameters) {
  int* d;
  int out[8];
  cudaGraph_t g;
  cudaGraphNode_t k, e;
  cudaGraphExec_t x;
  cudaStream_t s;
  cr_assert_eq(cudaMalloc((void**)&d, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaMemset(d, 0, sizeof(out)), cudaSuccess);
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
  cr_assert_eq(cudaGraphAddEmptyNode(&e, g, NULL, 0), cudaSuccess);
  int n = 8, v = 2;
  void* args[] = {&d, &n, &v};
  struct cudaKernelNodeParams kp = {.func = &k_add_stub, .gridDim = {1, 1, 1},
                                    .blockDim = {8, 1, 1}, .kernelParams = args};
  cr_assert_eq(cudaGraphAddKernelNode(&k, g, &e, 1, &kp), cudaSuccess);
  struct cudaKernelNodeParams back;
  cr_assert_eq(cudaGraphKernelNodeGetParams(k, &back), cudaSuccess);
  cr_assert_eq(back.func, &k_add_stub, "reported as the host stub it was added with");
  cr_assert_eq(back.blockDim.x, 8);
  cudaGraphInstantiateParams ip = {.flags = cudaGraphInstantiateFlagUpload, .uploadStream = s};
  cr_assert_eq(cudaGraphInstantiateWithParams(&x, g, &ip), cudaSuccess);
  cr_assert_eq(ip.result_out, cudaGraphInstantiateSuccess);
  unsigned long long flags = 1;
  cr_assert_eq(cudaGraphExecGetFlags(x, &flags), cudaSuccess);
  cr_assert_eq(flags, 0, "the upload flag is the instantiation's, not the executable's");
  cr_assert_eq(cudaGraphUpload(x, s), cudaSuccess);
  cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
  cr_assert_eq(cudaGraphLaunch(x, s), cudaSuccess);
  cr_assert_eq(cudaMemcpyAsync(out, d, sizeof(out), cudaMemcpyDeviceToHost, s), cudaSuccess);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  cr_assert_eq(out[7], 4);
}

/* ---- Pools ---- */

Test(rt_api, memory_pools) {
  cudaMemPool_t def, cur, pool;
  cr_assert_eq(cudaDeviceGetDefaultMemPool(&def, 0), cudaSuccess);
  cr_assert_eq(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
  cr_assert_eq(cur, def);
  struct cudaMemPoolProps props = {.allocType = cudaMemAllocationTypePinned,
                                   .location = {cudaMemLocationTypeDevice, 0}};
  cr_assert_eq(cudaMemPoolCreate(&pool, &props), cudaSuccess);
  unsigned long long threshold = 1 << 20, got = 0;
  cr_assert_eq(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
               cudaSuccess);
  cr_assert_eq(cudaMemPoolGetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &got), cudaSuccess);
  cr_assert_eq(got, threshold);
  cudaStream_t s;
  int* p;
  cr_assert_eq(cudaStreamCreate(&s), cudaSuccess);
  cr_assert_eq(cudaMallocFromPoolAsync((void**)&p, 256, pool, s), cudaSuccess);
  cr_assert_eq(cudaMemsetAsync(p, 0, 256, s), cudaSuccess);
  cr_assert_eq(cudaFreeAsync(p, s), cudaSuccess);
  cr_assert_eq(cudaMemPoolTrimTo(pool, 0), cudaSuccess);
  cr_assert_eq(cudaDeviceSetMemPool(0, pool), cudaSuccess);
  cr_assert_eq(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
  cr_assert_eq(cur, pool);
  cr_assert_eq(cudaMallocAsync_ptsz((void**)&p, 64, NULL), cudaSuccess);
  cr_assert_eq(cudaFreeAsync_ptsz(p, NULL), cudaSuccess);
  struct cudaMemAccessDesc acc = {{cudaMemLocationTypeDevice, 0}, cudaMemAccessFlagsProtReadWrite};
  cr_assert_eq(cudaMemPoolSetAccess(pool, &acc, 1), cudaSuccess);
  acc.location.id = 1;
  cr_assert_eq(cudaMemPoolSetAccess(pool, &acc, 1), cudaErrorInvalidDevice);
  enum cudaMemAccessFlags f = cudaMemAccessFlagsProtNone;
  struct cudaMemLocation loc = {cudaMemLocationTypeDevice, 0};
  cr_assert_eq(cudaMemPoolGetAccess(&f, pool, &loc), cudaSuccess);
  cr_assert_eq(f, cudaMemAccessFlagsProtReadWrite);
  cr_assert_eq(cudaStreamSynchronize(s), cudaSuccess);
  /* Destroying the current pool leaves the default one current. */
  cr_assert_eq(cudaMemPoolDestroy(pool), cudaSuccess);
  cr_assert_eq(cudaDeviceGetMemPool(&cur, 0), cudaSuccess);
  cr_assert_eq(cur, def);
  cr_assert_eq(cudaMemPoolDestroy(def), cudaErrorInvalidValue);
  cr_assert_eq(cudaMallocFromPoolAsync((void**)&p, 64, pool, s), cudaErrorInvalidValue);
}

/* ---- Getters, setters and what is not simulated ---- */

Test(rt_api, simple_getters_and_setters) {
  char bus[32];
  int dev = -1;
  cr_assert_eq(cudaDeviceGetPCIBusId(bus, sizeof(bus), 0), cudaSuccess);
  cr_assert_eq(cudaDeviceGetByPCIBusId(&dev, bus), cudaSuccess);
  cr_assert_eq(dev, 0);
  cr_assert_eq(cudaDeviceGetByPCIBusId(&dev, "0000:42:00.0"), cudaErrorInvalidDevice);
  enum cudaFuncCache c;
  cr_assert_eq(cudaDeviceSetCacheConfig(cudaFuncCachePreferShared), cudaSuccess);
  cr_assert_eq(cudaDeviceGetCacheConfig(&c), cudaSuccess);
  cr_assert_eq(c, cudaFuncCachePreferShared);
  cr_assert_eq(cudaFuncSetCacheConfig(&k_add_stub, cudaFuncCachePreferL1), cudaSuccess);
  struct cudaDeviceProp prop;
  memset(&prop, 0, sizeof(prop));
  cr_assert_eq(cudaChooseDevice(&dev, &prop), cudaSuccess);
  cr_assert_eq(dev, 0);
  cr_assert_eq(cudaInitDevice(0, 0, 0), cudaSuccess);
  cr_assert_eq(cudaInitDevice(1, 0, 0), cudaErrorInvalidDevice);
  struct cudaChannelFormatDesc cd = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindFloat);
  cr_assert_eq(cd.x, 32);
  cr_assert_eq(cd.f, cudaChannelFormatKindFloat);
  void* p = NULL;
  enum cudaDriverEntryPointQueryResult st;
  cr_assert_eq(cudaGetDriverEntryPoint_ptsz("cuLaunchKernel", &p, cudaEnableDefault, &st),
               cudaSuccess);
  cr_assert_eq(p, dlsym(RTLD_DEFAULT, "cuLaunchKernel_ptsz"),
               "a per-thread build's default is the per-thread variant");
}

Test(rt_api, functions_not_simulated_say_so_once_and_set_the_last_error) {
  cudaGraph_t g, clone;
  cr_assert_eq(cudaGraphCreate(&g, 0), cudaSuccess);
  int cap = errcap_begin();
  cudaError_t a = cudaGraphClone(&clone, g);
  cudaError_t b = cudaGraphClone(&clone, g);
  char* text = errcap_end(cap);
  cr_assert_eq(a, cudaErrorNotSupported);
  cr_assert_eq(b, cudaErrorNotSupported);
  cr_assert_eq(cudaGetLastError(), cudaErrorNotSupported);
  cr_assert_eq(errcap_count(text, "simcu: cudaGraphClone is not simulated"), 1, "%s", text);
  cr_assert_eq(errcap_count(text, "\n"), 1, "one line: %s", text);
  free(text);
}

/* cuda_profiler_api.h and cudaProfiler.h, which NVIDIA's libraries export and
 * PyTorch imports: no profiling tool attaches to the sim, so the calls succeed
 * silently and a second start or stop has no effect; the driver's need a
 * current context; cuProfilerInitialize is NOT_SUPPORTED, as CUDA 12+ documents. */
static void* profiler_start_without_context(void* fn) {
  return (void*)(intptr_t)((CUresult (*)(void))fn)();
}

Test(rt_api, profiler_control_succeeds_silently_and_the_driver_needs_a_context) {
  int cap = errcap_begin();
  cudaError_t e[4] = {cudaProfilerStart(), cudaProfilerStart(), cudaProfilerStop(),
                      cudaProfilerStop()};
  char* text = errcap_end(cap);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(e[i], cudaSuccess, "call %d: %d", i, e[i]);
  cr_assert_eq(text[0], '\0', "not a stub: nothing said: %s", text);
  free(text);
  cr_assert_eq(cudaGetLastError(), cudaSuccess);

  void* drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  cr_assert_not_null(drv);
  CUresult (*start)(void) = (CUresult (*)(void))dlsym(drv, "cuProfilerStart");
  CUresult (*init)(const char*, const char*, CUoutput_mode) =
      (CUresult (*)(const char*, const char*, CUoutput_mode))dlsym(drv, "cuProfilerInitialize");
  CUresult (*gpa)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*) =
      (CUresult (*)(const char*, void**, int, cuuint64_t, CUdriverProcAddressQueryResult*))dlsym(
          drv, "cuGetProcAddress_v2");
  cr_assert(start != NULL && init != NULL && gpa != NULL);
  void* p = NULL;
  CUdriverProcAddressQueryResult st;
  cr_assert_eq(gpa("cuProfilerStart", &p, 4000, 0, &st), CUDA_SUCCESS);
  cr_assert_eq(p, (void*)start, "cuGetProcAddress resolves the profiler's names");
  cr_assert_eq(start(), CUDA_SUCCESS, "the runtime made the primary context current here");
  cr_assert_eq(init("cfg", "out", CU_OUT_CSV), CUDA_ERROR_NOT_SUPPORTED);
  pthread_t t;
  void* r;
  cr_assert_eq(pthread_create(&t, NULL, profiler_start_without_context, (void*)start), 0);
  cr_assert_eq(pthread_join(t, &r), 0);
  cr_assert_eq((CUresult)(intptr_t)r, CUDA_ERROR_INVALID_CONTEXT);
  dlclose(drv);
}

/* The interop headers' functions exist (NVIDIA's runtime exports them) and
 * answer like every function the sim does not simulate. */
cudaError_t cudaGLSetGLDevice(int device);   /* cuda_gl_interop.h needs GL's headers */

Test(rt_api, graphics_interop_is_exported_and_not_supported) {
  int cap = errcap_begin();
  cudaError_t a = cudaGLSetGLDevice(0);
  char* text = errcap_end(cap);
  cr_assert_eq(a, cudaErrorNotSupported);
  cr_assert_eq(cudaGetLastError(), cudaErrorNotSupported);
  cr_assert_eq(errcap_count(text, "simcu: cudaGLSetGLDevice is not simulated"), 1, "%s", text);
  free(text);
}

/* Kernels compiled for GPUs alone (PyTorch's, a vendor library's) have no CPU
 * body: each launch fails with cudaErrorInvalidDeviceFunction, the first such
 * kernel is named with what it means, once, and each later one once. */
static const char ptx_gpu_only[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry gpu_only_a(.param .u32 n)\n{\n ret;\n}\n"
    ".visible .entry gpu_only_b(.param .u32 n)\n{\n ret;\n}\n";
static char gpu_only_a_stub, gpu_only_b_stub;

Test(rt_api, kernels_without_cpu_bodies_are_explained_once) {
  const char* names[] = {"gpu_only_a", "gpu_only_b"};
  const void* stubs[] = {&gpu_only_a_stub, &gpu_only_b_stub};
  cr_assert_not_null(rt_register_ptx(ptx_gpu_only, names, stubs, 2));
  unsigned n = 1;
  void* args[] = {&n};
  int cap = errcap_begin();
  cudaError_t e[4];
  for (int i = 0; i < 4; i++)
    e[i] = cudaLaunchKernel(i % 2 ? (const void*)&gpu_only_b_stub : (const void*)&gpu_only_a_stub,
                            (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, NULL);
  char* text = errcap_end(cap);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(e[i], cudaErrorInvalidDeviceFunction, "launch %d: %d", i, e[i]);
  cr_assert_eq(errcap_count(text, "simcu: no CPU body for kernel gpu_only_a: the simulated device "
                                  "runs only programs built against it"), 1, "%s", text);
  cr_assert_eq(errcap_count(text, "such as PyTorch's"), 1, "%s", text);
  cr_assert_eq(errcap_count(text, "simcu: no CPU body for kernel gpu_only_b either"), 1, "%s", text);
  cr_assert_eq(errcap_count(text, "\n"), 2, "one line per kernel: %s", text);
  free(text);
  cudaGetLastError();
}

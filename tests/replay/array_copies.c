/* A program for the timeline's tests of copies with CUDA arrays and device
 * variables, and of the runtime's forms (test_array_timeline.py): kernels
 * with CPU bodies on the simulated device (no nvcc needed) on one stream,
 * with such copies between them, the same round over and over so that graph
 * mode holds the kernels and replays them.
 *
 *   array_copies driver N    each round, on the stream: five regions of
 *       kernels (mirror() says what each computes), each ended by a copy
 *       or a sync: x into a 1-D array (cuMemcpyDtoA, synchronous), the
 *       array into y (cuMemcpyAtoD), x into a 2-D array's second row
 *       (cuMemcpy2DAsync) and that row into z (CUDA 12.8's cuMemcpy3DBatchAsync,
 *       with its failing index, through cuGetProcAddress at version 12080,
 *       as a 12.8 runtime reaches it: a batch of one op); each
 *       region's kernels write what the copy after them reads or read what
 *       it overwrites, and two kernels follow every copy in the region it
 *       would fall in were it not ending one; then a sixth: z, once the
 *       fifth region's kernels wrote it, into t in two halves (CUDA
 *       12.8's cuMemcpyBatchAsync, reached the same way), and two kernels
 *       on t (doubled, plus v). At the end cuMemcpyHtoA,
 *       cuMemcpyAtoH, cuMemcpyAtoHAsync on the stream, a 3-D copy out of
 *       the 2-D array (cuMemcpy3D) and a 3-D batch of an array-to-pointer
 *       and a pointer-to-pointer op (cuMemcpy3DBatchAsync).
 *   array_copies runtime N   the same rounds through the runtime, with
 *       cudaMemcpyToSymbol, cudaMemcpyFromSymbol, cudaMemcpy2DToArrayAsync
 *       and cudaMemcpy2DFromArrayAsync; at the end cudaMemcpy2DFromArray,
 *       the runtime's memsets (cudaMemset, cudaMemset2D, cudaMemset2DAsync,
 *       cudaMemset3D, cudaMemset3DAsync), a batch of copies
 *       (cudaMemcpyBatchAsync), a graph captured from two kernel launches
 *       (cudaGraphLaunch) and a 3-D batch from the host into the 2-D array
 *       and z (cudaMemcpy3DBatchAsync).
 *
 * Prints the checksum of every round's values and "ok" when each is right. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fatbin.h"
#include "simcu.h"

void __cudaRegisterVar(void** handle, char* hostVar, char* deviceAddress, const char* deviceName,
                       int ext, size_t size, int constant, int global);

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .b8 ac_var[16];\n"
    ".visible .entry ac_add(.param .u64 a, .param .u32 v)\n{\n ret;\n}\n"
    ".visible .entry ac_twice(.param .u64 a)\n{\n ret;\n}\n"
    ".visible .entry ac_acc(.param .u64 a, .param .u64 b)\n{\n ret;\n}\n";

/* Four ints each. */
SIMCU_PARAMS(ac_add, 8, 4);
SIMCU_KERNEL(ac_add) {
  int* a = SIMCU_ARG(0, int*);
  if (simcu_blk->idx.x == 0)
    for (int i = 0; i < 4; i++)
      a[i] += SIMCU_ARG(1, int) + i;
}
SIMCU_PARAMS(ac_twice, 8);
SIMCU_KERNEL(ac_twice) {
  int* a = SIMCU_ARG(0, int*);
  if (simcu_blk->idx.x == 0)
    for (int i = 0; i < 4; i++)
      a[i] *= 2;
}

SIMCU_PARAMS(ac_acc, 8, 8);
SIMCU_KERNEL(ac_acc) {
  int* a = SIMCU_ARG(0, int*);
  const int* b = SIMCU_ARG(1, const int*);
  if (simcu_blk->idx.x == 0)
    for (int i = 0; i < 4; i++)
      a[i] += b[i];
}

static char add_stub, twice_stub, acc_stub;   /* the host stubs nvcc would generate */
static int ac_var_shadow[4];        /* the host shadow of ac_var */

#define CK(c)                                                        \
  do {                                                               \
    int r_ = (int)(c);                                               \
    if (r_ != 0) {                                                   \
      fprintf(stderr, "array_copies: %s failed: %d\n", #c, r_);      \
      return 2;                                                      \
    }                                                                \
  } while (0)

/* A round on the host: x, y and z hold the last round's values (zero before
 * the first) and get this one's. Each copy between two held regions moves
 * what the region before it wrote, or overwrites what that region read, so
 * a copy run before that region's kernels changes the result. */
static void mirror(int v, int* x, int* y, int* z) {
  for (int i = 0; i < 4; i++) {
    int a = (v + i) * 2;                   /* memset, add v, twice; into a1 (the variable) */
    x[i] = a + 100 + i + y[i] + 2 * a;     /* add 100, acc y; y = a1, twice; acc y; into a2 */
    y[i] = 2 * a + z[i] + v + i;           /* acc z, add v */
    z[i] = x[i] * 2 + v + i;               /* z = a2; twice, add v */
  }
}

/* Checks a round's values against the mirror's (w: the last round's, then
 * this one's) and adds them to the checksum. */
static int check(int round, const int* x, const int* y, const int* z, int w[3][4], long* sum) {
  mirror(round + 1, w[0], w[1], w[2]);
  for (int i = 0; i < 4; i++) {
    if (x[i] != w[0][i] || y[i] != w[1][i] || z[i] != w[2][i]) {
      fprintf(stderr, "array_copies: round %d element %d: x %d y %d z %d, want %d %d %d\n",
              round, i, x[i], y[i], z[i], w[0][i], w[1][i], w[2][i]);
      return 1;
    }
    *sum += x[i] * 7 + y[i] * 3 + z[i];
  }
  return 0;
}

static int driver(int rounds) {
  CUcontext ctx;
  CUmodule m;
  CUfunction add, twice, acc;
  CUstream s;
  CUdeviceptr x, y, z, t;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&add, m, "ac_add"));
  CK(cuModuleGetFunction(&twice, m, "ac_twice"));
  CK(cuModuleGetFunction(&acc, m, "ac_acc"));
  CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));   /* blocking: synchronous copies wait for it */
  CK(cuMemAlloc(&x, 16));
  CK(cuMemAlloc(&y, 16));
  CK(cuMemAlloc(&z, 16));
  CK(cuMemAlloc(&t, 16));
  CUarray a1, a2;
  CUDA_ARRAY_DESCRIPTOR d1 = {4, 0, CU_AD_FORMAT_SIGNED_INT32, 1};
  CUDA_ARRAY_DESCRIPTOR d2 = {4, 2, CU_AD_FORMAT_SIGNED_INT32, 1};
  CK(cuArrayCreate(&a1, &d1));
  CK(cuArrayCreate(&a2, &d2));
  /* x into the 2-D array's second row, and that row into z (12.8's batch). */
  CUDA_MEMCPY2D to2d;
  memset(&to2d, 0, sizeof(to2d));
  to2d.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  to2d.srcDevice = x;
  to2d.srcPitch = 16;
  to2d.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  to2d.dstArray = a2;
  to2d.dstY = 1;
  to2d.WidthInBytes = 16;
  to2d.Height = 1;
  PFN_cuMemcpy3DBatchAsync_v12080 batch128;
  CK(cuGetProcAddress("cuMemcpy3DBatchAsync", (void**)&batch128, 12080, 0, NULL));
  CUDA_MEMCPY3D_BATCH_OP from2d;
  memset(&from2d, 0, sizeof(from2d));
  from2d.src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
  from2d.src.op.array.array = a2;
  from2d.src.op.array.offset = (CUoffset3D){0, 1, 0};
  from2d.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  from2d.dst.op.ptr.ptr = z;
  from2d.extent = (CUextent3D){4, 1, 1};
  from2d.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  size_t fail_idx;
  /* z into t, in halves (12.8's 1-D batch). */
  PFN_cuMemcpyBatchAsync_v12080 batch1d128;
  CK(cuGetProcAddress("cuMemcpyBatchAsync", (void**)&batch1d128, 12080, 0, NULL));
  CUdeviceptr tdsts[2] = {t, t + 8}, tsrcs[2] = {z, z + 8};
  size_t tsizes[2] = {8, 8}, tattr_at = 0;
  CUmemcpyAttributes tattr;
  memset(&tattr, 0, sizeof(tattr));
  tattr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  CK(cuMemsetD32Async(y, 0, 4, s));
  CK(cuMemsetD32Async(z, 0, 4, s));
  long sum = 0;
  int hx[4], hy[4], hz[4], ht[4], w[3][4] = {{0}};
  for (int r = 0; r < rounds; r++) {
    int v = r + 1, hundred = 100;
    void* a_twice_t[] = {&t};
    void* a_add_t[] = {&t, &v};
    void* a_add[] = {&x, &v};
    void* a_hundred[] = {&x, &hundred};
    void* a_twice[] = {&x};
    void* a_twice_y[] = {&y};
    void* a_twice_z[] = {&z};
    void* a_add_y[] = {&y, &v};
    void* a_add_z[] = {&z, &v};
    void* a_acc_xy[] = {&x, &y};
    void* a_acc_yz[] = {&y, &z};
    CK(cuMemsetD32Async(x, 0, 4, s));
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_add, NULL));
    CK(cuLaunchKernel(twice, 1, 1, 1, 32, 1, 1, 0, s, a_twice, NULL));
    CK(cuMemcpyDtoA(a1, 0, x, 16));
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_hundred, NULL));
    CK(cuLaunchKernel(acc, 1, 1, 1, 32, 1, 1, 0, s, a_acc_xy, NULL));   /* the last y */
    CK(cuMemcpyAtoD(y, a1, 0, 16));
    CK(cuLaunchKernel(twice, 1, 1, 1, 32, 1, 1, 0, s, a_twice_y, NULL));
    CK(cuLaunchKernel(acc, 1, 1, 1, 32, 1, 1, 0, s, a_acc_xy, NULL));
    CK(cuMemcpy2DAsync(&to2d, s));
    CK(cuLaunchKernel(acc, 1, 1, 1, 32, 1, 1, 0, s, a_acc_yz, NULL));   /* the last z */
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_add_y, NULL));
    CK(batch128(1, &from2d, &fail_idx, 0, s));
    CK(cuLaunchKernel(twice, 1, 1, 1, 32, 1, 1, 0, s, a_twice_z, NULL));
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_add_z, NULL));
    CK(batch1d128(tdsts, tsrcs, tsizes, 2, &tattr, &tattr_at, 1, &fail_idx, s));
    CK(cuLaunchKernel(twice, 1, 1, 1, 32, 1, 1, 0, s, a_twice_t, NULL));
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_add_t, NULL));
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH(hx, x, 16));
    CK(cuMemcpyDtoH(hy, y, 16));
    CK(cuMemcpyDtoH(hz, z, 16));
    CK(cuMemcpyDtoH(ht, t, 16));
    if (check(r, hx, hy, hz, w, &sum))
      return 1;
    for (int i = 0; i < 4; i++)
      if (ht[i] != 2 * hz[i] + v + i) {
        fprintf(stderr, "array_copies: round %d element %d: t %d, want %d\n", r, i, ht[i],
                2 * hz[i] + v + i);
        return 1;
      }
  }
  int in[4] = {9, 8, 7, 6}, out[4], out3[2][4];
  CK(cuMemcpyHtoA(a1, 0, in, 16));
  CK(cuMemcpyAtoH(out, a1, 0, 16));
  int* pinned;
  CK(cuMemAllocHost((void**)&pinned, 16));
  CK(cuMemcpyAtoHAsync(pinned, a1, 0, 16, s));
  CK(cuStreamSynchronize(s));
  CUDA_MEMCPY3D c3;
  memset(&c3, 0, sizeof(c3));
  c3.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c3.srcArray = a2;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  c3.dstHost = out3;
  c3.dstPitch = 16;
  c3.WidthInBytes = 16;
  c3.Height = 2;
  c3.Depth = 1;
  CK(cuMemcpy3D(&c3));
  if (memcmp(in, out, 16) != 0 || memcmp(in, pinned, 16) != 0 || out3[1][0] != hx[0]) {
    fprintf(stderr, "array_copies: the arrays hold %d %d %d\n", out[0], pinned[0], out3[1][0]);
    return 1;
  }
  /* A 3-D batch of two copies on the stream: the 2-D array's second row (4
   * elements of 4 bytes) into y, and x into z (16 elements of a byte). */
  CUDA_MEMCPY3D_BATCH_OP ops[2];
  memset(ops, 0, sizeof(ops));
  ops[0].src.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
  ops[0].src.op.array.array = a2;
  ops[0].src.op.array.offset = (CUoffset3D){0, 1, 0};
  ops[0].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[0].dst.op.ptr.ptr = y;
  ops[0].extent = (CUextent3D){4, 1, 1};
  ops[1].src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[1].src.op.ptr.ptr = x;
  ops[1].dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  ops[1].dst.op.ptr.ptr = z;
  ops[1].extent = (CUextent3D){16, 1, 1};
  ops[0].srcAccessOrder = ops[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  CK(cuMemcpy3DBatchAsync(2, ops, 0, s));
  CK(cuStreamSynchronize(s));
  CK(cuMemcpyDtoH(hy, y, 16));
  CK(cuMemcpyDtoH(out, z, 16));
  if (hy[3] != hx[3] || memcmp(out, hx, 16) != 0) {
    fprintf(stderr, "array_copies: the 3-D batch left y %d, z %d\n", hy[3], out[0]);
    return 1;
  }
  CK(cuMemFreeHost(pinned));
  CK(cuArrayDestroy(a1));
  CK(cuArrayDestroy(a2));
  printf("checksum %ld\nok\n", sum);
  return 0;
}

static cudaError_t launch(const void* stub, void* arg0, int v, cudaStream_t s) {
  void* args[] = {arg0, &v};
  return cudaLaunchKernel(stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s);
}

/* *a += *b */
static cudaError_t launch_acc(int** a, int** b, cudaStream_t s) {
  void* args[] = {a, b};
  return cudaLaunchKernel(&acc_stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s);
}

static int runtime(int rounds) {
  const char* names[] = {"ac_add", "ac_twice", "ac_acc"};
  const void* stubs[] = {&add_stub, &twice_stub, &acc_stub};
  void** h = rt_register_ptx(ptx, names, stubs, 3);
  if (h == NULL)
    return 2;
  __cudaRegisterVar(h, (char*)ac_var_shadow, "ac_var", "ac_var", 0, sizeof(ac_var_shadow), 0, 0);
  cudaStream_t s;
  int *x, *y, *z;
  CK(cudaStreamCreate(&s));   /* blocking: synchronous copies wait for it */
  CK(cudaMalloc((void**)&x, 16));
  CK(cudaMalloc((void**)&y, 16));
  CK(cudaMalloc((void**)&z, 16));
  struct cudaChannelFormatDesc f = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  cudaArray_t a2;
  CK(cudaMallocArray(&a2, &f, 4, 2, 0));
  CK(cudaMemsetAsync(y, 0, 16, s));
  CK(cudaMemsetAsync(z, 0, 16, s));
  long sum = 0;
  int hx[4], hy[4], hz[4], w[3][4] = {{0}};
  for (int r = 0; r < rounds; r++) {
    CK(cudaMemsetAsync(x, 0, 16, s));
    CK(launch(&add_stub, &x, r + 1, s));
    CK(launch(&twice_stub, &x, 0, s));
    CK(cudaMemcpyToSymbol(ac_var_shadow, x, 16, 0, cudaMemcpyDeviceToDevice));
    CK(launch(&add_stub, &x, 100, s));
    CK(launch_acc(&x, &y, s));   /* the last y */
    CK(cudaMemcpyFromSymbol(y, ac_var_shadow, 16, 0, cudaMemcpyDeviceToDevice));
    CK(launch(&twice_stub, &y, 0, s));
    CK(launch_acc(&x, &y, s));
    CK(cudaMemcpy2DToArrayAsync(a2, 0, 1, x, 16, 16, 1, cudaMemcpyDeviceToDevice, s));
    CK(launch_acc(&y, &z, s));   /* the last z */
    CK(launch(&add_stub, &y, r + 1, s));
    CK(cudaMemcpy2DFromArrayAsync(z, 16, a2, 0, 1, 16, 1, cudaMemcpyDeviceToDevice, s));
    CK(launch(&twice_stub, &z, 0, s));
    CK(launch(&add_stub, &z, r + 1, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hx, x, 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy, y, 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hz, z, 16, cudaMemcpyDeviceToHost));
    if (check(r, hx, hy, hz, w, &sum))
      return 1;
  }
  int out[2][4], back[4];
  CK(cudaMemcpy2DFromArray(out, 16, a2, 0, 0, 16, 2, cudaMemcpyDeviceToHost));
  if (out[1][0] != hx[0]) {   /* the last round's x */
    fprintf(stderr, "array_copies: the array holds %d, want %d\n", out[1][0], hx[0]);
    return 1;
  }
  /* The runtime's memsets: into y 16 bytes of 1, then 2 rows of 4 at a
   * pitch of 8 of 2 (bytes 0-3 and 8-11), then a 3-D box of 4 x 1 x 1 of 3;
   * into z 3 rows of 4 at a pitch of 4 of 5 (bytes 0-11), then on the
   * stream a 3-D box of 4 x 1 x 1 of 6 (bytes 12-15). */
  CK(cudaMemset(y, 1, 16));
  CK(cudaMemset2DAsync(y, 8, 2, 4, 2, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemset3D((struct cudaPitchedPtr){y + 1, 4, 4, 1}, 3, (struct cudaExtent){4, 1, 1}));
  CK(cudaMemset2D(z, 4, 5, 4, 3));
  CK(cudaMemset3DAsync((struct cudaPitchedPtr){z + 3, 4, 4, 1}, 6, (struct cudaExtent){4, 1, 1},
                       s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(back, y, 16, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(hz, z, 16, cudaMemcpyDeviceToHost));
  if (back[0] != 0x02020202 || back[1] != 0x03030303 || back[2] != 0x02020202 ||
      back[3] != 0x01010101 || hz[0] != 0x05050505 || hz[2] != 0x05050505 ||
      hz[3] != 0x06060606) {
    fprintf(stderr, "array_copies: the memsets wrote %#x %#x %#x %#x and %#x %#x %#x\n", back[0],
            back[1], back[2], back[3], hz[0], hz[2], hz[3]);
    return 1;
  }
  /* y back to {1, 2, 3, 4}: two copies of 8 bytes in one batch. */
  int in[4] = {1, 2, 3, 4};
  void* dsts[2] = {y, y + 2};
  const void* srcs[2] = {&in[0], &in[2]};
  size_t sizes[2] = {8, 8}, at = 0;
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof(attr));
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &at, 1, s));
  /* A graph of the program's own: y = (y + 4 + i) * 2, captured. */
  cudaGraph_t g;
  cudaGraphExec_t gx;
  CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  CK(launch(&add_stub, &y, 4, s));
  CK(launch(&twice_stub, &y, 0, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&gx, g, 0));
  CK(cudaGraphLaunch(gx, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(back, y, 16, cudaMemcpyDeviceToHost));
  if (back[0] != (1 + 4) * 2 || back[3] != (4 + 4 + 3) * 2) {
    fprintf(stderr, "array_copies: the program's graph left %d %d\n", back[0], back[3]);
    return 1;
  }
  /* A 3-D batch of two copies from the host on the stream: 2 rows of 4
   * elements into the 2-D array, and 16 bytes into z. */
  int rows[2][4] = {{11, 12, 13, 14}, {15, 16, 17, 18}};
  struct cudaMemcpy3DBatchOp ops[2];
  memset(ops, 0, sizeof(ops));
  ops[0].src.type = cudaMemcpyOperandTypePointer;
  ops[0].src.op.ptr.ptr = rows;
  ops[0].dst.type = cudaMemcpyOperandTypeArray;
  ops[0].dst.op.array.array = a2;
  ops[0].extent = (struct cudaExtent){4, 2, 1};
  ops[1].src.type = cudaMemcpyOperandTypePointer;
  ops[1].src.op.ptr.ptr = rows[1];
  ops[1].dst.type = cudaMemcpyOperandTypePointer;
  ops[1].dst.op.ptr.ptr = z;
  ops[1].extent = (struct cudaExtent){16, 1, 1};
  ops[0].srcAccessOrder = ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  CK(cudaMemcpy3DBatchAsync(2, ops, 0, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy2DFromArray(out, 16, a2, 0, 0, 16, 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(back, z, 16, cudaMemcpyDeviceToHost));
  if (memcmp(out, rows, 32) != 0 || memcmp(back, rows[1], 16) != 0) {
    fprintf(stderr, "array_copies: the 3-D batch left %d %d and %d\n", out[0][0], out[1][3],
            back[0]);
    return 1;
  }
  CK(cudaGraphExecDestroy(gx));
  CK(cudaGraphDestroy(g));
  CK(cudaFreeArray(a2));
  printf("checksum %ld\nok\n", sum);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "driver") != 0 && strcmp(argv[1], "runtime") != 0)) {
    fprintf(stderr, "usage: array_copies driver|runtime ROUNDS\n");
    return 2;
  }
  int rounds = atoi(argv[2]);
  return strcmp(argv[1], "driver") == 0 ? driver(rounds) : runtime(rounds);
}

/* A program for the timeline's tests of copies with CUDA arrays and device
 * variables, and of the runtime's forms (test_array_timeline.py): kernels
 * with CPU bodies on the simulated device (no nvcc needed) on one stream,
 * with such copies between them, the same round over and over so that graph
 * mode holds the kernels and replays them.
 *
 *   array_copies driver N    each round: a memset and two kernels on the
 *       stream, the result into a 1-D array (cuMemcpyDtoA, synchronous) and
 *       a 2-D one (cuMemcpy2DAsync, device to array, on the stream), one more
 *       kernel, the 1-D array back (cuMemcpyAtoD) and a kernel over it; at
 *       the end cuMemcpyHtoA, cuMemcpyAtoH, cuMemcpyAtoHAsync on the stream
 *       and a 3-D copy out of the 2-D array (cuMemcpy3D).
 *   array_copies runtime N   the same through the runtime: cudaMemcpyToSymbol
 *       and cudaMemcpy2DToArrayAsync take the result, cudaMemcpyFromSymbol
 *       brings it back; at the end cudaMemcpy2DFromArray, then the runtime's
 *       memsets (cudaMemset, cudaMemset2DAsync, cudaMemset3D), a batch of
 *       copies (cudaMemcpyBatchAsync) and a graph captured from two kernel
 *       launches (cudaGraphLaunch).
 *
 * Prints the checksum of every round's values and "ok" when each is right. */
#include <cuda.h>
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
    ".visible .entry ac_twice(.param .u64 a)\n{\n ret;\n}\n";

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

static char add_stub, twice_stub;   /* the host stubs nvcc would generate */
static int ac_var_shadow[4];        /* the host shadow of ac_var */

#define CK(c)                                                        \
  do {                                                               \
    int r_ = (int)(c);                                               \
    if (r_ != 0) {                                                   \
      fprintf(stderr, "array_copies: %s failed: %d\n", #c, r_);      \
      return 2;                                                      \
    }                                                                \
  } while (0)

/* What a round leaves: x = (v + i) * 2 + 100 (+ i, which the caller took off),
 * y = (v + i) * 2 * 2. */
static int check(int round, const int* x, const int* y, long* sum) {
  int v = round + 1;
  for (int i = 0; i < 4; i++) {
    int wx = (v + i) * 2 + 100, wy = (v + i) * 4;
    if (x[i] != wx || y[i] != wy) {
      fprintf(stderr, "array_copies: round %d element %d: x %d y %d, want %d %d\n", round, i,
              x[i], y[i], wx, wy);
      return 1;
    }
    *sum += x[i] * 7 + y[i];
  }
  return 0;
}

static int driver(int rounds) {
  CUcontext ctx;
  CUmodule m;
  CUfunction add, twice;
  CUstream s;
  CUdeviceptr x, y;
  CK(cuInit(0));
  CK(cuDevicePrimaryCtxRetain(&ctx, 0));
  CK(cuCtxSetCurrent(ctx));
  CK(cuModuleLoadData(&m, ptx));
  CK(cuModuleGetFunction(&add, m, "ac_add"));
  CK(cuModuleGetFunction(&twice, m, "ac_twice"));
  CK(cuStreamCreate(&s, CU_STREAM_DEFAULT));   /* blocking: synchronous copies wait for it */
  CK(cuMemAlloc(&x, 16));
  CK(cuMemAlloc(&y, 16));
  CUarray a1, a2;
  CUDA_ARRAY_DESCRIPTOR d1 = {4, 0, CU_AD_FORMAT_SIGNED_INT32, 1};
  CUDA_ARRAY_DESCRIPTOR d2 = {4, 2, CU_AD_FORMAT_SIGNED_INT32, 1};
  CK(cuArrayCreate(&a1, &d1));
  CK(cuArrayCreate(&a2, &d2));
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
  long sum = 0;
  int hx[4], hy[4];
  for (int r = 0; r < rounds; r++) {
    int v = r + 1, hundred = 100;
    void* a_add[] = {&x, &v};
    void* a_hundred[] = {&x, &hundred};
    void* a_twice[] = {&x};
    void* a_twice_y[] = {&y};
    CK(cuMemsetD32Async(x, 0, 4, s));
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_add, NULL));
    CK(cuLaunchKernel(twice, 1, 1, 1, 32, 1, 1, 0, s, a_twice, NULL));
    CK(cuMemcpyDtoA(a1, 0, x, 16));
    CK(cuMemcpy2DAsync(&to2d, s));
    CK(cuLaunchKernel(add, 1, 1, 1, 32, 1, 1, 0, s, a_hundred, NULL));
    CK(cuMemcpyAtoD(y, a1, 0, 16));
    CK(cuLaunchKernel(twice, 1, 1, 1, 32, 1, 1, 0, s, a_twice_y, NULL));
    CK(cuStreamSynchronize(s));
    CK(cuMemcpyDtoH(hx, x, 16));
    CK(cuMemcpyDtoH(hy, y, 16));
    /* ac_add adds 100 + i to x; y is twice the array's copy of x. */
    for (int i = 0; i < 4; i++)
      hx[i] -= i;
    if (check(r, hx, hy, &sum))
      return 1;
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
  if (memcmp(in, out, 16) != 0 || memcmp(in, pinned, 16) != 0 || out3[1][0] != hy[0] / 2) {
    fprintf(stderr, "array_copies: the arrays hold %d %d %d\n", out[0], pinned[0], out3[1][0]);
    return 1;
  }
  CK(cuMemFreeHost(pinned));
  CK(cuArrayDestroy(a1));
  CK(cuArrayDestroy(a2));
  printf("checksum %ld\nok\n", sum);
  return 0;
}

static cudaError_t launch(const void* stub, void* arg0, int v, int nargs, cudaStream_t s) {
  void* args[] = {arg0, &v};
  return cudaLaunchKernel(stub, (dim3){1, 1, 1}, (dim3){32, 1, 1}, args, 0, s);
  (void)nargs;
}

static int runtime(int rounds) {
  const char* names[] = {"ac_add", "ac_twice"};
  const void* stubs[] = {&add_stub, &twice_stub};
  void** h = rt_register_ptx(ptx, names, stubs, 2);
  if (h == NULL)
    return 2;
  __cudaRegisterVar(h, (char*)ac_var_shadow, "ac_var", "ac_var", 0, sizeof(ac_var_shadow), 0, 0);
  cudaStream_t s;
  int *x, *y;
  CK(cudaStreamCreate(&s));   /* blocking: synchronous copies wait for it */
  CK(cudaMalloc((void**)&x, 16));
  CK(cudaMalloc((void**)&y, 16));
  struct cudaChannelFormatDesc f = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  cudaArray_t a2;
  CK(cudaMallocArray(&a2, &f, 4, 2, 0));
  long sum = 0;
  int hx[4], hy[4];
  for (int r = 0; r < rounds; r++) {
    CK(cudaMemsetAsync(x, 0, 16, s));
    CK(launch(&add_stub, &x, r + 1, 2, s));
    CK(launch(&twice_stub, &x, 0, 1, s));
    CK(cudaMemcpyToSymbol(ac_var_shadow, x, 16, 0, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy2DToArrayAsync(a2, 0, 1, x, 16, 16, 1, cudaMemcpyDeviceToDevice, s));
    CK(launch(&add_stub, &x, 100, 2, s));
    CK(cudaMemcpyFromSymbol(y, ac_var_shadow, 16, 0, cudaMemcpyDeviceToDevice));
    CK(launch(&twice_stub, &y, 0, 1, s));
    CK(cudaStreamSynchronize(s));
    CK(cudaMemcpy(hx, x, 16, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(hy, y, 16, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 4; i++)
      hx[i] -= i;
    if (check(r, hx, hy, &sum))
      return 1;
  }
  int out[2][4], back[4];
  CK(cudaMemcpy2DFromArray(out, 16, a2, 0, 0, 16, 2, cudaMemcpyDeviceToHost));
  if (out[1][0] != hy[0] / 2) {
    fprintf(stderr, "array_copies: the array holds %d, want %d\n", out[1][0], hy[0] / 2);
    return 1;
  }
  /* The runtime's memsets: 16 bytes of 1, then 2 rows of 4 at a pitch of 8
   * of 2 (bytes 0-3 and 8-11), then a 3-D box of 4 x 1 x 1 of 3. */
  CK(cudaMemset(y, 1, 16));
  CK(cudaMemset2DAsync(y, 8, 2, 4, 2, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemset3D((struct cudaPitchedPtr){y + 1, 4, 4, 1}, 3, (struct cudaExtent){4, 1, 1}));
  CK(cudaMemcpy(back, y, 16, cudaMemcpyDeviceToHost));
  if (back[0] != 0x02020202 || back[1] != 0x03030303 || back[2] != 0x02020202 ||
      back[3] != 0x01010101) {
    fprintf(stderr, "array_copies: the memsets wrote %#x %#x %#x %#x\n", back[0], back[1], back[2],
            back[3]);
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
  CK(launch(&add_stub, &y, 4, 2, s));
  CK(launch(&twice_stub, &y, 0, 1, s));
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&gx, g, 0));
  CK(cudaGraphLaunch(gx, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(back, y, 16, cudaMemcpyDeviceToHost));
  if (back[0] != (1 + 4) * 2 || back[3] != (4 + 4 + 3) * 2) {
    fprintf(stderr, "array_copies: the program's graph left %d %d\n", back[0], back[3]);
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

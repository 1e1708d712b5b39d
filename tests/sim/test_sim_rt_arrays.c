/* Tests of the sim's runtime over CUDA arrays, device variables and batched
 * copies: cudaMallocArray / cudaMalloc3DArray / cudaFreeArray /
 * cudaArrayGetInfo, the copies that name an array (2-D, 3-D, the deprecated
 * linear ones), cudaMemcpyToSymbol / FromSymbol / GetSymbolAddress / Size
 * over variables registered as nvcc's code registers them, and
 * cudaMemcpyBatchAsync and cudaMemcpy3DBatchAsync; each with CUDA's errors
 * for bad arguments. */
#include <criterion/criterion.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

#include "rt_fatbin.h"

/* The deprecated linear array copies are served and tested too. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

/* nvcc's registration of a __device__ variable (crt/host_runtime.h, C++). */
void __cudaRegisterVar(void** handle, char* hostVar, char* deviceAddress, const char* deviceName,
                       int ext, size_t size, int constant, int global);

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .b8 counter[16];\n"
    ".visible .const .align 4 .u32 table[2] = {5, 6};\n"
    ".visible .entry k_none()\n{\n ret;\n}\n";

static char k_none_stub;          /* the host stub nvcc would generate */
static int counter_shadow[4];     /* the host shadows nvcc would generate */
static int table_shadow[2];
static int unregistered;

static void setup(void) {
  const char* names[] = {"k_none"};
  const void* stubs[] = {&k_none_stub};
  void** h = rt_register_ptx(ptx, names, stubs, 1);
  cr_assert_not_null(h);
  __cudaRegisterVar(h, (char*)counter_shadow, "counter", "counter", 0, sizeof(counter_shadow), 0,
                    0);
  __cudaRegisterVar(h, (char*)table_shadow, "table", "table", 0, sizeof(table_shadow), 1, 0);
}

TestSuite(rt_arrays, .init = setup);

#define OK(call) cr_assert_eq((call), cudaSuccess, "%s", #call)

Test(rt_arrays, allocation_and_its_description) {
  struct cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat);
  cudaArray_t a;
  OK(cudaMallocArray(&a, &f4, 16, 8, cudaArraySurfaceLoadStore));
  struct cudaChannelFormatDesc got;
  struct cudaExtent e;
  unsigned flags;
  OK(cudaArrayGetInfo(&got, &e, &flags, a));
  cr_assert(got.x == 32 && got.w == 32 && got.f == cudaChannelFormatKindFloat, "format back");
  cr_assert(e.width == 16 && e.height == 8 && e.depth == 0 && flags == cudaArraySurfaceLoadStore);
  OK(cudaFreeArray(a));
  OK(cudaFreeArray(NULL));   /* "no operation is performed" */
  cr_assert_eq(cudaFreeArray(a), cudaErrorInvalidResourceHandle);
  /* What CUDA refuses: 3 channels, channels of unequal size, 12 bits, a
   * width of 0, no description. */
  struct cudaChannelFormatDesc bad[] = {
      cudaCreateChannelDesc(8, 8, 8, 0, cudaChannelFormatKindUnsigned),
      cudaCreateChannelDesc(8, 16, 0, 0, cudaChannelFormatKindUnsigned),
      cudaCreateChannelDesc(12, 0, 0, 0, cudaChannelFormatKindSigned),
  };
  for (int i = 0; i < 3; i++)
    cr_assert_eq(cudaMallocArray(&a, &bad[i], 4, 4, 0), cudaErrorInvalidChannelDescriptor, "%d", i);
  struct cudaChannelFormatDesc b1 = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
  cr_assert_eq(cudaMallocArray(&a, &b1, 0, 4, 0), cudaErrorInvalidValue);
  cr_assert_eq(cudaMallocArray(&a, NULL, 4, 4, 0), cudaErrorInvalidValue);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
  OK(cudaMalloc3DArray(&a, &b1, (struct cudaExtent){4, 3, 2}, 0));
  OK(cudaArrayGetInfo(NULL, &e, NULL, a));
  cr_assert(e.width == 4 && e.height == 3 && e.depth == 2);
  OK(cudaFreeArray(a));
}

Test(rt_arrays, copies_in_and_out_of_arrays) {
  struct cudaChannelFormatDesc f = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  cudaArray_t a;
  OK(cudaMallocArray(&a, &f, 6, 4, 0));   /* 6 ints x 4 rows */
  int zero[4][6], box[2][3] = {{1, 2, 3}, {4, 5, 6}}, back[4][6];
  memset(zero, 0, sizeof(zero));
  OK(cudaMemcpy2DToArray(a, 0, 0, zero, sizeof(zero[0]), sizeof(zero[0]), 4,
                         cudaMemcpyHostToDevice));
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  OK(cudaMemcpy2DToArrayAsync(a, 2 * sizeof(int), 1, box, sizeof(box[0]), sizeof(box[0]), 2,
                              cudaMemcpyHostToDevice, s));
  OK(cudaStreamSynchronize(s));
  int* d;
  OK(cudaMalloc((void**)&d, sizeof(back)));
  OK(cudaMemcpy2DFromArray(d, sizeof(back[0]), a, 0, 0, sizeof(back[0]), 4,
                           cudaMemcpyDeviceToDevice));
  OK(cudaMemcpy(back, d, sizeof(back), cudaMemcpyDeviceToHost));
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 6; x++) {
      int want = y >= 1 && y < 3 && x >= 2 && x < 5 ? box[y - 1][x - 2] : 0;
      cr_assert_eq(back[y][x], want, "(%d,%d): %d, want %d", y, x, back[y][x], want);
    }
  /* The deprecated linear form: 8 ints from element (4, 1) wrap into row 2. */
  int lin[8];
  OK(cudaMemcpyFromArray(lin, a, 4 * sizeof(int), 1, sizeof(lin), cudaMemcpyDeviceToHost));
  cr_assert(lin[0] == 3 && lin[1] == 0 && lin[2] == 0 && lin[3] == 0 && lin[4] == 4 &&
                lin[5] == 5 && lin[6] == 6 && lin[7] == 0,
            "linear read %d %d %d %d %d %d %d %d", lin[0], lin[1], lin[2], lin[3], lin[4], lin[5],
            lin[6], lin[7]);
  int ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  OK(cudaMemcpyToArrayAsync(a, 0, 2, ones, sizeof(ones), cudaMemcpyHostToDevice, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaMemcpy2DFromArray(back, sizeof(back[0]), a, 0, 0, sizeof(back[0]), 4,
                           cudaMemcpyDeviceToHost));
  cr_assert(back[2][0] == 1 && back[3][5] == 1 && back[1][2] == 1, "rows 2 and 3 are ones");
  /* 3-D copies with an array side: positions and extent in elements. */
  struct cudaMemcpy3DParms p;
  memset(&p, 0, sizeof(p));
  int two[2];
  p.srcArray = a;
  p.srcPos = (struct cudaPos){2, 1, 0};
  p.dstPtr = (struct cudaPitchedPtr){two, sizeof(two), 2, 1};
  p.extent = (struct cudaExtent){2, 1, 1};
  p.kind = cudaMemcpyDeviceToHost;
  OK(cudaMemcpy3D(&p));
  cr_assert(two[0] == 1 && two[1] == 2, "3-D copy read %d %d", two[0], two[1]);
  /* Array to array. */
  cudaArray_t b;
  OK(cudaMallocArray(&b, &f, 6, 4, 0));
  OK(cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, 6 * sizeof(int), 4, cudaMemcpyDeviceToDevice));
  OK(cudaMemcpy2DFromArray(back, sizeof(back[0]), b, 0, 0, sizeof(back[0]), 4, cudaMemcpyDefault));
  cr_assert(back[1][2] == 1 && back[1][4] == 3 && back[0][0] == 0);
  /* What CUDA refuses: a kind whose pointer side is not the pointer's, a
   * width wider than the pitch, a box past the array, part of an element. */
  cr_assert_eq(cudaMemcpy2DToArray(a, 0, 0, zero, sizeof(zero[0]), sizeof(zero[0]), 1,
                                   cudaMemcpyDeviceToHost), cudaErrorInvalidMemcpyDirection);
  cr_assert_eq(cudaMemcpy2DToArray(a, 0, 0, zero, 4, 8, 1, cudaMemcpyHostToDevice),
               cudaErrorInvalidPitchValue);
  cr_assert_eq(cudaMemcpy2DToArray(a, 0, 3, zero, sizeof(zero[0]), sizeof(zero[0]), 2,
                                   cudaMemcpyHostToDevice), cudaErrorInvalidValue);
  cr_assert_eq(cudaMemcpy2DToArray(a, 2, 0, zero, sizeof(zero[0]), 4, 1, cudaMemcpyHostToDevice),
               cudaErrorInvalidValue);
  cr_assert_eq(cudaMemcpy2DArrayToArray(b, 0, 0, a, 0, 0, 4, 1, cudaMemcpyHostToDevice),
               cudaErrorInvalidMemcpyDirection);
  OK(cudaFreeArray(a));
  OK(cudaFreeArray(b));
  cr_assert_eq(cudaMemcpyToArray(a, 0, 0, ones, 4, cudaMemcpyHostToDevice),
               cudaErrorInvalidResourceHandle);
}

Test(rt_arrays, device_variables_by_their_host_shadow) {
  int in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  size_t n = 0;
  OK(cudaGetSymbolSize(&n, counter_shadow));
  cr_assert_eq(n, sizeof(counter_shadow));
  OK(cudaMemcpyFromSymbol(out, counter_shadow, sizeof(out), 0, cudaMemcpyDeviceToHost));
  cr_assert(out[0] == 0 && out[3] == 0, "a zeroed variable reads %d %d", out[0], out[3]);
  OK(cudaMemcpyToSymbol(counter_shadow, in, 8, 8, cudaMemcpyHostToDevice));
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  OK(cudaMemcpyFromSymbolAsync(out, counter_shadow, sizeof(out), 0, cudaMemcpyDeviceToHost, s));
  OK(cudaStreamSynchronize(s));
  cr_assert(out[0] == 0 && out[1] == 0 && out[2] == 1 && out[3] == 2, "counter = %d %d %d %d",
            out[0], out[1], out[2], out[3]);
  /* Its address is device memory that copies reach like any other. */
  int* p = NULL;
  OK(cudaGetSymbolAddress((void**)&p, counter_shadow));
  OK(cudaMemcpy(out, p + 2, 4, cudaMemcpyDeviceToHost));
  cr_assert_eq(out[0], 1);
  OK(cudaMemcpyToSymbolAsync(counter_shadow, p + 2, 4, 0, cudaMemcpyDeviceToDevice, s));
  OK(cudaMemcpyFromSymbol(out, table_shadow, 8, 0, cudaMemcpyDefault));
  cr_assert(out[0] == 5 && out[1] == 6, "a __constant__ variable keeps its initialiser");
  /* What CUDA refuses: an address nvcc did not register, a range past the
   * variable, a kind whose device side is not the variable's. */
  cr_assert_eq(cudaMemcpyToSymbol(&unregistered, in, 4, 0, cudaMemcpyHostToDevice),
               cudaErrorInvalidSymbol);
  cr_assert_eq(cudaGetSymbolAddress((void**)&p, &unregistered), cudaErrorInvalidSymbol);
  cr_assert_eq(cudaGetSymbolSize(&n, NULL), cudaErrorInvalidSymbol);
  cr_assert_eq(cudaMemcpyToSymbol(counter_shadow, in, 12, 8, cudaMemcpyHostToDevice),
               cudaErrorInvalidValue);
  cr_assert_eq(cudaMemcpyToSymbol(counter_shadow, in, 4, 0, cudaMemcpyDeviceToHost),
               cudaErrorInvalidMemcpyDirection);
  cr_assert_eq(cudaMemcpyFromSymbol(out, counter_shadow, 4, 0, cudaMemcpyHostToDevice),
               cudaErrorInvalidMemcpyDirection);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidMemcpyDirection);
}

Test(rt_arrays, batched_copies) {
  int in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  int* d;
  OK(cudaMalloc((void**)&d, sizeof(in)));
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  void* dsts[2] = {d, d + 2};
  const void* srcs[2] = {&in[2], &in[0]};
  size_t sizes[2] = {8, 8}, at = 0;
  struct cudaMemcpyAttributes attr;
  memset(&attr, 0, sizeof(attr));
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  OK(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &at, 1, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost));
  cr_assert(out[0] == 3 && out[1] == 4 && out[2] == 1 && out[3] == 2, "batch left %d %d %d %d",
            out[0], out[1], out[2], out[3]);
  /* What CUDA refuses: the legacy stream, no attribute, an invalid order. */
  cr_assert_eq(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &at, 1, cudaStreamLegacy),
               cudaErrorInvalidValue);
  cr_assert_eq(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &at, 0, s), cudaErrorInvalidValue);
  attr.srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
  cr_assert_eq(cudaMemcpyBatchAsync(dsts, srcs, sizes, 2, &attr, &at, 1, s), cudaErrorInvalidValue);
}

Test(rt_arrays, batched_3d_copies) {
  struct cudaChannelFormatDesc f = cudaCreateChannelDesc(32, 0, 0, 0, cudaChannelFormatKindSigned);
  cudaArray_t a;
  OK(cudaMallocArray(&a, &f, 4, 2, 0));
  int* d;
  OK(cudaMalloc((void**)&d, 16));
  cudaStream_t s;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  /* Two rows of 4 elements (of 4 bytes) from rows of 5 on the host into
   * the array, and 8 bytes into d; then the array's second row back. */
  int rows[2][5] = {{1, 2, 3, 4, 0}, {5, 6, 7, 8, 0}}, out[4] = {0, 0, 0, 0}, back[2] = {0, 0};
  struct cudaMemcpy3DBatchOp ops[2];
  memset(ops, 0, sizeof(ops));
  ops[0].src.type = cudaMemcpyOperandTypePointer;
  ops[0].src.op.ptr.ptr = rows;
  ops[0].src.op.ptr.rowLength = 5;
  ops[0].dst.type = cudaMemcpyOperandTypeArray;
  ops[0].dst.op.array.array = a;
  ops[0].extent = (struct cudaExtent){4, 2, 1};
  ops[1].src.type = cudaMemcpyOperandTypePointer;
  ops[1].src.op.ptr.ptr = &rows[1][2];
  ops[1].dst.type = cudaMemcpyOperandTypePointer;
  ops[1].dst.op.ptr.ptr = d;
  ops[1].extent = (struct cudaExtent){8, 1, 1};
  ops[0].srcAccessOrder = ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  OK(cudaMemcpy3DBatchAsync(2, ops, 0, s));
  OK(cudaStreamSynchronize(s));
  OK(cudaMemcpy2DFromArray(out, 16, a, 0, 1, 16, 1, cudaMemcpyDeviceToHost));
  OK(cudaMemcpy(back, d, 8, cudaMemcpyDeviceToHost));
  cr_assert(out[0] == 5 && out[3] == 8 && back[0] == 7 && back[1] == 8,
            "the batch left %d %d and %d %d", out[0], out[3], back[0], back[1]);
  /* What CUDA refuses: the legacy stream, flags, an invalid order, a row
   * length below the width. */
  cr_assert_eq(cudaMemcpy3DBatchAsync(2, ops, 0, cudaStreamLegacy), cudaErrorInvalidValue);
  cr_assert_eq(cudaMemcpy3DBatchAsync(2, ops, 1, s), cudaErrorInvalidValue);
  ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderInvalid;
  cr_assert_eq(cudaMemcpy3DBatchAsync(2, ops, 0, s), cudaErrorInvalidValue);
  ops[1].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
  ops[0].src.op.ptr.rowLength = 3;
  cr_assert_eq(cudaMemcpy3DBatchAsync(2, ops, 0, s), cudaErrorInvalidValue);
  cr_assert_eq(cudaGetLastError(), cudaErrorInvalidValue);
}

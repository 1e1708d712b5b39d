/* Tests of the sim's 2-D, 3-D and peer copies through the driver API
 * (cuMemcpy2D/3D[Async], cuMemcpyPeer, cuMemcpy3DPeer) and its 2-D memsets:
 * strided boxes with offsets on both sides, memory types, range and pitch
 * checks, pageable snapshots, capture; and CUDA 12.8's form of the batch of
 * 1-D copies (cuMemcpyBatchAsync with its failing index). */
#include <cuda.h>
#include <criterion/criterion.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "drv_setup.h"

TestSuite(copies, .init = drv_setup);

Test(copies, a_2d_box_with_offsets_on_both_sides) {
  unsigned char src[6][10], dst[6][10];
  for (int y = 0; y < 6; y++)
    for (int x = 0; x < 10; x++)
      src[y][x] = (unsigned char)(y * 16 + x);
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 64 * 6));
  OK(cuMemsetD8(d, 0xAA, 64 * 6));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = 10;
  c.srcXInBytes = 2;
  c.srcY = 1;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = 64;
  c.dstXInBytes = 5;
  c.dstY = 2;
  c.WidthInBytes = 4;
  c.Height = 3;
  OK(cuMemcpy2D(&c));
  /* Back as a whole, through unified memory types. */
  memset(&c, 0, sizeof(c));
  memset(dst, 0, sizeof(dst));
  c.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.srcDevice = d;
  c.srcPitch = 64;
  c.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
  c.dstDevice = (CUdeviceptr)(uintptr_t)dst;
  c.dstPitch = 10;
  c.WidthInBytes = 10;
  c.Height = 6;
  OK(cuMemcpy2DAsync(&c, NULL));
  OK(cuCtxSynchronize());
  for (int y = 0; y < 6; y++)
    for (int x = 0; x < 10; x++) {
      int in = y >= 2 && y < 5 && x >= 5 && x < 9;
      unsigned char want = in ? src[y - 2 + 1][x - 5 + 2] : 0xAA;
      cr_assert_eq(dst[y][x], want, "(%d,%d): %#x, want %#x", y, x, dst[y][x], want);
    }
}

Test(copies, checks_pitch_range_and_memory_type) {
  unsigned char h[256];
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 256));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = h;
  c.srcPitch = 16;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = 16;
  c.WidthInBytes = 16;
  c.Height = 16;
  OK(cuMemcpy2D(&c));
  c.Height = 17;   /* one row past the allocation */
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.Height = 2;
  c.dstXInBytes = 1;   /* the row no longer fits in its pitch */
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.dstXInBytes = 0;
  c.dstDevice = (CUdeviceptr)(uintptr_t)h;   /* host memory named as device memory */
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.dstDevice = d;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;   /* an array side without an array */
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.Height = 0;
  OK(cuMemcpy2D(&c));   /* an empty box copies nothing */
}

Test(copies, a_3d_box_and_a_pageable_snapshot) {
  enum { W = 4, H = 3, D = 2 };
  int src[D][H][W], out[D][H][W];
  for (int i = 0; i < D * H * W; i++)
    (&src[0][0][0])[i] = i;
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 32 * 4 * D));   /* pitch 32 bytes, 4 rows per slice */
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = src;
  c.srcPitch = W * sizeof(int);
  c.srcHeight = H;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = 32;
  c.dstHeight = 4;
  c.WidthInBytes = W * sizeof(int);
  c.Height = H;
  c.Depth = D;
  OK(cuMemcpy3DAsync(&c, s));
  src[1][2][3] = -1;   /* after the call: the copy took the source as it was */
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = d;
  c.srcPitch = 32;
  c.srcHeight = 4;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = out;
  c.dstPitch = W * sizeof(int);
  c.dstHeight = H;
  c.WidthInBytes = W * sizeof(int);
  c.Height = H;
  c.Depth = D;
  OK(cuMemcpy3DAsync(&c, s));   /* into pageable memory: synchronous */
  for (int i = 0; i < D * H * W; i++)
    cr_assert_eq((&out[0][0][0])[i], i);
  c.srcHeight = 2;   /* fewer rows per slice than the box has */
  cr_assert_eq(cuMemcpy3D(&c), CUDA_ERROR_INVALID_VALUE);
}

Test(copies, capture_records_one_node_and_refuses_pageable_memory) {
  CUdeviceptr a, b;
  OK(cuMemAlloc(&a, 1024));
  OK(cuMemAlloc(&b, 1024));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = a;
  c.dstDevice = b;
  c.srcPitch = c.dstPitch = 64;
  c.WidthInBytes = 32;
  c.Height = 16;
  CUgraph g;
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemcpy2DAsync(&c, s));
  OK(cuStreamEndCapture(s, &g));
  size_t n = 0;
  OK(cuGraphGetNodes(g, NULL, &n));
  cr_assert_eq(n, 1);
  char pageable[64];
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = pageable;
  c.srcPitch = 4;
  c.WidthInBytes = 4;
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  cr_assert_eq(cuMemcpy2DAsync(&c, s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  cr_assert_eq(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
}

Test(copies, peer_copies_need_the_primary_context) {
  CUcontext ctx;
  OK(cuCtxGetCurrent(&ctx));
  CUdeviceptr a, b;
  int v = 0x1234, got = 0;
  OK(cuMemAlloc(&a, 4));
  OK(cuMemAlloc(&b, 4));
  OK(cuMemcpyHtoD(a, &v, 4));
  OK(cuMemcpyPeer(b, ctx, a, ctx, 4));
  OK(cuMemcpyDtoH(&got, b, 4));
  cr_assert_eq(got, v);
  cr_assert_eq(cuMemcpyPeerAsync(b, (CUcontext)&v, a, ctx, 4, NULL), CUDA_ERROR_INVALID_CONTEXT);
  CUDA_MEMCPY3D_PEER p;
  memset(&p, 0, sizeof(p));
  p.srcMemoryType = p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  p.srcDevice = b;
  p.dstDevice = a;
  p.srcContext = p.dstContext = ctx;
  p.WidthInBytes = 4;
  p.Height = p.Depth = 1;
  OK(cuMemsetD32(a, 0, 1));
  OK(cuMemcpy3DPeer(&p));
  OK(cuMemcpyDtoH(&got, a, 4));
  cr_assert_eq(got, v);
}

Test(copies, memsets_of_2d_boxes) {
  CUdeviceptr d;
  uint16_t out[4][8];
  OK(cuMemAlloc(&d, sizeof(out)));
  OK(cuMemsetD16(d, 1, 32));
  OK(cuMemsetD2D16(d + 2 * 2, 16, 7, 3, 2));   /* columns 2..4 of rows 0..1 */
  CUstream s;
  OK(cuStreamCreate(&s, 0));
  OK(cuMemsetD2D8Async(d + 3 * 16, 16, 0, 4, 1, s));   /* row 3, bytes 0..3 */
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(out, d, sizeof(out)));
  cr_assert_eq(out[0][1], 1);
  cr_assert_eq(out[0][2], 7);
  cr_assert_eq(out[1][4], 7);
  cr_assert_eq(out[1][5], 1);
  cr_assert_eq(out[2][3], 1);
  cr_assert_eq(out[3][1], 0);
  cr_assert_eq(out[3][2], 1);
}

/* CUDA 12.8's form of the 1-D batch (the unversioned symbols, with a failing
 * index), as a 12.8 program or runtime reaches it: cuGetProcAddress below
 * version 13000 (13's form from 13000), and the exports. */
Test(copies, cuda_12_8_1d_batch_copies_and_names_the_failing_copy) {
  void *pf, *ppt;
  drv_form_12_8("cuMemcpyBatchAsync", &pf, &ppt);
  PFN_cuMemcpyBatchAsync_v12080 f = (PFN_cuMemcpyBatchAsync_v12080)pf;
  PFN_cuMemcpyBatchAsync_v12080_ptsz fpt = (PFN_cuMemcpyBatchAsync_v12080_ptsz)ppt;

  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 16));
  int in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  CUdeviceptr dsts[3] = {d, d + 8, d}, srcs[3] = {(CUdeviceptr)(uintptr_t)&in[2],
                                                  (CUdeviceptr)(uintptr_t)&in[0], 0};
  size_t sizes[3] = {8, 8, 8}, at[2] = {0, 1}, fail = 77;
  CUmemcpyAttributes attr[2];
  memset(attr, 0, sizeof(attr));
  attr[0].srcAccessOrder = attr[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  OK(f(dsts, srcs, sizes, 2, attr, at, 1, &fail, s));
  OK(cuStreamSynchronize(s));
  CUdeviceptr back_dst = (CUdeviceptr)(uintptr_t)out;
  OK(fpt(&back_dst, &d, (size_t[]){16}, 1, attr, at, 1, &fail, s));
  OK(cuStreamSynchronize(s));
  cr_assert(out[0] == 3 && out[1] == 4 && out[2] == 1 && out[3] == 2 && fail == 77,
            "the batch gave %d %d %d %d, failIdx %zu", out[0], out[1], out[2], out[3], fail);

  /* A bad copy (a NULL source, in the middle, then at the end) is named by
   * its index through either variant, and nothing of the batch runs; an
   * error of the whole call (the legacy stream, no copies, an attribute,
   * which describes a run of copies) names none: SIZE_MAX. */
  OK(cuMemsetD8(d, 0, 16));
  srcs[1] = 0;
  cr_assert_eq(f(dsts, srcs, sizes, 3, attr, at, 2, &fail, s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(fail, 1);
  srcs[1] = (CUdeviceptr)(uintptr_t)&in[0];
  fail = 0;
  cr_assert_eq(fpt(dsts, srcs, sizes, 3, attr, at, 2, &fail, s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(fail, 2);
  CUresult r[3];
  r[0] = f(dsts, srcs, sizes, 2, attr, at, 1, &fail, CU_STREAM_LEGACY);
  cr_assert(r[0] == CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX, "legacy: %d, %zu", r[0], fail);
  fail = 0;
  r[1] = f(dsts, srcs, sizes, 0, attr, at, 1, &fail, s);
  cr_assert(r[1] == CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX, "none: %d, %zu", r[1], fail);
  fail = 0;
  attr[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID;
  r[2] = f(dsts, srcs, sizes, 2, attr, at, 2, &fail, s);
  cr_assert(r[2] == CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX, "attr: %d, %zu", r[2], fail);
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(out, d, 16));
  cr_assert(out[0] == 0 && out[2] == 0, "a refused batch ran its copy 0 or 1");
}

/* Each attribute describes the copies from its index to the next one's: a
 * page-locked source read during the call is read at the call, one read in
 * stream order when the stream reaches it. */
Test(copies, a_1d_batch_reads_a_source_at_the_call_where_its_attribute_says_so) {
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  int* src;
  OK(cuMemAllocHost((void**)&src, 16));   /* pinned: otherwise copied at the call anyway */
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 16));
  drv_gate_close(s);
  for (int i = 0; i < 4; i++)
    src[i] = 10 + i;
  CUdeviceptr sp = (CUdeviceptr)(uintptr_t)src;
  CUdeviceptr dsts[3] = {d, d + 4, d + 8}, srcs[3] = {sp, sp + 4, sp + 8};
  size_t sizes[3] = {4, 4, 8}, at[2] = {0, 2};
  CUmemcpyAttributes attr[2];
  memset(attr, 0, sizeof(attr));
  attr[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;   /* copies 0 and 1 */
  attr[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;            /* copy 2 */
  OK(cuMemcpyBatchAsync(dsts, srcs, sizes, 3, attr, at, 2, s));
  for (int i = 0; i < 4; i++)
    src[i] = 20 + i;
  drv_gate_open();
  OK(cuStreamSynchronize(s));
  int out[4];
  OK(cuMemcpyDtoH(out, d, 16));
  cr_assert(out[0] == 10 && out[1] == 11 && out[2] == 22 && out[3] == 23,
            "copied %d %d %d %d", out[0], out[1], out[2], out[3]);
  OK(cuMemFreeHost(src));
}

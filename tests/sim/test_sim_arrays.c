/* Tests of the sim's CUDA arrays and module variables through the driver
 * API: cuArrayCreate / cuArray3DCreate and their descriptors, copies with an
 * ARRAY side (cuMemcpy2D/3D[Async], the 1-D cuMemcpyHtoA / AtoH / DtoA /
 * AtoD / AtoA and their Async forms), captured array copies, and
 * cuModuleGetGlobal / cuLibraryGetGlobal over an image's .global variables,
 * and batches of 3-D copies between arrays and pointers
 * (cuMemcpy3DBatchAsync, CUDA 13's form and 12.8's with its failing
 * index); each with the errors CUDA documents for bad
 * arguments. */
#include <cuda.h>
#include <criterion/criterion.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdint.h>
#include <string.h>

#include "drv_setup.h"

TestSuite(arrays, .init = drv_setup);

static CUarray make2d(size_t w, size_t h, CUarray_format f, unsigned ch) {
  CUDA_ARRAY_DESCRIPTOR d = {w, h, f, ch};
  CUarray a;
  OK(cuArrayCreate(&a, &d));
  return a;
}

Test(arrays, create_checks_the_descriptor_and_destroy_frees) {
  CUDA_ARRAY3D_DESCRIPTOR d;
  CUarray a;
  size_t free0, free1, total;
  OK(cuMemGetInfo(&free0, &total));
  /* 1-D, 2-D, 3-D, layered and cubemap arrays. */
  CUDA_ARRAY3D_DESCRIPTOR ok[] = {
      {64, 0, 0, CU_AD_FORMAT_FLOAT, 1, 0},
      {64, 32, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0},
      {16, 8, 4, CU_AD_FORMAT_HALF, 2, CUDA_ARRAY3D_SURFACE_LDST},
      {16, 0, 3, CU_AD_FORMAT_SIGNED_INT32, 1, CUDA_ARRAY3D_LAYERED},
      {16, 16, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP},
  };
  for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
    OK(cuArray3DCreate(&a, &ok[i]));
    memset(&d, 0xff, sizeof(d));
    OK(cuArray3DGetDescriptor(&d, a));
    cr_assert(memcmp(&d, &ok[i], sizeof(d)) == 0, "descriptor %zu does not come back", i);
    OK(cuArrayDestroy(a));
  }
  /* What CUDA refuses: no width, 3 channels, depth without height, a
   * cubemap that is not square or has 5 faces, past cc 9.0's 3-D limit, an
   * unknown flag. */
  CUDA_ARRAY3D_DESCRIPTOR bad[] = {
      {0, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0},
      {8, 4, 0, CU_AD_FORMAT_FLOAT, 3, 0},
      {8, 0, 4, CU_AD_FORMAT_FLOAT, 1, 0},
      {16, 8, 6, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP},
      {16, 16, 5, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_CUBEMAP},
      {16385, 4, 4, CU_AD_FORMAT_FLOAT, 1, 0},
      {8, 4, 0, CU_AD_FORMAT_FLOAT, 1, 0x80000000u},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
    cr_assert_eq(cuArray3DCreate(&a, &bad[i]), CUDA_ERROR_INVALID_VALUE, "descriptor %zu", i);
  cr_assert_eq(cuArray3DCreate(&a, NULL), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuArray3DCreate(NULL, &ok[0]), CUDA_ERROR_INVALID_VALUE);
  /* The 2-D descriptor: Height 0 is a 1-D array; it reads back as created,
   * and the memory it takes comes back when it is destroyed. */
  a = make2d(1 << 17, 4, CU_AD_FORMAT_UNSIGNED_INT32, 4);   /* cc 9.0's widest */
  CUDA_ARRAY_DESCRIPTOR d2;
  OK(cuArrayGetDescriptor(&d2, a));
  cr_assert(d2.Width == 1 << 17 && d2.Height == 4 && d2.Format == CU_AD_FORMAT_UNSIGNED_INT32 &&
            d2.NumChannels == 4);
  OK(cuMemGetInfo(&free1, &total));
  cr_assert_geq(free0 - free1, (size_t)8 << 20, "an 8 MiB array took %zu bytes", free0 - free1);
  CUDA_ARRAY_DESCRIPTOR wider = {(1 << 17) + 1, 4, CU_AD_FORMAT_UNSIGNED_INT32, 4};
  CUarray w;
  cr_assert_eq(cuArrayCreate(&w, &wider), CUDA_ERROR_INVALID_VALUE);
  OK(cuArrayDestroy(a));
  OK(cuMemGetInfo(&free1, &total));
  cr_assert_eq(free1, free0);
  cr_assert_eq(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuArrayGetDescriptor(&d2, a), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuArrayDestroy(NULL), CUDA_ERROR_INVALID_VALUE);
}

Test(arrays, boxes_in_and_out_of_2d_and_3d_arrays) {
  /* A 2-D array of 8 x 4 floats: a 3 x 2 box of host floats lands at
   * element (2, 1); the whole array comes back through device memory. */
  CUarray a = make2d(8, 4, CU_AD_FORMAT_FLOAT, 1);
  float zero[4][8], box[2][3] = {{1, 2, 3}, {4, 5, 6}}, back[4][8];
  memset(zero, 0, sizeof(zero));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_HOST;
  c.srcHost = zero;
  c.srcPitch = sizeof(zero[0]);
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = sizeof(zero[0]);
  c.Height = 4;
  OK(cuMemcpy2D(&c));
  c.srcHost = box;
  c.srcPitch = sizeof(box[0]);
  c.dstXInBytes = 2 * sizeof(float);
  c.dstY = 1;
  c.WidthInBytes = sizeof(box[0]);
  c.Height = 2;
  OK(cuMemcpy2DAsync(&c, NULL));
  CUdeviceptr d;
  OK(cuMemAlloc(&d, sizeof(back)));
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  c.dstDevice = d;
  c.dstPitch = sizeof(back[0]);
  c.WidthInBytes = sizeof(back[0]);
  c.Height = 4;
  OK(cuMemcpy2D(&c));
  OK(cuMemcpyDtoH(back, d, sizeof(back)));
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 8; x++) {
      float want = y >= 1 && y < 3 && x >= 2 && x < 5 ? box[y - 1][x - 2] : 0;
      cr_assert_eq(back[y][x], want, "(%d,%d): %g, want %g", y, x, back[y][x], want);
    }
  /* What CUDA refuses: an origin or a width of part of an element, a box
   * past the array's width or height. */
  c.srcXInBytes = 2;
  c.WidthInBytes = 4;
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.srcXInBytes = 4;
  c.WidthInBytes = 6;
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.WidthInBytes = sizeof(back[0]);   /* one element past the row */
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  c.srcXInBytes = 0;
  c.srcY = 1;   /* one row past the array */
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_VALUE);
  OK(cuArrayDestroy(a));
  c.srcY = 0;
  cr_assert_eq(cuMemcpy2D(&c), CUDA_ERROR_INVALID_HANDLE);

  /* A 3-D array of 4 x 3 x 2 ints: filled from the host, a 2 x 2 x 2 box
   * from element (1, 1, 0) out to the host. */
  CUDA_ARRAY3D_DESCRIPTOR d3 = {4, 3, 2, CU_AD_FORMAT_SIGNED_INT32, 1, 0};
  OK(cuArray3DCreate(&a, &d3));
  int vol[2][3][4], out[2][2][2];
  for (int i = 0; i < 24; i++)
    (&vol[0][0][0])[i] = i;
  CUDA_MEMCPY3D c3;
  memset(&c3, 0, sizeof(c3));
  c3.srcMemoryType = CU_MEMORYTYPE_HOST;
  c3.srcHost = vol;
  c3.srcPitch = sizeof(vol[0][0]);
  c3.srcHeight = 3;
  c3.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c3.dstArray = a;
  c3.WidthInBytes = sizeof(vol[0][0]);
  c3.Height = 3;
  c3.Depth = 2;
  OK(cuMemcpy3D(&c3));
  memset(&c3, 0, sizeof(c3));
  c3.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c3.srcArray = a;
  c3.srcXInBytes = sizeof(int);
  c3.srcY = 1;
  c3.dstMemoryType = CU_MEMORYTYPE_HOST;
  c3.dstHost = out;
  c3.dstPitch = sizeof(out[0][0]);
  c3.dstHeight = 2;
  c3.WidthInBytes = sizeof(out[0][0]);
  c3.Height = 2;
  c3.Depth = 2;
  OK(cuMemcpy3DAsync(&c3, NULL));
  OK(cuCtxSynchronize());
  for (int z = 0; z < 2; z++)
    for (int y = 0; y < 2; y++)
      for (int x = 0; x < 2; x++)
        cr_assert_eq(out[z][y][x], vol[z][y + 1][x + 1], "(%d,%d,%d)", z, y, x);
  c3.srcZ = 1;   /* one slice past the array */
  cr_assert_eq(cuMemcpy3D(&c3), CUDA_ERROR_INVALID_VALUE);
  OK(cuArrayDestroy(a));
}

Test(arrays, one_dim_forms_take_1d_arrays_at_byte_offsets) {
  CUarray a = make2d(16, 0, CU_AD_FORMAT_SIGNED_INT32, 1);
  CUarray b = make2d(16, 0, CU_AD_FORMAT_FLOAT, 1);   /* other format, same element size */
  int in[4] = {1, 2, 3, 4}, out[16];
  OK(cuMemcpyHtoA(a, 8, in, sizeof(in)));
  OK(cuMemcpyAtoA(b, 0, a, 0, 16 * sizeof(int)));
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 16 * sizeof(int)));
  OK(cuMemcpyAtoD(d, b, 0, 16 * sizeof(int)));
  OK(cuMemcpyDtoA(a, 0, d, 16 * sizeof(int)));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemcpyHtoAAsync(a, 0, in, sizeof(int), s));
  OK(cuMemcpyAtoHAsync(out, a, 0, sizeof(out), s));
  OK(cuStreamSynchronize(s));
  cr_assert(out[0] == 1 && out[1] == 0 && out[2] == 1 && out[3] == 2 && out[4] == 3 &&
                out[5] == 4 && out[6] == 0 && out[15] == 0,
            "the array holds %d %d %d %d %d %d %d", out[0], out[1], out[2], out[3], out[4], out[5],
            out[6]);
  memset(out, 0, sizeof(out));
  OK(cuMemcpyAtoH(out, a, 12, 4));
  cr_assert_eq(out[0], 2);
  /* What CUDA refuses: a range past the array, a count or an offset of part
   * of an element, a 2-D array, elements of other sizes, a destroyed array. */
  cr_assert_eq(cuMemcpyHtoA(a, 60, in, 8), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpyHtoA(a, 0, in, 6), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpyAtoH(out, a, 2, 4), CUDA_ERROR_INVALID_VALUE);
  CUarray flat = make2d(4, 4, CU_AD_FORMAT_SIGNED_INT32, 1);
  cr_assert_eq(cuMemcpyHtoA(flat, 0, in, 4), CUDA_ERROR_INVALID_VALUE);
  CUarray wide = make2d(16, 0, CU_AD_FORMAT_SIGNED_INT32, 2);
  cr_assert_eq(cuMemcpyAtoA(wide, 0, a, 0, 8), CUDA_ERROR_INVALID_VALUE);
  OK(cuArrayDestroy(b));
  cr_assert_eq(cuMemcpyAtoD(d, b, 0, 4), CUDA_ERROR_INVALID_HANDLE);
  cr_assert_eq(cuMemcpyHtoA(NULL, 0, in, 4), CUDA_ERROR_INVALID_VALUE);
}

Test(arrays, a_captured_array_copy_is_one_node) {
  CUarray a = make2d(4, 0, CU_AD_FORMAT_SIGNED_INT32, 1);
  int in[4] = {5, 6, 7, 8}, out[4] = {0, 0, 0, 0};
  CUdeviceptr d;
  OK(cuMemAlloc(&d, sizeof(in)));
  OK(cuMemcpyHtoD(d, in, sizeof(in)));
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUDA_MEMCPY3D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
  c.srcDevice = d;
  c.dstMemoryType = CU_MEMORYTYPE_ARRAY;
  c.dstArray = a;
  c.WidthInBytes = sizeof(in);
  c.Height = c.Depth = 1;
  CUgraph g;
  CUgraphExec x;
  OK(cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuMemcpy3DAsync(&c, s));
  OK(cuStreamEndCapture(s, &g));
  size_t n = 0;
  OK(cuGraphGetNodes(g, NULL, &n));
  cr_assert_eq(n, 1);
  OK(cuGraphInstantiate(&x, g, 0));
  OK(cuGraphLaunch(x, s));
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyAtoH(out, a, 0, sizeof(out)));
  cr_assert(memcmp(in, out, sizeof(in)) == 0, "the graph left %d %d %d %d", out[0], out[1], out[2],
            out[3]);
}

/* An operand of a 3-D batch: a pointer (row length, layer height) or an
 * array at an offset, in elements. */
static CUmemcpy3DOperand ptr_op(const void* p, size_t row, size_t layer) {
  CUmemcpy3DOperand o;
  memset(&o, 0, sizeof(o));
  o.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
  o.op.ptr.ptr = (CUdeviceptr)(uintptr_t)p;
  o.op.ptr.rowLength = row;
  o.op.ptr.layerHeight = layer;
  return o;
}
static CUmemcpy3DOperand array_op(CUarray a, size_t x, size_t y, size_t z) {
  CUmemcpy3DOperand o;
  memset(&o, 0, sizeof(o));
  o.type = CU_MEMCPY_OPERAND_TYPE_ARRAY;
  o.op.array.array = a;
  o.op.array.offset = (CUoffset3D){x, y, z};
  return o;
}
static CUDA_MEMCPY3D_BATCH_OP batch_op(CUmemcpy3DOperand src, CUmemcpy3DOperand dst, size_t w,
                                       size_t h, size_t d) {
  CUDA_MEMCPY3D_BATCH_OP op;
  memset(&op, 0, sizeof(op));
  op.src = src;
  op.dst = dst;
  op.extent = (CUextent3D){w, h, d};
  op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
  return op;
}

Test(arrays, batched_3d_copies_between_arrays_and_pointers) {
  CUarray a = make2d(4, 3, CU_AD_FORMAT_SIGNED_INT32, 1);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 64));
  OK(cuMemsetD8(d, 0, 64));
  /* Rows of 6 ints (2 rows) into the array's rows 1-2 (elements of 4
   * bytes), and a box of 4 bytes x 2 rows x 2 layers out of a host buffer of
   * rows of 8 bytes and layers of 3 rows into d, packed (bytes: the
   * element between two pointers). */
  int rows[2][6] = {{1, 2, 3, 4, 0, 0}, {5, 6, 7, 8, 0, 0}};
  unsigned char box[2][3][8];
  for (int i = 0; i < 48; i++)
    ((unsigned char*)box)[i] = (unsigned char)i;
  CUDA_MEMCPY3D_BATCH_OP in[2] = {batch_op(ptr_op(rows, 6, 0), array_op(a, 0, 1, 0), 4, 2, 1),
                                  batch_op(ptr_op(box, 8, 3), ptr_op((void*)(uintptr_t)d, 0, 0),
                                           4, 2, 2)};
  OK(cuMemcpy3DBatchAsync(2, in, 0, s));
  /* Then, as another batch (a batch's copies are not ordered), 2 x 2
   * elements at (1, 1) out of the array and d's 16 bytes to the host. */
  int out[2][2] = {{0, 0}, {0, 0}};
  unsigned char packed[16] = {0};
  CUDA_MEMCPY3D_BATCH_OP back[2] = {batch_op(array_op(a, 1, 1, 0), ptr_op(out, 0, 0), 2, 2, 1),
                                    batch_op(ptr_op((void*)(uintptr_t)d, 0, 0), ptr_op(packed, 0, 0),
                                             16, 1, 1)};
  back[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_ANY;
  OK(cuMemcpy3DBatchAsync(2, back, 0, s));
  OK(cuStreamSynchronize(s));
  cr_assert(out[0][0] == 2 && out[0][1] == 3 && out[1][0] == 6 && out[1][1] == 7,
            "the array gave %d %d %d %d", out[0][0], out[0][1], out[1][0], out[1][1]);
  unsigned char want[16] = {0, 1, 2, 3, 8, 9, 10, 11, 24, 25, 26, 27, 32, 33, 34, 35};
  cr_assert(memcmp(packed, want, 16) == 0, "the box packed as %u %u %u %u ... %u", packed[0],
            packed[4], packed[8], packed[12], packed[15]);

  /* What CUDA refuses, each leaving the stream untouched (the first op of
   * the batch is good): flags, the legacy and NULL streams, no ops, a zero
   * extent, a row length or layer height below the extent, an unknown
   * operand type, access order or op flag, arrays of other element sizes, a
   * box past the array, a destroyed array. */
  int zero[4] = {0, 0, 0, 0};
  CUDA_MEMCPY3D_BATCH_OP bad[2] = {batch_op(ptr_op(zero, 0, 0), ptr_op((void*)(uintptr_t)d, 0, 0),
                                            16, 1, 1),
                                   batch_op(ptr_op(rows, 6, 0), array_op(a, 0, 0, 0), 4, 2, 1)};
  OK(cuMemcpy3DBatchAsync(2, bad, 0, s));   /* good as it stands */
  OK(cuStreamSynchronize(s));                /* s does not wait for the legacy stream */
  OK(cuMemcpyHtoD(d, box, 16));
  cr_assert_eq(cuMemcpy3DBatchAsync(2, bad, 1, s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpy3DBatchAsync(2, bad, 0, CU_STREAM_LEGACY), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpy3DBatchAsync(2, bad, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpy3DBatchAsync(0, bad, 0, s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(cuMemcpy3DBatchAsync(2, NULL, 0, s), CUDA_ERROR_INVALID_VALUE);
  CUDA_MEMCPY3D_BATCH_OP good = bad[1];
  CUarray wide = make2d(4, 3, CU_AD_FORMAT_SIGNED_INT32, 2);
  CUarray gone = make2d(4, 3, CU_AD_FORMAT_SIGNED_INT32, 1);
  OK(cuArrayDestroy(gone));
  for (int k = 0; k < 12; k++) {
    bad[1] = good;
    switch (k) {
    case 0: bad[1].extent.depth = 0; break;
    case 1: bad[1].src.op.ptr.rowLength = 3; break;
    case 2: bad[1] = batch_op(ptr_op(box, 8, 1), ptr_op(packed, 0, 0), 4, 2, 2); break;
    case 3: bad[1].dst.type = (CUmemcpy3DOperandType)3; break;
    case 4: bad[1].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_INVALID; break;
    case 5: bad[1].flags = 2; break;
    case 6: bad[1] = batch_op(array_op(wide, 0, 0, 0), array_op(a, 0, 0, 0), 1, 1, 1); break;
    case 7: bad[1].dst.op.array.offset.y = 2; break;
    case 8: bad[1].dst.op.array.array = gone; break;
    case 9: bad[1].extent.width = 5; break;
    /* as short even where one row or one layer would not reach past it */
    case 10: bad[1] = batch_op(ptr_op(rows, 3, 0), array_op(a, 0, 0, 0), 4, 1, 1); break;
    case 11: bad[1] = batch_op(ptr_op(rows, 6, 1), array_op(a, 0, 0, 0), 4, 2, 1); break;
    }
    CUresult r = cuMemcpy3DBatchAsync(2, bad, 0, s);
    cr_assert(r == CUDA_ERROR_INVALID_VALUE || (k == 8 && r == CUDA_ERROR_INVALID_HANDLE),
              "case %d: %d", k, r);
  }
  OK(cuStreamSynchronize(s));
  unsigned char now[16];
  OK(cuMemcpyDtoH(now, d, 16));
  cr_assert(memcmp(now, box, 16) == 0, "a refused batch ran its first op");
}

/* CUDA 12.8's form of the batch (the unversioned symbols, with a failing
 * index), as a 12.8 program or runtime reaches it: cuGetProcAddress below
 * version 13000 (13's form from 13000), and the exports. */
Test(arrays, cuda_12_8_batch_copies_and_names_the_failing_op) {
  void *pf, *ppt;
  drv_form_12_8("cuMemcpy3DBatchAsync", &pf, &ppt);
  PFN_cuMemcpy3DBatchAsync_v12080 f = (PFN_cuMemcpy3DBatchAsync_v12080)pf;
  PFN_cuMemcpy3DBatchAsync_v12080_ptsz fpt = (PFN_cuMemcpy3DBatchAsync_v12080_ptsz)ppt;

  CUarray a = make2d(4, 3, CU_AD_FORMAT_SIGNED_INT32, 1);
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdeviceptr d;
  OK(cuMemAlloc(&d, 16));
  int rows[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}}, out[3][4], back[4];
  memset(out, 0, sizeof(out));
  CUDA_MEMCPY3D_BATCH_OP ops[3] = {
      batch_op(ptr_op(rows, 0, 0), array_op(a, 0, 1, 0), 4, 2, 1),
      batch_op(ptr_op(rows[1], 0, 0), ptr_op((void*)(uintptr_t)d, 0, 0), 16, 1, 1),
      batch_op(ptr_op(rows, 0, 0), array_op(a, 0, 0, 0), 4, 1, 1)};
  size_t fail = 77;
  OK(f(3, ops, &fail, 0, s));
  OK(cuStreamSynchronize(s));
  CUDA_MEMCPY3D_BATCH_OP get[2] = {batch_op(array_op(a, 0, 0, 0), ptr_op(out, 0, 0), 4, 3, 1),
                                   batch_op(ptr_op((void*)(uintptr_t)d, 0, 0), ptr_op(back, 0, 0),
                                            16, 1, 1)};
  OK(fpt(2, get, &fail, 0, s));
  OK(cuStreamSynchronize(s));
  cr_assert(out[0][0] == 1 && out[1][0] == 1 && out[2][3] == 8 && back[0] == 5 && back[3] == 8,
            "the array gave %d %d %d, d %d %d", out[0][0], out[1][0], out[2][3], back[0], back[3]);

  /* A bad op (a zero extent, then a destroyed array) is named by its index
   * through either variant, and nothing of the batch runs; an error of the
   * whole call (flags, the legacy stream, no ops) names none: SIZE_MAX. */
  OK(cuMemsetD8(d, 0, 16));
  CUarray gone = make2d(4, 3, CU_AD_FORMAT_SIGNED_INT32, 1);
  OK(cuArrayDestroy(gone));
  ops[1].extent.depth = 0;
  cr_assert_eq(f(3, ops, &fail, 0, s), CUDA_ERROR_INVALID_VALUE);
  cr_assert_eq(fail, 1);
  ops[1].extent.depth = 1;
  ops[2].dst.op.array.array = gone;
  fail = 0;
  cr_assert_neq(fpt(3, ops, &fail, 0, s), CUDA_SUCCESS);
  cr_assert_eq(fail, 2);
  CUresult r[3] = {f(3, ops, &fail, 1, s), CUDA_SUCCESS, CUDA_SUCCESS};
  cr_assert(r[0] == CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX, "flags: %d, %zu", r[0], fail);
  fail = 0;
  r[1] = f(3, ops, &fail, 0, CU_STREAM_LEGACY);
  cr_assert(r[1] == CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX, "legacy: %d, %zu", r[1], fail);
  fail = 0;
  r[2] = f(0, ops, &fail, 0, s);
  cr_assert(r[2] == CUDA_ERROR_INVALID_VALUE && fail == SIZE_MAX, "none: %d, %zu", r[2], fail);
  OK(cuStreamSynchronize(s));
  OK(cuMemcpyDtoH(back, d, 16));
  cr_assert(back[0] == 0 && back[3] == 0, "a refused batch ran its op 1");
}

Test(arrays, a_batch_source_read_during_the_call_is_read_at_the_call) {
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  int *src, out[2][4];
  OK(cuMemAllocHost((void**)&src, 16));   /* pinned: otherwise copied at the call anyway */
  CUarray a = make2d(4, 2, CU_AD_FORMAT_SIGNED_INT32, 1);
  drv_gate_close(s);
  for (int i = 0; i < 4; i++)
    src[i] = 10 + i;
  /* Row 0 read during the call, row 1 in stream order: the stream is held
   * back until after the source changes. */
  CUDA_MEMCPY3D_BATCH_OP ops[2] = {batch_op(ptr_op(src, 0, 0), array_op(a, 0, 0, 0), 4, 1, 1),
                                   batch_op(ptr_op(src, 0, 0), array_op(a, 0, 1, 0), 4, 1, 1)};
  ops[0].srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL;
  OK(cuMemcpy3DBatchAsync(2, ops, 0, s));
  for (int i = 0; i < 4; i++)
    src[i] = 20 + i;
  drv_gate_open();
  OK(cuStreamSynchronize(s));
  CUDA_MEMCPY2D c;
  memset(&c, 0, sizeof(c));
  c.srcMemoryType = CU_MEMORYTYPE_ARRAY;
  c.srcArray = a;
  c.dstMemoryType = CU_MEMORYTYPE_HOST;
  c.dstHost = out;
  c.dstPitch = 16;
  c.WidthInBytes = 16;
  c.Height = 2;
  OK(cuMemcpy2D(&c));
  cr_assert(out[0][0] == 10 && out[0][3] == 13 && out[1][0] == 20 && out[1][3] == 23,
            "rows %d..%d and %d..%d", out[0][0], out[0][3], out[1][0], out[1][3]);
  OK(cuMemFreeHost(src));
}

static const char vars_ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .global .align 4 .b8 counter[16];\n"
    ".visible .global .align 4 .u32 inited[2] = {7, 9};\n"
    ".visible .const .align 4 .f32 scale = 0f40000000;\n"
    ".visible .entry vars_k()\n{\n ret;\n}\n";

Test(arrays, module_variables_are_device_memory_with_their_initial_values) {
  CUmodule m, m2;
  OK(cuModuleLoadData(&m, vars_ptx));
  CUdeviceptr p, p2;
  size_t n = 0;
  OK(cuModuleGetGlobal(&p, &n, m, "counter"));
  cr_assert_eq(n, 16);
  int got[4] = {1, 1, 1, 1};
  OK(cuMemcpyDtoH(got, p, 16));
  cr_assert(got[0] == 0 && got[3] == 0, "a variable without initialiser reads %d %d", got[0], got[3]);
  OK(cuModuleGetGlobal(&p, NULL, m, "inited"));
  OK(cuMemcpyDtoH(got, p, 8));
  cr_assert(got[0] == 7 && got[1] == 9, "inited reads %d %d", got[0], got[1]);
  float f = 0;
  OK(cuModuleGetGlobal(NULL, &n, m, "scale"));
  cr_assert_eq(n, 4);
  OK(cuModuleGetGlobal(&p, NULL, m, "scale"));
  OK(cuMemcpyDtoH(&f, p, 4));
  cr_assert_eq(f, 2.0f);
  /* Written through its address, read back; another load has its own. */
  got[0] = 42;
  OK(cuModuleGetGlobal(&p, NULL, m, "counter"));
  OK(cuMemcpyHtoD(p + 4, got, 4));
  OK(cuModuleLoadData(&m2, vars_ptx));
  OK(cuModuleGetGlobal(&p2, NULL, m2, "counter"));
  cr_assert_neq(p, p2);
  OK(cuMemcpyDtoH(got, p + 4, 4));
  cr_assert_eq(got[0], 42);
  /* What CUDA refuses: a name the image lacks, no name, a stale module. */
  cr_assert_eq(cuModuleGetGlobal(&p, &n, m, "vars_k"), CUDA_ERROR_NOT_FOUND);
  cr_assert_eq(cuModuleGetGlobal(&p, &n, m, NULL), CUDA_ERROR_INVALID_VALUE);
  OK(cuModuleUnload(m2));
  cr_assert_eq(cuModuleGetGlobal(&p, &n, m2, "counter"), CUDA_ERROR_INVALID_HANDLE);
  /* A library's variables, as the runtime reaches them. */
  CUlibrary lib;
  OK(cuLibraryLoadData(&lib, vars_ptx, NULL, NULL, 0, NULL, NULL, 0));
  OK(cuLibraryGetGlobal(&p, &n, lib, "inited"));
  cr_assert_eq(n, 8);
  OK(cuMemcpyDtoH(got, p, 8));
  cr_assert(got[0] == 7 && got[1] == 9);
  cr_assert_eq(cuLibraryGetGlobal(&p, &n, lib, "nothing"), CUDA_ERROR_NOT_FOUND);
}

/* What a batch of 3-D copies moves (copies.h): the one copy description that
 * asks the driver, for the element size of each array operand. */
#include "copies.h"

#include "real.h"
#include "state.h"

typedef CUresult (*array_desc_fn)(CUDA_ARRAY3D_DESCRIPTOR*, CUarray);

/* Bytes per element of array a (format size times channels); 0 when the
 * driver does not say or the format is not one of the plain ones. */
static uint64_t element_bytes(CUarray a) {
  static array_desc_fn desc;
  array_desc_fn f = __atomic_load_n(&desc, __ATOMIC_RELAXED);
  if (f == NULL) {
    f = (array_desc_fn)grape__real_driver("cuArray3DGetDescriptor_v2");
    __atomic_store_n(&desc, f, __ATOMIC_RELAXED);
  }
  CUDA_ARRAY3D_DESCRIPTOR d;
  CUresult r = CUDA_ERROR_NOT_FOUND;
  if (f != NULL)
    GRAPE_NO_REENTRY(r = f(&d, a));
  if (r != CUDA_SUCCESS)
    return 0;
  switch (d.Format) {
  case CU_AD_FORMAT_UNSIGNED_INT8:
  case CU_AD_FORMAT_SIGNED_INT8:
    return d.NumChannels;
  case CU_AD_FORMAT_UNSIGNED_INT16:
  case CU_AD_FORMAT_SIGNED_INT16:
  case CU_AD_FORMAT_HALF:
    return 2ull * d.NumChannels;
  case CU_AD_FORMAT_UNSIGNED_INT32:
  case CU_AD_FORMAT_SIGNED_INT32:
  case CU_AD_FORMAT_FLOAT:
    return 4ull * d.NumChannels;
  default:
    return 0;
  }
}

/* An operand: device memory or not, and its element size if an array. */
static int operand_is_device(const CUmemcpy3DOperand* o, uint64_t* esize) {
  *esize = 0;
  if (o->type == CU_MEMCPY_OPERAND_TYPE_ARRAY) {
    *esize = element_bytes(o->op.array.array);
    return 1;
  }
  return grape__is_device_mem((const void*)(uintptr_t)o->op.ptr.ptr);
}

grape_copy_t grape__copy_batch3d(const CUDA_MEMCPY3D_BATCH_OP* ops, size_t n) {
  grape_copy_t c = {0, GRAPE_TRACE_DIR_NONE};
  for (size_t i = 0; ops != NULL && i < n; i++) {
    uint64_t se, de;
    int sd = operand_is_device(&ops[i].src, &se), dd = operand_is_device(&ops[i].dst, &de);
    uint32_t dir = grape__copy_dir(sd, dd);
    c.dir = i == 0 || c.dir == dir ? dir : GRAPE_TRACE_DIR_NONE;
    uint64_t e = se ? se : de ? de : 1;   /* between two pointers, bytes */
    c.bytes += e * ops[i].extent.width * ops[i].extent.height * ops[i].extent.depth;
  }
  return c;
}

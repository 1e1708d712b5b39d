/* rt_fatbin.c: see rt_fatbin.h.
 *
 * DESIGN: the container is the documented fatbin layout: a 16-byte header
 * (magic 0xBA55ED50, version 1, header size, size of the rest) and one entry
 * (kind 1 = PTX, its header size, payload size and arch 90) followed by the
 * NUL-terminated PTX, 8-byte padded. The wrapper is the
 * __fatBinC_Wrapper_t nvcc emits (magic 0x466243B1, version 1, data). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rt_fatbin.h"

typedef struct wrapper_s {
  int magic, version;
  const void* data;
  void* filename;
} wrapper_t;

static void put16(unsigned char* p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(unsigned char* p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(unsigned char* p, uint64_t v) { memcpy(p, &v, 8); }

void** rt_register_ptx(const char* ptx, const char* const* names, const void* const* stubs, int n) {
  size_t payload = (strlen(ptx) + 1 + 7) & ~(size_t)7;
  size_t size = 16 + 64 + payload;
  unsigned char* fb = aligned_alloc(16, (size + 15) & ~(size_t)15);
  wrapper_t* w = calloc(1, sizeof(*w));
  if (fb == NULL || w == NULL) {
    free(fb);
    free(w);
    return NULL;
  }
  memset(fb, 0, size);
  put32(fb + 0, 0xBA55ED50u);
  put16(fb + 4, 1);
  put16(fb + 6, 16);
  put64(fb + 8, 64 + payload);
  unsigned char* e = fb + 16;
  put16(e + 0, 1);                 /* kind: PTX */
  put16(e + 2, 0x0101);
  put32(e + 4, 64);                /* entry header size */
  put64(e + 8, payload);
  put32(e + 28, 90);               /* arch */
  memcpy(e + 64, ptx, strlen(ptx) + 1);
  w->magic = 0x466243B1;
  w->version = 1;
  w->data = fb;
  void** h = __cudaRegisterFatBinary(w);
  for (int i = 0; i < n; i++)
    __cudaRegisterFunction(h, (const char*)stubs[i], (char*)names[i], names[i], -1, NULL, NULL,
                           NULL, NULL, NULL);
  __cudaRegisterFatBinaryEnd(h);
  return h;
}

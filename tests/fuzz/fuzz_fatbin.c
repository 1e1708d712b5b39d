/* libFuzzer target for cubin/: the bytes go through every entry point that
 * takes untrusted images -- grape_fatbin_parse (host .nv_fatbin sections)
 * and grape_image_load (what cuModuleLoadData and __cudaRegisterFatBinary
 * hand over: fatbin, cubin or PTX) -- and everything they return is read.
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true; seeds in corpus/;
 * how to run it is in docs/testing.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grape/cubin.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* Reads every field, so ASan checks the pointers the set hands out. */
static unsigned touch(const grape_fatbin_t* fb) {
  unsigned h = 0;
  for (size_t i = 0; i < grape_fatbin_count(fb); i++) {
    const grape_image_t* img = grape_fatbin_image(fb, i);
    if (img->size)
      h += img->data[0] + img->data[img->size - 1];
    for (uint32_t k = 0; k < img->nkernels; k++) {
      const grape_kernel_t* kr = &img->kernels[k];
      h += (unsigned)strlen(kr->name) + (unsigned)strlen(kr->demangled);
      for (uint32_t p = 0; p < kr->nparams; p++)
        h += kr->params[p].offset + kr->params[p].size;
      if (grape_image_find_kernel(img, kr->name) == NULL)
        abort();
    }
  }
  for (int arch = 50; arch <= 120; arch += 10)
    h += grape_fatbin_select(fb, arch) != NULL;
  return h;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grape_fatbin_t* fb = NULL;
  grape_cubin_err_t err;
  volatile unsigned sink = 0;
  if (grape_fatbin_parse(data, size, &fb, &err) == 0) {
    sink += touch(fb);
    grape_fatbin_free(fb);
  } else if (err.msg[0] == '\0' || fb != NULL) {
    abort();   /* an error must say what is wrong and leave no object */
  }
  /* A __fatBinC_Wrapper_t holds a raw pointer that grape_image_load follows by
   * contract (it is the process's own registration), so it cannot be fuzzed. */
  uint32_t magic = 0;
  if (size >= 4)
    memcpy(&magic, data, 4);
  if (size > 0 && magic != 0x466243B1u && grape_image_load(data, size, &fb, &err) == 0) {
    sink += touch(fb);
    grape_fatbin_free(fb);
  }
  /* The one-image path (what a shim registering for one device uses). */
  if (size > 0 && magic != 0x466243B1u && grape_image_load_arch(data, size, 90, &fb, &err) == 0) {
    sink += touch(fb);
    grape_fatbin_free(fb);
  }
  (void)sink;
  return 0;
}

/* set.c: the image set (grape_fatbin_t) that every parser of cubin/ fills,
 * its public accessors, and the error messages of cubin/.
 *
 * DESIGN: a set owns everything a parse produced: its images, their kernels,
 * and the buffers the images' bytes live in, so grape_fatbin_free is the one
 * place that frees them. The parsers only append (grape__fatbin_push,
 * grape__fatbin_own) and report through grape__cubin_errf, which is why this
 * file depends on none of them. A zstd context and a scratch buffer are kept
 * in the set while one call parses many entries, and released before the set
 * is handed to the caller (grape__fatbin_finish).
 */
#include "set.h"
#include "util/grow.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>


/* ---- Errors ---- */

void grape__cubin_errf(grape_cubin_err_t* err, const char* fmt, ...) {
  va_list ap;
  if (err == NULL)
    return;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof err->msg, fmt, ap);
  va_end(ap);
}

void grape__cubin_err_prefix(grape_cubin_err_t* err, const char* fmt, ...) {
  char head[128];
  va_list ap;
  if (err == NULL)
    return;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  size_t hl = strlen(head) + 2;   /* "head: " */
  if (hl >= sizeof err->msg)
    return;
  memmove(err->msg + hl, err->msg, sizeof err->msg - hl);
  memcpy(err->msg, head, hl - 2);
  memcpy(err->msg + hl - 2, ": ", 2);
  err->msg[sizeof err->msg - 1] = '\0';
}

/* ---- The set ---- */

grape_fatbin_t* grape__fatbin_new(grape_cubin_err_t* err) {
  grape_fatbin_t* fb = calloc(1, sizeof(grape_fatbin_t));
  if (fb == NULL)
    grape__cubin_errf(err, "out of memory");
  return fb;
}

int grape__fatbin_own(grape_fatbin_t* fb, void* buf) {
  if (fb->nbufs == fb->bufcap) {
    void** b = grape__grow(fb->bufs, &fb->bufcap, fb->nbufs + 1, sizeof(*b), 8);
    if (b == NULL) {
      free(buf);
      return -ENOMEM;
    }
    fb->bufs = b;
  }
  fb->bufs[fb->nbufs++] = buf;
  return 0;
}

grape_image_t* grape__fatbin_push(grape_fatbin_t* fb) {
  if (fb->nimages == fb->cap) {
    grape_image_t* im = grape__grow(fb->images, &fb->cap, fb->nimages + 1, sizeof(*im), 8);
    if (im == NULL)
      return NULL;
    fb->images = im;
  }
  grape_image_t* img = &fb->images[fb->nimages++];
  memset(img, 0, sizeof(*img));
  return img;
}

void grape__image_clear(grape_image_t* img) {
  for (uint32_t k = 0; k < img->nkernels; k++) {
    free(img->kernels[k].name);
    free(img->kernels[k].demangled);
    free(img->kernels[k].params);
  }
  free(img->kernels);
  img->kernels = NULL;
  img->nkernels = 0;
  for (uint32_t g = 0; g < img->nglobals; g++) {
    free(img->globals[g].name);
    free(img->globals[g].init);
  }
  free(img->globals);
  img->globals = NULL;
  img->nglobals = 0;
}

void grape_image_release(grape_image_t* img) {
  if (img)
    grape__image_clear(img);
}

void grape__fatbin_release(grape_fatbin_t* fb) {
  ZSTD_freeDCtx(fb->dctx);
  fb->dctx = NULL;
  free(fb->scratch);
  fb->scratch = NULL;
  fb->scratch_cap = 0;
}

int grape__fatbin_finish(grape_fatbin_t* fb, int rc, grape_fatbin_t** out) {
  if (rc) {
    grape_fatbin_free(fb);
    return rc;
  }
  grape__fatbin_release(fb);
  *out = fb;
  return 0;
}

void grape_fatbin_free(grape_fatbin_t* fb) {
  if (fb == NULL)
    return;
  for (size_t i = 0; i < fb->nimages; i++)
    grape__image_clear(&fb->images[i]);
  free(fb->images);
  for (size_t i = 0; i < fb->nbufs; i++)
    free(fb->bufs[i]);
  free(fb->bufs);
  grape__fatbin_release(fb);
  free(fb);
}

size_t grape_fatbin_count(const grape_fatbin_t* fb) {
  return fb ? fb->nimages : 0;
}

const grape_image_t* grape_fatbin_image(const grape_fatbin_t* fb, size_t i) {
  return fb && i < fb->nimages ? &fb->images[i] : NULL;
}

size_t grape_fatbin_kernel_count(const grape_fatbin_t* fb) {
  size_t n = 0;
  for (size_t i = 0; fb && i < fb->nimages; i++)
    n += fb->images[i].nkernels;
  return n;
}

/* ---- Names and look-ups ---- */

const char* grape_compression_name(grape_compression_t c) {
  switch (c) {
    case GRAPE_COMPRESS_NONE: return "none";
    case GRAPE_COMPRESS_LZ4: return "lz4";
    case GRAPE_COMPRESS_ZSTD: return "zstd";
  }
  return "unknown";
}

const char* grape_image_kind_name(grape_image_kind_t k) {
  return k == GRAPE_IMAGE_ELF     ? "elf"
         : k == GRAPE_IMAGE_PTX   ? "ptx"
         : k == GRAPE_IMAGE_LTOIR ? "ltoir"
                                  : "unknown";
}

const grape_kernel_t* grape_image_find_kernel(const grape_image_t* img, const char* name) {
  if (img == NULL || name == NULL)
    return NULL;
  for (uint32_t k = 0; k < img->nkernels; k++)
    if (strcmp(img->kernels[k].name, name) == 0)
      return &img->kernels[k];
  return NULL;
}

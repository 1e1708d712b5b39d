/* set.h: the image set (grape_fatbin_t) and error messages, which every file
 * of cubin/ shares (set.c).
 *
 * DESIGN: the set owns its images, the kernels parsed from them, and every
 * buffer their bytes live in (input copies, decompressed payloads); the
 * parsers append to it and fill the caller's grape_cubin_err_t. Nothing here
 * parses, so the parsers (fatbin.c, cubin.c, ptx.c) depend on this file and
 * never on each other's error or set helpers.
 */
#ifndef GRAPE_CUBIN_SET_H
#define GRAPE_CUBIN_SET_H

#include <stddef.h>
#include <stdint.h>

#include "grape/cubin.h"

struct grape_fatbin_s {
  grape_image_t* images;   /* nimages entries, in container order */
  size_t nimages;
  size_t cap;
  void** bufs;             /* buffers owned by the set: input copies, decompressed payloads */
  size_t nbufs;
  size_t bufcap;
  unsigned flags;          /* GRAPE_FATBIN_* load flags */
  int select_arch;         /* > 0: per container, keep only grape_fatbin_select's choice */
  uint8_t* scratch;        /* NO_PAYLOADS: one reused decompression buffer */
  size_t scratch_cap;
  void* dctx;              /* ZSTD_DCtx reused across entries; freed by grape__fatbin_release */
};

/* Fills err (which may be NULL) with a printf-style message. */
void grape__cubin_errf(grape_cubin_err_t* err, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Puts "<formatted>: " in front of the message already in err. */
void grape__cubin_err_prefix(grape_cubin_err_t* err, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* An empty set; NULL when out of memory (err says so). */
grape_fatbin_t* grape__fatbin_new(grape_cubin_err_t* err);
/* Hands buf to fb (freed with it). On failure frees buf and returns -ENOMEM. */
int grape__fatbin_own(grape_fatbin_t* fb, void* buf);
/* Appends a zeroed image and returns it; NULL when out of memory. */
grape_image_t* grape__fatbin_push(grape_fatbin_t* fb);
/* Frees fb's decompression context and scratch buffer (kept between entries
 * and containers of one call). */
void grape__fatbin_release(grape_fatbin_t* fb);
/* The end of a load: with rc 0, fb (its caches released) goes to *out;
 * otherwise fb is freed. Returns rc. */
int grape__fatbin_finish(grape_fatbin_t* fb, int rc, grape_fatbin_t** out);

/* Frees an image's kernels (not its bytes, which the set owns). */
void grape__image_clear(grape_image_t* img);

#endif

/* The launch path shared by every route (see launch.h).
 *
 * DESIGN: runs after the real launch succeeded, so a failed launch is neither
 * counted nor recorded, and the report's launches equal the kernels the device
 * ran. Arguments are copied once, following the function's cached layout,
 * straight into the stream's region (reserved under the region's lock), then
 * committed with the op's signature. The only shared writes are relaxed counter increments and the
 * stream's own region lock. */
#include "launch.h"

#include <stdlib.h>
#include <string.h>

#include "graphcache/fingerprint.h"
#include "internal.h"
#include "recorder.h"

static const char* const route_names[GRAPE_ROUTE_COUNT] = {
  "runtime", "driver", "dlsym", "getprocaddress", "entrypoint",
};

/* GRAPE_LOG=debug: one line per launch with its captured parameter bytes
 * (the first 96), which the integration tests compare with what was launched. */
void grape__log_launch(grape_route_t route, const grape_func_t* f, const grape_launch_t* l,
                       const uint8_t* p, size_t n) {
  char hex[2 * 96 + 1];
  static const char digits[] = "0123456789abcdef";
  size_t k = n < 96 ? n : 96;
  for (size_t i = 0; i < k; i++) {
    hex[2 * i] = digits[p[i] >> 4];
    hex[2 * i + 1] = digits[p[i] & 15];
  }
  hex[2 * k] = '\0';
  grape_log_debug("launch %s route=%s grid=%u,%u,%u block=%u,%u,%u shmem=%u stream=%p layout=%s params=%s",
                  f && f->name ? f->name : "(unnamed)", route_names[route], l->grid[0], l->grid[1],
                  l->grid[2], l->block[0], l->block[1], l->block[2], l->shmem, l->stream,
                  f ? f->layout_source : "none", hex);
}

void grape__on_memop(int op_kind, uint64_t n, uint32_t width, const void* stream, int ptds) {
  if (__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) > 0 && grape__stream_capturing(stream, ptds))
    return;
  grape_op_sig_t sig = {.kind = (uint32_t)op_kind, .func = n, .grid = {width, 0, 0}};
  grape__rec_op(grape__stream_key(stream, ptds), &sig, NULL, 0);
}

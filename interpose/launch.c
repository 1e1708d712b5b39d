/* The launch path shared by every route (see launch.h).
 *
 * DESIGN: runs after the real launch succeeded, so a failed launch is neither
 * counted nor recorded, and the report's launches equal the kernels the device
 * ran. Arguments are copied into a stack buffer (heap beyond 4 KiB) following
 * the function's cached layout, then appended to the stream's region with the
 * op's signature. The only shared writes are relaxed counter increments and the
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
static void log_launch(grape_route_t route, const grape_func_t* f, const grape_launch_t* l,
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

void grape__on_launch(grape_route_t route, const grape_launch_t* l) {
  grape__count(&grape__counters.launches[route]);
  grape_func_t* f = grape__func_get(l->fn, (grape_handle_kind_t)l->kind);
  grape_op_sig_t sig = {
    .kind = GRAPE_OP_KERNEL,
    .func = f ? f->id : (uint64_t)(uintptr_t)l->fn,
    .grid = {l->grid[0], l->grid[1], l->grid[2]},
    .block = {l->block[0], l->block[1], l->block[2]},
    .shmem = l->shmem,
    .flags = l->flags,
  };
  uint8_t stack[4096];
  uint8_t* buf = stack;
  size_t cap = sizeof(stack);
  size_t need = (f && f->nparams >= 0 ? f->param_bytes : 0) + l->attrs_bytes;
  if (l->extra != NULL && l->params == NULL)
    need = grape__extra_size(l->extra) + l->attrs_bytes;
  if (need > cap) {
    buf = malloc(need);
    cap = need;
    if (buf == NULL) {
      buf = stack;
      cap = sizeof(stack);
    }
  }
  size_t n = grape__func_capture(f, l->params, l->extra, buf, cap);
  if (n == 0 && (f == NULL || f->nparams < 0) && !(l->extra && !l->params))
    grape__count(&grape__counters.param_unknown);
  if (l->extra != NULL && l->params == NULL)
    sig.flags |= GRAPE_SIG_EXTRA;
  sig.param_bytes = (uint32_t)n;
  if (__builtin_expect(grape__log_level() >= GRAPE_LOG_DEBUG, 0))
    log_launch(route, f, l, buf, n);
  if (l->attrs_bytes && n + l->attrs_bytes <= cap) {
    memcpy(buf + n, l->attrs, l->attrs_bytes);
    sig.attrs = grape__fp_bytes(l->attrs, l->attrs_bytes);
    n += l->attrs_bytes;
  }
  grape__rec_op(grape__stream_key(l->stream, l->ptds), &sig, buf, n);
  if (buf != stack)
    free(buf);
}

void grape__on_memop(int op_kind, uint64_t n, uint32_t width, const void* stream, int ptds) {
  grape_op_sig_t sig = {.kind = (uint32_t)op_kind, .func = n, .grid = {width, 0, 0}};
  grape__rec_op(grape__stream_key(stream, ptds), &sig, NULL, 0);
}

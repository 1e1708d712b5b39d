/* What every launch route does once the real launch has succeeded: count it by
 * route, find the function's info, capture its arguments, record the op. */
#ifndef GRAPE_INTERPOSE_LAUNCH_H
#define GRAPE_INTERPOSE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "funcinfo.h"
#include "graphcache/fingerprint.h"
#include "hooks.h"
#include "internal.h"
#include "recorder.h"
#include <string.h>

typedef struct grape_launch_s {
  const void* fn;           /* the handle the caller launched */
  int kind;                 /* grape_handle_kind_t of fn */
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shmem;
  const void* stream;       /* as passed */
  int ptds;                 /* per-thread-default-stream entry point */
  void** params;            /* kernelParams, or NULL */
  void** extra;             /* the 'extra' form, or NULL */
  uint32_t flags;           /* GRAPE_SIG_* */
  const void* attrs;        /* launch attributes (deep-copied with the parameters) */
  size_t attrs_bytes;
} grape_launch_t;

/* GRAPE_LOG=debug: one line per launch with its captured parameter bytes. */
void grape__log_launch(grape_route_t route, const grape_func_t* f, const grape_launch_t* l,
                       const uint8_t* p, size_t n);

/* Records launch l that came through route. Call only when grape__active().
 * Inlined into each launch hook: this is the per-launch path, and passing the
 * launch through one more call costs as much as recording it. */
static inline __attribute__((always_inline)) void grape__on_launch(grape_route_t route,
                                                                  const grape_launch_t* l) {
  if (__builtin_expect(__atomic_load_n(&grape__captures, __ATOMIC_RELAXED) > 0, 0) &&
      grape__stream_capturing(l->stream, l->ptds)) {
    grape__count(&grape__counters.captured);   /* the program's own graph: not ours */
    return;
  }
  grape__count(&grape__counters.launches[route]);
  grape_func_t* f = grape__func_get(l->fn, (grape_handle_kind_t)l->kind);
  int extra_form = l->extra != NULL && l->params == NULL;
  size_t need = extra_form ? grape__extra_size(l->extra) : f && f->nparams >= 0 ? f->param_bytes : 0;
  need += l->attrs_bytes;
  if (need < 64)
    need = 64;   /* room for the constant-size clear in grape__func_capture */
  grape_op_sig_t* sig;
  uint8_t* buf;
  grape_region_t* r = grape__rec_begin(grape__stream_key(l->stream, l->ptds), need, &sig, &buf);
  if (r == NULL)
    return;
  size_t n = grape__func_capture(f, l->params, l->extra, buf, need);
  if (n == 0 && (f == NULL || f->nparams < 0) && !extra_form)
    grape__count(&grape__counters.param_unknown);
  /* The signature is written in place, in the region's array. */
  sig->kind = GRAPE_OP_KERNEL;
  sig->param_bytes = (uint32_t)n;
  sig->func = f ? f->id : (uint64_t)(uintptr_t)l->fn;
  sig->grid[0] = l->grid[0];
  sig->grid[1] = l->grid[1];
  sig->grid[2] = l->grid[2];
  sig->block[0] = l->block[0];
  sig->block[1] = l->block[1];
  sig->block[2] = l->block[2];
  sig->shmem = l->shmem;
  sig->flags = l->flags | (extra_form ? GRAPE_SIG_EXTRA : 0);
  sig->attrs = 0;
  if (__builtin_expect(grape__log_level() >= GRAPE_LOG_DEBUG, 0))
    grape__log_launch(route, f, l, buf, n);
  if (l->attrs_bytes && n + l->attrs_bytes <= need) {
    memcpy(buf + n, l->attrs, l->attrs_bytes);
    sig->attrs = grape__fp_bytes(l->attrs, l->attrs_bytes);
    n += l->attrs_bytes;
  }
  grape__rec_commit(r, n);
}

/* Records an async memset / device-to-device copy of n bytes on stream. */
void grape__on_memop(int op_kind, uint64_t n, uint32_t width, const void* stream, int ptds);

#endif

/* What every launch route does once the real launch has succeeded: count it by
 * route, find the function's info, capture its arguments, record the op. */
#ifndef GRAPE_INTERPOSE_LAUNCH_H
#define GRAPE_INTERPOSE_LAUNCH_H

#include <stddef.h>
#include <stdint.h>

#include "funcinfo.h"
#include "hooks.h"

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

/* Records launch l that came through route. Call only when grape__active(). */
void grape__on_launch(grape_route_t route, const grape_launch_t* l);

/* Records an async memset / device-to-device copy of n bytes on stream. */
void grape__on_memop(int op_kind, uint64_t n, uint32_t width, const void* stream, int ptds);

#endif

/* libFuzzer target for the trace reader (replay/read.c): the bytes go to
 * grape_trace_load_mem, everything a trace that loads hands out is read, and
 * a trace that loads is written again and must load again and then write the
 * same bytes (the writer's output is canonical, and anything the reader
 * accepts, the writer can encode). Aborts when an error leaves no message.
 * Build: CC=clang meson setup build-fuzz -Dfuzz=true; seeds in
 * corpus-trace/; how to run it is in docs/testing.md. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grape/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

/* Reads every field, so ASan checks the pointers the trace hands out. */
static unsigned touch(const grape_trace_t* t) {
  unsigned h = (unsigned)strlen(grape_trace_info(t)->device_name) +
               (unsigned)strlen(grape_trace_info(t)->program);
  for (size_t i = 0; i < grape_trace_image_count(t); i++) {
    const grape_trace_image_t* im = grape_trace_image(t, i);
    if (im->size)
      h += im->data[0] + im->data[im->size - 1];
  }
  for (size_t i = 0; i < grape_trace_func_count(t); i++) {
    const grape_trace_func_t* f = grape_trace_func(t, i);
    h += (unsigned)strlen(f->name) + (unsigned)strlen(f->bodies);
    if (f->image != GRAPE_TRACE_NONE && f->image >= grape_trace_image_count(t))
      abort();
    for (uint32_t k = 0; f->nparams != GRAPE_TRACE_NONE && k < f->nparams; k++)
      if (f->params[k].offset + (uint64_t)f->params[k].size > f->param_bytes)
        abort();
  }
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    for (uint32_t j = 0; j < p->nops; j++) {
      const grape_trace_op_t* op = &p->ops[j];
      for (uint32_t k = 0; k < op->param_bytes; k++)
        h += op->params[k];
      for (uint32_t k = 0; k < op->attr_bytes; k++)
        h += op->attrs[k];
      for (uint32_t k = 0; k < op->nptrs; k++) {
        if (op->ptrs[k].alloc >= grape_trace_alloc_count(t) ||
            op->ptrs[k].delta >= grape_trace_alloc(t, op->ptrs[k].alloc)->size)
          abort();
        h += op->params[op->ptrs[k].offset + 7];
      }
      if (p->times != NULL)
        h += p->times->op_ms[j] > 0;
    }
    if (p->graph != NULL)
      h += (unsigned)strlen(p->graph->why);
    if (p->times != NULL)
      h += (unsigned)strlen(p->times->device);
  }
  return h;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  grape_trace_t* t = NULL;
  char err[512] = "";
  volatile unsigned sink = 0;
  if (grape_trace_load_mem(data, size, &t, err, sizeof(err)) != 0) {
    if (err[0] == '\0')
      abort();
    return 0;
  }
  sink += touch(t);
  uint8_t *b1, *b2;
  size_t l1, l2;
  if (grape_trace_encode(t, 0, &b1, &l1, NULL) != 0)
    abort();
  grape_trace_t* r = NULL;
  if (grape_trace_load_mem(b1, l1, &r, err, sizeof(err)) != 0)
    abort();   /* the writer wrote what the reader refuses */
  if (grape_trace_encode(r, 0, &b2, &l2, NULL) != 0 || l1 != l2 || memcmp(b1, b2, l1) != 0)
    abort();   /* write -> read -> write changed the bytes */
  /* A size limit on what was read: whatever it keeps must load too. */
  free(b2);
  if (grape_trace_encode(r, l1 / 2, &b2, &l2, NULL) != 0)
    abort();
  grape_trace_t* s = NULL;
  if (grape_trace_load_mem(b2, l2, &s, err, sizeof(err)) != 0)
    abort();
  sink += touch(s);
  grape_trace_free(s);
  grape_trace_free(r);
  free(b1);
  free(b2);
  grape_trace_free(t);
  (void)sink;
  return 0;
}

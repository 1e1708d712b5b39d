/* The in-memory trace: builders, accessors, and the helpers the reader and
 * writer share (see format.h).
 *
 * DESIGN: records are kept in growable arrays in the order they were added
 * (or read), and that order is the file's order, which is what makes writing
 * what was read give the same bytes. A path owns one block holding its ops
 * and their pointer words (and, when built rather than read, the parameter
 * bytes), so a path is one allocation however many ops it has. Builders check
 * every index they are given against what is already there, so a trace built
 * through this API always encodes to a file the reader accepts. */
#include "format.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "util/pattern.h"


int grape__trace_grow(void** v, size_t* cap, size_t len, size_t sz) {
  if (len < *cap)
    return 0;
  size_t ncap = *cap ? *cap * 2 : 16;
  if (ncap > SIZE_MAX / sz)
    return -ENOMEM;
  void* n = realloc(*v, ncap * sz);
  if (n == NULL)
    return -ENOMEM;
  *v = n;
  *cap = ncap;
  return 0;
}

uint64_t grape__trace_checksum(const uint8_t* header16, const uint8_t* payload, size_t len) {
  return XXH3_64bits_withSeed(payload, len, XXH3_64bits(header16, 16));
}

void grape__trace_type_name(uint32_t type, char out[5]) {
  for (int i = 0; i < 4; i++) {
    char c = (char)(type >> (8 * i));
    out[i] = c >= 0x20 && c < 0x7f ? c : '.';
  }
  out[4] = '\0';
}

/* ---- Life cycle and accessors ---- */

int grape_trace_new(grape_trace_t** out) {
  grape_trace_t* t = calloc(1, sizeof(*t));
  if (t == NULL)
    return -ENOMEM;
  t->info.grape_version = t->info.device_name = t->info.program = "";
  *out = t;
  return 0;
}

void grape__trace_path_release(path_t* p) {
  free(p->block);
  free(p->graph_box);
  free(p->times_box);
}

void grape_trace_free(grape_trace_t* t) {
  if (t == NULL)
    return;
  for (int i = 0; i < 3; i++)
    free(t->info_strings[i]);
  for (size_t i = 0; i < t->nimages; i++)
    free(t->images[i].owned);
  for (size_t i = 0; i < t->nfuncs; i++) {
    free(t->funcs[i].name);
    free(t->funcs[i].bodies);
    free(t->funcs[i].params);
  }
  for (size_t i = 0; i < t->npaths; i++)
    grape__trace_path_release(&t->paths[i]);
  free(t->images);
  free(t->funcs);
  free(t->allocs);
  free(t->paths);
  free(t->tl);
  free(t->nvtx);
  if (t->map_is_mmap)
    munmap(t->map, t->map_len);
  else
    free(t->map);
  free(t);
}

const grape_trace_info_t* grape_trace_info(const grape_trace_t* t) {
  return &t->info;
}

size_t grape_trace_image_count(const grape_trace_t* t) {
  return t->nimages;
}

const grape_trace_image_t* grape_trace_image(const grape_trace_t* t, size_t i) {
  return i < t->nimages ? &t->images[i].r : NULL;
}

size_t grape_trace_func_count(const grape_trace_t* t) {
  return t->nfuncs;
}

const grape_trace_func_t* grape_trace_func(const grape_trace_t* t, size_t i) {
  return i < t->nfuncs ? &t->funcs[i].r : NULL;
}

size_t grape_trace_alloc_count(const grape_trace_t* t) {
  return t->nallocs;
}

const grape_trace_alloc_t* grape_trace_alloc(const grape_trace_t* t, size_t i) {
  return i < t->nallocs ? &t->allocs[i] : NULL;
}

size_t grape_trace_path_count(const grape_trace_t* t) {
  return t->npaths;
}

const grape_trace_path_t* grape_trace_path(const grape_trace_t* t, size_t i) {
  return i < t->npaths ? &t->paths[i].r : NULL;
}

/* ---- Builders ---- */

/* A copy of s (NULL -> ""); NULL when out of memory. */
static char* dup_str(const char* s) {
  return strdup(s ? s : "");
}

int grape_trace_set_info(grape_trace_t* t, const grape_trace_info_t* info) {
  char* s[3] = {dup_str(info->grape_version), dup_str(info->device_name), dup_str(info->program)};
  if (!s[0] || !s[1] || !s[2]) {
    for (int i = 0; i < 3; i++)
      free(s[i]);
    return -ENOMEM;
  }
  for (int i = 0; i < 3; i++) {
    free(t->info_strings[i]);
    t->info_strings[i] = s[i];
  }
  t->info = *info;
  t->info.grape_version = s[0];
  t->info.device_name = s[1];
  t->info.program = s[2];
  return 0;
}

int grape_trace_add_image(grape_trace_t* t, uint32_t kind, uint32_t arch, const void* data,
                          uint64_t size, unsigned flags, uint32_t* idx) {
  if ((data == NULL && size) || size > SIZE_MAX)
    return -EINVAL;
  uint64_t h = XXH3_64bits(data, (size_t)size);
  for (size_t i = 0; i < t->nimages; i++) {
    const grape_trace_image_t* r = &t->images[i].r;
    if (r->hash == h && r->size == size && r->kind == kind && r->arch == arch &&
        memcmp(r->data, data, (size_t)size) == 0) {
      *idx = (uint32_t)i;
      return 0;
    }
  }
  if (t->nimages >= GRAPE_TRACE_NONE ||
      grape__trace_grow((void**)&t->images, &t->cap_images, t->nimages, sizeof(*t->images)))
    return -ENOMEM;
  image_t* im = &t->images[t->nimages];
  im->owned = NULL;
  if (!(flags & GRAPE_TRACE_BORROW) && size) {
    im->owned = malloc((size_t)size);
    if (im->owned == NULL)
      return -ENOMEM;
    memcpy(im->owned, data, (size_t)size);
    data = im->owned;
  }
  im->r = (grape_trace_image_t){h, kind, arch, data, size};
  *idx = (uint32_t)t->nimages++;
  return 0;
}

int grape_trace_add_func(grape_trace_t* t, const grape_trace_func_t* f, uint32_t* idx) {
  if (f->image != GRAPE_TRACE_NONE && f->image >= t->nimages)
    return -EINVAL;
  if (f->nparams != GRAPE_TRACE_NONE) {
    if (f->nparams && f->params == NULL)
      return -EINVAL;
    for (uint32_t i = 0; i < f->nparams; i++)
      if ((uint64_t)f->params[i].offset + f->params[i].size > f->param_bytes)
        return -EINVAL;
  }
  if (t->nfuncs >= GRAPE_TRACE_NONE ||
      grape__trace_grow((void**)&t->funcs, &t->cap_funcs, t->nfuncs, sizeof(*t->funcs)))
    return -ENOMEM;
  func_t* d = &t->funcs[t->nfuncs];
  memset(d, 0, sizeof(*d));
  uint32_t n = f->nparams == GRAPE_TRACE_NONE ? 0 : f->nparams;
  d->name = dup_str(f->name);
  d->bodies = dup_str(f->bodies);
  d->params = n ? malloc(n * sizeof(*d->params)) : NULL;
  if (d->name == NULL || d->bodies == NULL || (n && d->params == NULL)) {
    free(d->name);
    free(d->bodies);
    free(d->params);
    return -ENOMEM;
  }
  if (n)
    memcpy(d->params, f->params, n * sizeof(*d->params));
  d->r = *f;
  d->r.name = d->name;
  d->r.bodies = d->bodies;
  d->r.params = d->params;
  *idx = (uint32_t)t->nfuncs++;
  return 0;
}

int grape_trace_add_alloc(grape_trace_t* t, const grape_trace_alloc_t* a, uint32_t* idx) {
  if (a->size == 0)
    return -EINVAL;
  if (t->nallocs >= GRAPE_TRACE_NONE ||
      grape__trace_grow((void**)&t->allocs, &t->cap_allocs, t->nallocs, sizeof(*t->allocs)))
    return -ENOMEM;
  t->allocs[t->nallocs] = *a;
  *idx = (uint32_t)t->nallocs++;
  return 0;
}

/* Checks that op's indices point at what t holds. */
static int op_valid(const grape_trace_t* t, const grape_trace_op_t* op) {
  if (op->kind < GRAPE_TRACE_OP_KERNEL || op->kind > GRAPE_TRACE_OP_MEMCPY)
    return 0;
  if (op->func != GRAPE_TRACE_NONE && (op->kind != GRAPE_TRACE_OP_KERNEL || op->func >= t->nfuncs))
    return 0;
  if ((op->param_bytes && op->params == NULL) || (op->attr_bytes && op->attrs == NULL) ||
      (op->nptrs && op->ptrs == NULL))
    return 0;
  uint64_t prev_end = 0;
  for (uint32_t k = 0; k < op->nptrs; k++) {
    const grape_trace_ptr_t* w = &op->ptrs[k];
    if (w->offset % 8 || (uint64_t)w->offset + 8 > op->param_bytes || w->offset < prev_end ||
        w->alloc >= t->nallocs || w->delta >= t->allocs[w->alloc].size)
      return 0;
    prev_end = (uint64_t)w->offset + 8;
  }
  return 1;
}

int grape__trace_path_copy(path_t* dst, const grape_trace_path_t* src, int copy_bytes) {
  size_t nptr = 0, nbytes = 0;
  for (uint32_t i = 0; i < src->nops; i++) {
    nptr += src->ops[i].nptrs;
    if (copy_bytes)
      nbytes += (size_t)src->ops[i].param_bytes + src->ops[i].attr_bytes;
  }
  size_t ops_sz = (size_t)src->nops * sizeof(grape_trace_op_t);
  size_t ptr_sz = nptr * sizeof(grape_trace_ptr_t);
  uint8_t* block = malloc(ops_sz + ptr_sz + nbytes + 1);
  if (block == NULL)
    return -ENOMEM;
  grape_trace_op_t* ops = (grape_trace_op_t*)(void*)block;
  grape_trace_ptr_t* ptrs = (grape_trace_ptr_t*)(void*)(block + ops_sz);
  uint8_t* bytes = block + ops_sz + ptr_sz;
  for (uint32_t i = 0; i < src->nops; i++) {
    const grape_trace_op_t* s = &src->ops[i];
    ops[i] = *s;
    if (s->nptrs)
      memcpy(ptrs, s->ptrs, s->nptrs * sizeof(*ptrs));
    ops[i].ptrs = ptrs;
    ptrs += s->nptrs;
    if (copy_bytes) {
      if (s->param_bytes)
        memcpy(bytes, s->params, s->param_bytes);
      ops[i].params = bytes;
      bytes += s->param_bytes;
      if (s->attr_bytes)
        memcpy(bytes, s->attrs, s->attr_bytes);
      ops[i].attrs = bytes;
      bytes += s->attr_bytes;
    }
  }
  memset(dst, 0, sizeof(*dst));
  dst->block = block;
  dst->r = *src;
  dst->r.ops = ops;
  dst->r.graph = NULL;
  dst->r.times = NULL;
  return 0;
}

int grape_trace_add_path(grape_trace_t* t, const grape_trace_path_t* p, uint32_t* idx) {
  if (p->nops == 0 || p->ops == NULL || p->count == 0)
    return -EINVAL;
  for (uint32_t i = 0; i < p->nops; i++)
    if (!op_valid(t, &p->ops[i]))
      return -EINVAL;
  if (t->npaths >= GRAPE_TRACE_NONE ||
      grape__trace_grow((void**)&t->paths, &t->cap_paths, t->npaths, sizeof(*t->paths)))
    return -ENOMEM;
  path_t* d = &t->paths[t->npaths];
  int err = grape__trace_path_copy(d, p, 1);
  if (err)
    return err;
  t->npaths++;
  if ((p->graph && (err = grape_trace_set_graph(t, t->npaths - 1, p->graph))) ||
      (p->times && (err = grape_trace_set_times(t, t->npaths - 1, p->times)))) {
    grape__trace_path_release(d);
    t->npaths--;
    return err;
  }
  *idx = (uint32_t)(t->npaths - 1);
  return 0;
}

/* The graph and times records live in boxes of their own (one allocation
 * each), so that they stay put when the path array grows. */

int grape_trace_set_graph(grape_trace_t* t, size_t i, const grape_trace_graph_t* g) {
  if (i >= t->npaths)
    return -EINVAL;
  path_t* p = &t->paths[i];
  grape_trace_graph_t* box = NULL;
  if (g != NULL) {
    const char* why = g->why ? g->why : "";
    size_t n = strlen(why) + 1;
    box = malloc(sizeof(*box) + n);
    if (box == NULL)
      return -ENOMEM;
    *box = *g;
    memcpy(box + 1, why, n);
    box->why = (const char*)(box + 1);
  }
  free(p->graph_box);
  p->graph_box = box;
  p->r.graph = box;
  return 0;
}

int grape_trace_set_times(grape_trace_t* t, size_t i, const grape_trace_times_t* tm) {
  if (i >= t->npaths)
    return -EINVAL;
  path_t* p = &t->paths[i];
  grape_trace_times_t* box = NULL;
  if (tm != NULL) {
    if (!isfinite(tm->path_ms) || (p->r.nops && tm->op_ms == NULL))
      return -EINVAL;
    for (uint32_t k = 0; k < p->r.nops; k++)
      if (!isfinite(tm->op_ms[k]))
        return -EINVAL;
    const char* dev = tm->device ? tm->device : "";
    size_t n = strlen(dev) + 1, ms = (size_t)p->r.nops * sizeof(double);
    box = malloc(sizeof(*box) + ms + n);
    if (box == NULL)
      return -ENOMEM;
    *box = *tm;
    double* op_ms = (double*)(void*)(box + 1);
    memcpy(op_ms, tm->op_ms, ms);
    memcpy((char*)op_ms + ms, dev, n);
    box->op_ms = op_ms;
    box->device = (const char*)op_ms + ms;
  }
  free(p->times_box);
  p->times_box = box;
  p->r.times = box;
  return 0;
}

/* ---- The timeline ---- */

const grape_trace_timeline_t* grape_trace_timeline(const grape_trace_t* t) {
  return t->tl;
}

const char* grape_trace_tl_op_check(const grape_trace_t* t, const grape_trace_tl_op_t* op) {
  if (op->kind < GRAPE_TRACE_OP_KERNEL || op->kind > GRAPE_TRACE_TL_GRAPH)
    return "unknown kind";
  if (op->how < GRAPE_TRACE_TL_EAGER || op->how > GRAPE_TRACE_TL_SUBMIT)
    return "unknown way of running (eager, held, submitted)";
  if (op->kind == GRAPE_TRACE_TL_GRAPH && (op->how == GRAPE_TRACE_TL_HELD ||
                                           (op->how == GRAPE_TRACE_TL_SUBMIT && op->what == 0)))
    return "a graph launch held, or the shim's of no held ops";
  if (op->func != GRAPE_TRACE_NONE &&
      (op->kind != GRAPE_TRACE_OP_KERNEL || op->func >= t->nfuncs || t->funcs[op->func].r.id != op->what))
    return "function index out of range, on an op that is no kernel, or not the op's function";
  if (op->thread == 0)
    return "thread 0 (threads are numbered from 1)";
  if (op->host_end < op->host_start)
    return "the host call ends before it starts";
  if ((op->dev_start == GRAPE_TRACE_TL_UNKNOWN) != (op->dev_end == GRAPE_TRACE_TL_UNKNOWN) ||
      (op->dev_start != GRAPE_TRACE_TL_UNKNOWN && op->dev_end < op->dev_start))
    return "device times: one unknown, or the end before the start";
  if (op->how == GRAPE_TRACE_TL_HELD && op->dev_start != GRAPE_TRACE_TL_UNKNOWN)
    return "a held call with device times (its work runs in a later submission)";
  if (op->how == GRAPE_TRACE_TL_EAGER && op->seq != 0)
    return "an eager call with a held-op number";
  if (op->dir > GRAPE_TRACE_DIR_HTOH || (op->dir != GRAPE_TRACE_DIR_NONE && op->kind != GRAPE_TRACE_OP_MEMCPY))
    return "an unknown copy direction, or a direction on an op that is no copy";
  return NULL;
}

int grape_trace_set_timeline(grape_trace_t* t, const grape_trace_timeline_t* tl) {
  grape_trace_timeline_t* box = NULL;
  if (tl != NULL) {
    if (tl->count && tl->ops == NULL)
      return -EINVAL;
    if (tl->napis && tl->apis == NULL)
      return -EINVAL;
    for (uint32_t i = 0; i < tl->count; i++)
      if (grape_trace_tl_op_check(t, &tl->ops[i]) != NULL ||
          tl->ops[i].api > tl->napis ||
          (i > 0 && tl->ops[i].host_start < tl->ops[i - 1].host_start))
        return -EINVAL;
    /* One allocation: the header, the records, the api name pointers, then
     * the clock's name and the api names. */
    const char* clock = tl->clock ? tl->clock : "";
    size_t n = strlen(clock) + 1, ops = (size_t)tl->count * sizeof(*tl->ops);
    size_t ptrs = (size_t)tl->napis * sizeof(char*);
    for (uint32_t i = 0; i < tl->napis; i++)
      n += strlen(tl->apis[i] ? tl->apis[i] : "") + 1;
    box = malloc(sizeof(*box) + ops + ptrs + n);
    if (box == NULL)
      return -ENOMEM;
    *box = *tl;
    grape_trace_tl_op_t* o = (grape_trace_tl_op_t*)(void*)(box + 1);
    if (ops)
      memcpy(o, tl->ops, ops);
    const char** names = (const char**)(void*)((char*)o + ops);
    char* at = (char*)names + ptrs;
    size_t len = strlen(clock) + 1;
    memcpy(at, clock, len);
    box->clock = at;
    at += len;
    for (uint32_t i = 0; i < tl->napis; i++) {
      const char* a = tl->apis[i] ? tl->apis[i] : "";
      len = strlen(a) + 1;
      memcpy(at, a, len);
      names[i] = at;
      at += len;
    }
    box->ops = o;
    box->apis = tl->napis ? names : NULL;
  }
  free(t->tl);
  t->tl = box;
  if (box == NULL) {   /* the ranges belong to the timeline */
    free(t->nvtx);
    t->nvtx = NULL;
  }
  return 0;
}

/* ---- NVTX ranges ---- */

const grape_trace_nvtx_t* grape_trace_nvtx(const grape_trace_t* t) {
  return t->nvtx;
}

const char* grape__trace_range_check(const grape_trace_nvtx_t* n, uint32_t i) {
  const grape_trace_range_t* r = &n->ranges[i];
  if (r->kind < GRAPE_TRACE_NVTX_PUSH || r->kind > GRAPE_TRACE_NVTX_MARK)
    return "unknown kind (push/pop, start/end, mark)";
  if (r->name >= n->nnames)
    return "name index out of range";
  if (r->thread == 0)
    return "thread 0 (threads are numbered from 1)";
  if (r->parent > i)
    return "enclosing range not an earlier record";
  if (r->end < r->start || (r->kind == GRAPE_TRACE_NVTX_MARK && r->end != r->start))
    return "ends before it starts, or a mark with a length";
  return NULL;
}

int grape_trace_set_nvtx(grape_trace_t* t, const grape_trace_nvtx_t* n) {
  grape_trace_nvtx_t* box = NULL;
  if (n != NULL) {
    if (t->tl == NULL || (n->count && n->ranges == NULL) || (n->nnames && n->names == NULL))
      return -EINVAL;
    for (uint32_t i = 0; i < n->count; i++)
      if (grape__trace_range_check(n, i) != NULL)
        return -EINVAL;
    for (uint32_t i = 0; i < t->tl->count; i++)
      if (t->tl->ops[i].range > n->count)
        return -EINVAL;
    size_t bytes = 0;
    for (uint32_t i = 0; i < n->nnames; i++)
      bytes += strlen(n->names[i] ? n->names[i] : "") + 1;
    size_t ptrs = (size_t)n->nnames * sizeof(char*), recs = (size_t)n->count * sizeof(*n->ranges);
    box = malloc(sizeof(*box) + ptrs + recs + bytes);
    if (box == NULL)
      return -ENOMEM;
    *box = *n;
    const char** names = (const char**)(void*)(box + 1);
    grape_trace_range_t* r = (grape_trace_range_t*)(void*)((char*)names + ptrs);
    char* text = (char*)r + recs;
    if (recs)
      memcpy(r, n->ranges, recs);
    for (uint32_t i = 0; i < n->nnames; i++) {
      const char* s = n->names[i] ? n->names[i] : "";
      size_t len = strlen(s) + 1;
      memcpy(text, s, len);
      names[i] = text;
      text += len;
    }
    box->names = names;
    box->ranges = r;
  } else if (t->tl != NULL) {   /* no ranges: no record names one */
    grape_trace_tl_op_t* o = (grape_trace_tl_op_t*)(uintptr_t)t->tl->ops;
    for (uint32_t i = 0; i < t->tl->count; i++)
      o[i].range = 0;
  }
  free(t->nvtx);
  t->nvtx = box;
  return 0;
}

/* ---- Small helpers ---- */

int grape_trace_expand_path(const char* pattern, long pid, long rank, char* out, size_t cap) {
  return grape__pattern_expand(pattern, pid, &rank, out, cap);
}

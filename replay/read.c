/* The validating trace reader (format.h, docs/trace-format.md).
 *
 * DESIGN: one pass over the sections, in file order. Each section's header is
 * checked (room for it, a length inside the file, the checksum) before its
 * payload is parsed by a cursor that checks every field against the bytes left
 * in the payload; counts are checked against those bytes before anything is
 * allocated, so memory stays within a small multiple of the file's size. The
 * fixed section order lets every index be checked when it is read: it can
 * only point at records already read. Image bytes and parameter bytes are not
 * copied: the trace points into the mapped file. Every failure stops the read
 * with one message naming the section, its ordinal and byte offset, and the
 * offset of the field that was wrong. The fuzz target is built with
 * GRAPE_TRACE_FUZZING, which skips the checksum and image hash checks: with
 * them, every mutation would stop there and the parser behind them would
 * never be reached. */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

typedef struct rd_s {
  const uint8_t* base;         /* the whole file */
  size_t size;
  const uint8_t* p;            /* cursor in the current payload */
  const uint8_t* end;
  char sec[5];                 /* the current section's type */
  size_t sec_off, sec_no;
  char* err;
  size_t errlen;
} rd_t;

__attribute__((format(printf, 2, 3)))
static int fail(rd_t* r, const char* fmt, ...) {
  if (r->err == NULL || r->errlen == 0)
    return -EINVAL;
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  if (r->sec[0])
    snprintf(r->err, r->errlen, "section '%s' (#%zu) at byte %zu: %s (at byte %zu)", r->sec,
             r->sec_no, r->sec_off, msg, (size_t)(r->p - r->base));
  else
    snprintf(r->err, r->errlen, "%s (at byte %zu)", msg, (size_t)(r->p - r->base));
  return -EINVAL;
}

static size_t left(const rd_t* r) {
  return (size_t)(r->end - r->p);
}

/* The field readers set *bad and read zero when the payload ends. */
#define NEED(r, n, what)                                                                     \
  do {                                                                                       \
    if (left(r) < (size_t)(n))                                                               \
      return fail(r, "%s needs %zu bytes, %zu left in the section", what, (size_t)(n), left(r)); \
  } while (0)

static int rd32(rd_t* r, uint32_t* v, const char* what) {
  NEED(r, 4, what);
  *v = get_u32(r->p);
  r->p += 4;
  return 0;
}

static int rd64(rd_t* r, uint64_t* v, const char* what) {
  NEED(r, 8, what);
  *v = get_u64(r->p);
  r->p += 8;
  return 0;
}

static int rdf64(rd_t* r, double* v, const char* what) {
  uint64_t b;
  int e = rd64(r, &b, what);
  if (e)
    return e;
  *v = bits_f64(b);
  if (!isfinite(*v))
    return fail(r, "%s is not a finite number", what);
  return 0;
}

/* A string: u32 length + bytes without NUL, copied into *out (malloc'd). */
static int rdstr(rd_t* r, char** out, const char* what) {
  uint32_t n;
  int e = rd32(r, &n, what);
  if (e)
    return e;
  NEED(r, n, what);
  if (memchr(r->p, '\0', n) != NULL)
    return fail(r, "%s holds a NUL byte", what);
  char* s = malloc((size_t)n + 1);
  if (s == NULL)
    return -ENOMEM;
  memcpy(s, r->p, n);
  s[n] = '\0';
  r->p += n;
  *out = s;
  return 0;
}

#define TRY(call)        \
  do {                   \
    int e_ = (call);     \
    if (e_)              \
      return e_;         \
  } while (0)

/* A record count, checked against the bytes left: each record takes at least
 * rec bytes, so a count that cannot fit is refused before anything is
 * allocated for it. */
static int rd_count(rd_t* r, uint32_t* n, size_t rec, const char* what) {
  TRY(rd32(r, n, what));
  if (*n > left(r) / rec)
    return fail(r, "%u %s do not fit in the %zu bytes left", *n, what, left(r));
  return 0;
}

/* ---- Sections ---- */

static int read_head(rd_t* r, grape_trace_t* t) {
  grape_trace_info_t* in = &t->info;
  uint32_t u;
  uint64_t v;
  TRY(rdstr(r, &t->info_strings[0], "grape version"));
  TRY(rdstr(r, &t->info_strings[1], "device name"));
  TRY(rd32(r, &in->cc_major, "compute capability"));
  TRY(rd32(r, &in->cc_minor, "compute capability"));
  TRY(rd32(r, &u, "driver version"));
  in->driver_version = (int32_t)u;
  TRY(rd64(r, &in->created_ns, "creation time"));
  TRY(rd64(r, &v, "process id"));
  in->pid = (int64_t)v;
  TRY(rd32(r, &u, "rank"));
  in->rank = (int32_t)u;
  TRY(rdstr(r, &t->info_strings[2], "program"));
  TRY(rd64(r, &in->regions, "region count"));
  TRY(rd64(r, &in->ops, "op count"));
  TRY(rd64(r, &in->paths_omitted, "omitted path count"));
  TRY(rd64(r, &in->images_omitted, "omitted image count"));
  in->grape_version = t->info_strings[0];
  in->device_name = t->info_strings[1];
  in->program = t->info_strings[2];
  return 0;
}

static int read_image(rd_t* r, grape_trace_t* t) {
  uint64_t hash, size;
  uint32_t kind, arch;
  TRY(rd64(r, &hash, "image hash"));
  TRY(rd32(r, &kind, "image kind"));
  TRY(rd32(r, &arch, "image arch"));
  TRY(rd64(r, &size, "image size"));
  if (kind != GRAPE_TRACE_IMAGE_PTX && kind != GRAPE_TRACE_IMAGE_ELF)
    return fail(r, "unknown image kind %u", kind);
  if (size != left(r))
    return fail(r, "image size %llu, but %zu bytes follow", (unsigned long long)size, left(r));
#ifndef GRAPE_TRACE_FUZZING
  if (XXH3_64bits(r->p, (size_t)size) != hash)
    return fail(r, "image hash does not match its bytes");
#endif
  if (t->nimages >= GRAPE_TRACE_NONE ||
      grape__trace_grow((void**)&t->images, &t->cap_images, t->nimages, sizeof(*t->images)))
    return -ENOMEM;
  t->images[t->nimages++] = (image_t){{hash, kind, arch, r->p, size}, NULL};
  r->p += size;
  return 0;
}

static int read_func(rd_t* r, grape_trace_t* t, func_t* f) {
  grape_trace_func_t* d = &f->r;
  uint32_t u;
  TRY(rd64(r, &d->id, "function id"));
  TRY(rd32(r, &d->image, "image index"));
  if (d->image != GRAPE_TRACE_NONE && d->image >= t->nimages)
    return fail(r, "image index %u out of range (%zu images)", d->image, t->nimages);
  TRY(rd32(r, &u, "registers"));
  d->registers = (int32_t)u;
  TRY(rd32(r, &d->static_smem, "static shared memory"));
  TRY(rd32(r, &u, "max threads"));
  d->max_threads = (int32_t)u;
  TRY(rd32(r, &d->param_bytes, "parameter block size"));
  TRY(rd32(r, &d->nparams, "parameter count"));
  if (d->nparams != GRAPE_TRACE_NONE) {
    if (d->nparams > left(r) / REC_PARAM)
      return fail(r, "%u parameters do not fit in the %zu bytes left", d->nparams, left(r));
    f->params = d->nparams ? malloc(d->nparams * sizeof(*f->params)) : NULL;
    if (d->nparams && f->params == NULL)
      return -ENOMEM;
    for (uint32_t k = 0; k < d->nparams; k++) {
      TRY(rd32(r, &f->params[k].offset, "parameter offset"));
      TRY(rd32(r, &f->params[k].size, "parameter size"));
      if ((uint64_t)f->params[k].offset + f->params[k].size > d->param_bytes)
        return fail(r, "parameter %u (offset %u, size %u) lies outside the %u-byte block", k,
                    f->params[k].offset, f->params[k].size, d->param_bytes);
    }
  }
  TRY(rdstr(r, &f->name, "function name"));
  TRY(rdstr(r, &f->bodies, "body object"));
  d->params = f->params;
  d->name = f->name;
  d->bodies = f->bodies;
  return 0;
}

static int read_funcs(rd_t* r, grape_trace_t* t) {
  uint32_t n;
  TRY(rd_count(r, &n, REC_FUNC, "functions"));
  t->funcs = calloc(n ? n : 1, sizeof(*t->funcs));
  if (t->funcs == NULL)
    return -ENOMEM;
  t->cap_funcs = n ? n : 1;
  for (uint32_t i = 0; i < n; i++) {
    t->nfuncs++;   /* counted first, so that grape_trace_free frees a half-read one */
    TRY(read_func(r, t, &t->funcs[i]));
  }
  return 0;
}

static int read_allocs(rd_t* r, grape_trace_t* t) {
  uint32_t n;
  TRY(rd_count(r, &n, REC_ALLOC, "allocations"));
  t->allocs = malloc((n ? n : 1) * sizeof(*t->allocs));
  if (t->allocs == NULL)
    return -ENOMEM;
  t->cap_allocs = n ? n : 1;
  for (uint32_t i = 0; i < n; i++) {
    grape_trace_alloc_t* a = &t->allocs[i];
    uint32_t pad;
    TRY(rd64(r, &a->id, "allocation id"));
    TRY(rd64(r, &a->base, "allocation base"));
    TRY(rd64(r, &a->size, "allocation size"));
    TRY(rd32(r, &a->kind, "allocation kind"));
    TRY(rd32(r, &pad, "allocation padding"));
    if (a->size == 0 || a->kind < GRAPE_TRACE_ALLOC_DEVICE ||
        a->kind > GRAPE_TRACE_ALLOC_HOST_REGISTERED || pad != 0)
      return fail(r, "allocation %u: size %llu, kind %u, padding %u", i,
                  (unsigned long long)a->size, a->kind, pad);
    t->nallocs++;
  }
  return 0;
}

/* The fixed part of one op (REC_OP bytes). */
static int read_op_fixed(rd_t* r, grape_trace_op_t* op) {
  TRY(rd32(r, &op->kind, "op kind"));
  TRY(rd32(r, &op->func, "function index"));
  TRY(rd64(r, &op->sig_func, "op signature"));
  for (int d = 0; d < 3; d++)
    TRY(rd32(r, &op->grid[d], "grid"));
  for (int d = 0; d < 3; d++)
    TRY(rd32(r, &op->block[d], "block"));
  TRY(rd32(r, &op->shmem, "shared memory"));
  TRY(rd32(r, &op->flags, "op flags"));
  TRY(rd64(r, &op->attrs_hash, "attribute hash"));
  TRY(rd32(r, &op->param_bytes, "parameter bytes"));
  TRY(rd32(r, &op->attr_bytes, "attribute bytes"));
  TRY(rd32(r, &op->nptrs, "pointer count"));
  return 0;
}

static int check_op(rd_t* r, const grape_trace_t* t, uint32_t i, const grape_trace_op_t* op) {
  if (op->kind < GRAPE_TRACE_OP_KERNEL || op->kind > GRAPE_TRACE_OP_MEMCPY)
    return fail(r, "op %u: unknown kind %u", i, op->kind);
  if (op->func != GRAPE_TRACE_NONE) {
    if (op->kind != GRAPE_TRACE_OP_KERNEL)
      return fail(r, "op %u: a memset or copy names function %u", i, op->func);
    if (op->func >= t->nfuncs)
      return fail(r, "op %u: function index %u out of range (%zu functions)", i, op->func,
                  t->nfuncs);
    if (t->funcs[op->func].r.id != op->sig_func)
      return fail(r, "op %u: its signature names another function than function %u", i, op->func);
  }
  return 0;
}

static int read_ptrs(rd_t* r, const grape_trace_t* t, uint32_t i, grape_trace_op_t* op,
                     grape_trace_ptr_t* w) {
  uint64_t prev_end = 0;
  for (uint32_t k = 0; k < op->nptrs; k++) {
    TRY(rd32(r, &w[k].offset, "pointer offset"));
    TRY(rd32(r, &w[k].alloc, "pointer allocation"));
    TRY(rd64(r, &w[k].delta, "pointer delta"));
    if (w[k].offset % 8 || (uint64_t)w[k].offset + 8 > op->param_bytes || w[k].offset < prev_end)
      return fail(r, "op %u: pointer word at offset %u is unaligned, out of order or outside the "
                  "%u-byte parameter block", i, w[k].offset, op->param_bytes);
    if (w[k].alloc >= t->nallocs)
      return fail(r, "op %u: allocation index %u out of range (%zu allocations)", i, w[k].alloc,
                  t->nallocs);
    if (w[k].delta >= t->allocs[w[k].alloc].size)
      return fail(r, "op %u: pointer offset %llu is past the end of allocation %u", i,
                  (unsigned long long)w[k].delta, w[k].alloc);
    prev_end = (uint64_t)w[k].offset + 8;
  }
  op->ptrs = w;
  return 0;
}

static int read_path(rd_t* r, grape_trace_t* t) {
  grape_trace_path_t p = {0};
  TRY(rd64(r, &p.fp, "fingerprint"));
  TRY(rd64(r, &p.count, "occurrence count"));
  TRY(rd32(r, &p.nops, "op count"));
  if (p.count == 0 || p.nops == 0)
    return fail(r, "a path with %llu occurrences and %u ops", (unsigned long long)p.count, p.nops);
  if (p.nops > left(r) / REC_OP)
    return fail(r, "%u ops do not fit in the %zu bytes left", p.nops, left(r));
  /* Pass 1: lengths only, to size the block. */
  const uint8_t* start = r->p;
  size_t nptr = 0;
  for (uint32_t i = 0; i < p.nops; i++) {
    grape_trace_op_t op;
    TRY(read_op_fixed(r, &op));
    uint64_t var = (uint64_t)op.param_bytes + op.attr_bytes + (uint64_t)op.nptrs * REC_PTR;
    if (var > left(r))
      return fail(r, "op %u: %u parameter bytes, %u attribute bytes and %u pointers do not fit "
                  "in the %zu bytes left", i, op.param_bytes, op.attr_bytes, op.nptrs, left(r));
    r->p += var;
    nptr += op.nptrs;
  }
  if (t->npaths >= GRAPE_TRACE_NONE ||
      grape__trace_grow((void**)&t->paths, &t->cap_paths, t->npaths, sizeof(*t->paths)))
    return -ENOMEM;
  path_t* d = &t->paths[t->npaths];
  memset(d, 0, sizeof(*d));
  size_t ops_sz = (size_t)p.nops * sizeof(grape_trace_op_t);
  d->block = malloc(ops_sz + nptr * sizeof(grape_trace_ptr_t) + 1);
  if (d->block == NULL)
    return -ENOMEM;
  t->npaths++;
  grape_trace_op_t* ops = d->block;
  grape_trace_ptr_t* w = (grape_trace_ptr_t*)(void*)((uint8_t*)d->block + ops_sz);
  /* Pass 2: the values, checked. */
  r->p = start;
  for (uint32_t i = 0; i < p.nops; i++) {
    grape_trace_op_t* op = &ops[i];
    TRY(read_op_fixed(r, op));
    TRY(check_op(r, t, i, op));
    op->params = r->p;
    r->p += op->param_bytes;
    op->attrs = r->p;
    r->p += op->attr_bytes;
    TRY(read_ptrs(r, t, i, op, w));
    w += op->nptrs;
  }
  p.ops = ops;
  d->r = p;
  return 0;
}

/* Reads the index of a GRPH/TIME record; they name paths in increasing order. */
static int rd_path_index(rd_t* r, const grape_trace_t* t, long* prev, uint32_t* i) {
  TRY(rd32(r, i, "path index"));
  if (*i >= t->npaths || (long)*i <= *prev)
    return fail(r, "path index %u out of range or out of order (%zu paths)", *i, t->npaths);
  *prev = (long)*i;
  return 0;
}

static int read_graphs(rd_t* r, grape_trace_t* t) {
  uint32_t n;
  long prev = -1;
  TRY(rd_count(r, &n, REC_GRAPH, "graph records"));
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i;
    grape_trace_graph_t g;
    char* why = NULL;
    TRY(rd_path_index(r, t, &prev, &i));
    TRY(rd32(r, &g.built, "graph built"));
    TRY(rd32(r, &g.ran_graph, "graph ran"));
    TRY(rd64(r, &g.hits, "graph hits"));
    if (g.built > 1 || g.ran_graph > 1)
      return fail(r, "graph flags %u/%u are not 0 or 1", g.built, g.ran_graph);
    TRY(rdstr(r, &why, "reason"));
    g.why = why;
    int e = grape_trace_set_graph(t, i, &g);
    free(why);
    if (e)
      return e;
  }
  return 0;
}

static int read_times(rd_t* r, grape_trace_t* t) {
  uint32_t n;
  long prev = -1;
  TRY(rd_count(r, &n, REC_TIMES, "time records"));
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i, nops;
    grape_trace_times_t tm;
    TRY(rd_path_index(r, t, &prev, &i));
    TRY(rd32(r, &tm.iters, "iterations"));
    TRY(rdf64(r, &tm.path_ms, "path time"));
    TRY(rd32(r, &nops, "op count"));
    if (nops != t->paths[i].r.nops)
      return fail(r, "times for %u ops of a path of %u", nops, t->paths[i].r.nops);
    NEED(r, (size_t)nops * 8, "op times");
    double* ms = malloc((nops ? nops : 1) * sizeof(*ms));
    char* dev = NULL;
    if (ms == NULL)
      return -ENOMEM;
    int e = 0;
    for (uint32_t j = 0; j < nops && e == 0; j++)
      e = rdf64(r, &ms[j], "op time");
    if (e == 0)
      e = rdstr(r, &dev, "device");
    if (e == 0) {
      tm.op_ms = ms;
      tm.device = dev;
      e = grape_trace_set_times(t, i, &tm);
    }
    free(ms);
    free(dev);
    if (e)
      return e;
  }
  return 0;
}

static int read_timeline(rd_t* r, grape_trace_t* t) {
  grape_trace_timeline_t tl;
  tl.napis = 0;   /* named by the TLAR section, if any */
  tl.apis = NULL;
  char* clock = NULL;
  TRY(rdstr(r, &clock, "clock name"));
  int e = rd64(r, &tl.origin_ns, "origin");
  if (e == 0)
    e = rd64(r, &tl.dropped, "dropped ops");
  if (e == 0)
    e = rd_count(r, &tl.count, REC_TL_OP, "timeline records");
  grape_trace_tl_op_t* ops = e == 0 ? malloc(((size_t)tl.count + 1) * sizeof(*ops)) : NULL;
  if (e == 0 && ops == NULL)
    e = -ENOMEM;
  for (uint32_t i = 0; i < tl.count && e == 0; i++) {
    grape_trace_tl_op_t* op = &ops[i];
    const uint8_t* at = r->p;
    op->kind = get_u32(at);
    op->how = get_u32(at + 4);
    op->func = get_u32(at + 8);
    op->thread = get_u32(at + 12);
    op->stream = get_u64(at + 16);
    op->what = get_u64(at + 24);
    op->host_start = get_u64(at + 32);
    op->host_end = get_u64(at + 40);
    op->dev_start = get_u64(at + 48);
    op->dev_end = get_u64(at + 56);
    op->seq = get_u64(at + 64);
    op->range = 0;   /* named by the NVTX section, if any */
    op->api = 0;   /* and by the TLAR section, if any: */
    op->dir = GRAPE_TRACE_DIR_NONE;
    memset(op->grid, 0, sizeof(op->grid));
    memset(op->block, 0, sizeof(op->block));
    op->shmem = 0;
    const char* why = grape_trace_tl_op_check(t, op);
    if (why != NULL)
      e = fail(r, "timeline record %u: %s", i, why);
    else if (i > 0 && op->host_start < ops[i - 1].host_start)
      e = fail(r, "timeline record %u starts before record %u: records go by host start", i, i - 1);
    else
      r->p += REC_TL_OP;
  }
  if (e == 0) {
    tl.clock = clock;
    tl.ops = ops;
    e = grape_trace_set_timeline(t, &tl);
  }
  free(ops);
  free(clock);
  return e;
}

/* The TLAR section: the entry points the timeline's calls name, and each
 * record's entry point, copy direction and launch shape. */
static int read_tl_args(rd_t* r, grape_trace_t* t) {
  const grape_trace_timeline_t* old = t->tl;
  grape_trace_timeline_t tl = *old;
  char** names = NULL;
  grape_trace_tl_op_t* ops = NULL;
  uint32_t nops = 0;
  int e = rd_count(r, &tl.napis, 4, "timeline entry points");
  if (e == 0 && (names = calloc((size_t)tl.napis + 1, sizeof(*names))) == NULL)
    e = -ENOMEM;
  for (uint32_t i = 0; i < tl.napis && e == 0; i++)
    e = rdstr(r, &names[i], "entry point name");
  if (e == 0)
    e = rd_count(r, &nops, REC_TL_ARGS, "timeline records' arguments");
  if (e == 0 && nops != old->count)
    e = fail(r, "arguments of %u timeline records, the timeline has %u", nops, old->count);
  if (e == 0 && (ops = malloc(((size_t)nops + 1) * sizeof(*ops))) == NULL)
    e = -ENOMEM;
  for (uint32_t i = 0; i < nops && e == 0; i++) {
    const uint8_t* at = r->p;
    ops[i] = old->ops[i];
    ops[i].api = get_u32(at);
    ops[i].dir = get_u32(at + 4);
    for (int k = 0; k < 3; k++) {
      ops[i].grid[k] = get_u32(at + 8 + 4 * k);
      ops[i].block[k] = get_u32(at + 20 + 4 * k);
    }
    ops[i].shmem = get_u32(at + 32);
    const char* why = grape_trace_tl_op_check(t, &ops[i]);
    if (why != NULL)
      e = fail(r, "timeline record %u: %s", i, why);
    else if (ops[i].api > tl.napis)
      e = fail(r, "timeline record %u: entry point %u of %u", i, ops[i].api, tl.napis);
    else
      r->p += REC_TL_ARGS;
  }
  if (e == 0) {
    tl.ops = ops;
    tl.apis = (const char* const*)names;
    e = grape_trace_set_timeline(t, &tl);
  }
  for (uint32_t i = 0; names != NULL && i < tl.napis; i++)
    free(names[i]);
  free(names);
  free(ops);
  return e;
}

/* The NVTX section: names, range records, and each timeline record's range. */
static int read_nvtx(rd_t* r, grape_trace_t* t) {
  if (t->tl == NULL)
    return fail(r, "NVTX ranges without a timeline");
  grape_trace_nvtx_t n = {0, NULL, 0, NULL, 0};
  char** names = NULL;
  grape_trace_range_t* rs = NULL;
  uint32_t* of_op = NULL;
  int e = rd_count(r, &n.nnames, 4, "NVTX names");
  if (e == 0 && (names = calloc((size_t)n.nnames + 1, sizeof(*names))) == NULL)
    e = -ENOMEM;
  for (uint32_t i = 0; i < n.nnames && e == 0; i++)
    e = rdstr(r, &names[i], "NVTX name");
  if (e == 0)
    e = rd_count(r, &n.count, REC_NVTX_RANGE, "NVTX records");
  if (e == 0 && (rs = malloc(((size_t)n.count + 1) * sizeof(*rs))) == NULL)
    e = -ENOMEM;
  n.names = (const char* const*)names;
  n.ranges = rs;
  for (uint32_t i = 0; i < n.count && e == 0; i++) {
    const uint8_t* at = r->p;
    rs[i] = (grape_trace_range_t){get_u32(at), get_u32(at + 4), get_u32(at + 8), get_u32(at + 12),
                                  get_u64(at + 16), get_u64(at + 24)};
    const char* why = grape__trace_range_check(&n, i);
    if (why != NULL)
      e = fail(r, "NVTX record %u: %s", i, why);
    else
      r->p += REC_NVTX_RANGE;
  }
  uint32_t nops = 0;
  if (e == 0)
    e = rd64(r, &n.dropped, "NVTX records left out");
  if (e == 0)
    e = rd_count(r, &nops, 4, "timeline records' ranges");
  if (e == 0 && nops != t->tl->count)
    e = fail(r, "ranges of %u timeline records, the timeline has %u", nops, t->tl->count);
  if (e == 0 && (of_op = malloc(((size_t)nops + 1) * sizeof(*of_op))) == NULL)
    e = -ENOMEM;
  for (uint32_t i = 0; i < nops && e == 0; i++) {
    of_op[i] = get_u32(r->p);
    if (of_op[i] > n.count)
      e = fail(r, "timeline record %u: range %u of %u", i, of_op[i], n.count);
    else
      r->p += 4;
  }
  if (e == 0) {
    grape_trace_tl_op_t* ops = (grape_trace_tl_op_t*)(uintptr_t)t->tl->ops;
    for (uint32_t i = 0; i < nops; i++)
      ops[i].range = of_op[i];
    e = grape_trace_set_nvtx(t, &n);
  }
  for (uint32_t i = 0; names != NULL && i < n.nnames; i++)
    free(names[i]);
  free(names);
  free(rs);
  free(of_op);
  return e;
}

/* ---- The file ---- */

/* Order of the known sections: each may follow only those of a lower stage. */
enum { ST_NONE, ST_HEAD, ST_FUNC, ST_ALOC, ST_PATH, ST_GRPH, ST_TIME, ST_TLIN, ST_TLAR, ST_NVTX, ST_END };

static int parse(rd_t* r, grape_trace_t* t) {
  r->p = r->base;
  r->end = r->base + r->size;
  if (r->size < TRACE_FILE_HEADER)
    return fail(r, "truncated: %zu bytes, a trace starts with a %u-byte header", r->size,
                TRACE_FILE_HEADER);
  if (memcmp(r->base, TRACE_MAGIC, 8) != 0)
    return fail(r, "not a grape trace (no \"%s\" magic)", TRACE_MAGIC);
  uint32_t version = get_u32(r->base + 8), flags = get_u32(r->base + 12);
  if (version > GRAPE_TRACE_FORMAT_VERSION)
    return fail(r, "trace format version %u is newer than this grape reads (version %u): "
                "read it with a newer grape", version, GRAPE_TRACE_FORMAT_VERSION);
  if (version == 0 || flags != 0)
    return fail(r, "bad header: format version %u, flags %#x", version, flags);
  size_t off = TRACE_FILE_HEADER;
  int stage = ST_NONE;
  for (size_t no = 0;; no++) {
    r->sec[0] = '\0';
    r->p = r->base + off;
    if (r->size - off < TRACE_SECTION_HEADER) {
      if (r->size == off)
        return fail(r, "truncated: the file ends without an END section");
      return fail(r, "truncated: %zu bytes where a %u-byte section header should be",
                  r->size - off, TRACE_SECTION_HEADER);
    }
    const uint8_t* h = r->base + off;
    uint32_t type = get_u32(h), sflags = get_u32(h + 4);
    uint64_t len = get_u64(h + 8);
    grape__trace_type_name(type, r->sec);
    r->sec_off = off;
    r->sec_no = no;
    if (len > r->size - off - TRACE_SECTION_HEADER)
      return fail(r, "length %llu runs past the end of the file (%zu bytes left): truncated or "
                  "damaged", (unsigned long long)len, r->size - off - TRACE_SECTION_HEADER);
    const uint8_t* payload = h + TRACE_SECTION_HEADER;
#ifndef GRAPE_TRACE_FUZZING
    if (grape__trace_checksum(h, payload, (size_t)len) != get_u64(h + 16))
      return fail(r, "checksum mismatch: the section is damaged");
#endif
    r->p = payload;
    r->end = payload + len;
    int next, e = 0;
    switch (type) {
    case SEC_HEAD: next = stage == ST_NONE ? ST_HEAD : -1; break;
    case SEC_IMAG: next = stage == ST_HEAD ? ST_HEAD : -1; break;
    case SEC_FUNC: next = stage == ST_HEAD ? ST_FUNC : -1; break;
    case SEC_ALOC: next = stage == ST_FUNC ? ST_ALOC : -1; break;
    case SEC_PATH: next = stage == ST_ALOC || stage == ST_PATH ? ST_PATH : -1; break;
    case SEC_GRPH: next = stage == ST_ALOC || stage == ST_PATH ? ST_GRPH : -1; break;
    case SEC_TIME: next = stage >= ST_ALOC && stage <= ST_GRPH ? ST_TIME : -1; break;
    case SEC_TLIN: next = stage >= ST_ALOC && stage <= ST_TIME ? ST_TLIN : -1; break;
    case SEC_TLAR: next = stage == ST_TLIN ? ST_TLAR : -1; break;
    case SEC_NVTX: next = stage == ST_TLIN || stage == ST_TLAR ? ST_NVTX : -1; break;
    case SEC_END: next = stage >= ST_ALOC ? ST_END : -1; break;
    default:
      if (stage == ST_NONE)
        return fail(r, "the first section must be HEAD");
      if (sflags & SEC_REQUIRED)
        return fail(r, "unknown section marked required: written by a newer grape");
      off += TRACE_SECTION_HEADER + (size_t)len;   /* skipped: forward compatible */
      continue;
    }
    if (next < 0)
      return fail(r, stage == ST_NONE ? "the first section must be HEAD"
                                      : "section out of order (HEAD, IMAG..., FUNC, ALOC, "
                                        "PATH..., GRPH, TIME, TLIN, TLAR, NVTX, END)");
    stage = next;
    switch (type) {
    case SEC_HEAD: e = read_head(r, t); break;
    case SEC_IMAG: e = read_image(r, t); break;
    case SEC_FUNC: e = read_funcs(r, t); break;
    case SEC_ALOC: e = read_allocs(r, t); break;
    case SEC_PATH: e = read_path(r, t); break;
    case SEC_GRPH: e = read_graphs(r, t); break;
    case SEC_TIME: e = read_times(r, t); break;
    case SEC_TLIN: e = read_timeline(r, t); break;
    case SEC_TLAR: e = read_tl_args(r, t); break;
    case SEC_NVTX: e = read_nvtx(r, t); break;
    default: break;
    }
    if (e == -ENOMEM)
      return fail(r, "out of memory");
    if (e)
      return e;
    if (r->p != r->end)
      return fail(r, "%zu bytes left over at the end of the section", left(r));
    off += TRACE_SECTION_HEADER + (size_t)len;
    if (type == SEC_END) {
      if (off != r->size) {
        r->sec[0] = '\0';
        r->p = r->base + off;
        return fail(r, "%zu bytes after the END section", r->size - off);
      }
      return 0;
    }
  }
}

int grape_trace_load_mem(const void* data, size_t size, grape_trace_t** out, char* err,
                         size_t errlen) {
  grape_trace_t* t;
  if (grape_trace_new(&t))
    return -ENOMEM;
  rd_t r = {.base = data, .size = size, .err = err, .errlen = errlen};
  if (data == NULL)
    r.base = (const uint8_t*)"", r.size = 0;
  int e = parse(&r, t);
  if (e) {
    grape_trace_free(t);
    return e;
  }
  *out = t;
  return 0;
}

/* Reads a file that cannot be mapped (a pipe) into memory. */
static int slurp(int fd, uint8_t** buf, size_t* len) {
  size_t cap = 1 << 16, n = 0;
  uint8_t* b = malloc(cap);
  if (b == NULL)
    return -ENOMEM;
  for (;;) {
    if (n == cap) {
      uint8_t* nb = cap < SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
      if (nb == NULL) {
        free(b);
        return -ENOMEM;
      }
      b = nb;
      cap *= 2;
    }
    ssize_t k = read(fd, b + n, cap - n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0) {
      int e = -errno;
      free(b);
      return e;
    }
    if (k == 0)
      break;
    n += (size_t)k;
  }
  *buf = b;
  *len = n;
  return 0;
}

int grape_trace_load(const char* path, grape_trace_t** out, char* err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = -errno;
    if (err && errlen)
      snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return e;
  }
  struct stat st;
  void* map = NULL;
  size_t len = 0;
  int is_mmap = 0, e = 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    len = (size_t)st.st_size;
    map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED)
      map = NULL;
    else
      is_mmap = 1;
  }
  if (map == NULL)
    e = slurp(fd, (uint8_t**)&map, &len);
  close(fd);
  if (e) {
    if (err && errlen)
      snprintf(err, errlen, "%s: %s", path, strerror(-e));
    return e;
  }
  char msg[400] = "";
  grape_trace_t* t;
  e = grape_trace_load_mem(map, len, &t, msg, sizeof(msg));
  if (e) {
    if (err && errlen)
      snprintf(err, errlen, "%s: %s", path, msg);
    if (is_mmap)
      munmap(map, len);
    else
      free(map);
    return e;
  }
  t->map = map;
  t->map_len = len;
  t->map_is_mmap = is_mmap;
  *out = t;
  return 0;
}

/* The trace writer: encodes a grape_trace_t into the file format (format.h)
 * and saves it through a temporary file renamed into place.
 *
 * DESIGN: encoding is two steps. A plan decides what goes in: everything,
 * or, under a size limit, paths in the trace's order (the shim adds them most
 * frequent first) for as long as each fits together with the images it needs
 * that are not in yet; the rest is counted in the header. Then the bytes are
 * written into one buffer sized exactly from the plan, so a failure can only
 * happen before anything reaches the disk. The output is a pure function of
 * the trace, which is what makes write -> read -> write give identical
 * bytes. */
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/write_all.h"

typedef struct plan_s {
  uint8_t* path_kept;          /* per path */
  uint32_t* image_map;         /* per image: index in the file, or NONE */
  uint64_t paths_kept, images_kept;
  uint64_t ngraph, ntimes;     /* kept paths with each optional record */
} plan_t;

/* ---- Sizes ---- */

static uint64_t str_size(const char* s) {
  return 4 + (uint64_t)strlen(s);
}

static uint64_t head_size(const grape_trace_info_t* in) {
  return str_size(in->grape_version) + str_size(in->device_name) + 4 + 4 + 4 + 8 + 8 + 4 +
         str_size(in->program) + 8 * 4;
}

static uint64_t func_section_size(const grape_trace_t* t) {
  uint64_t n = 4;
  for (size_t i = 0; i < t->nfuncs; i++) {
    const grape_trace_func_t* f = &t->funcs[i].r;
    n += REC_FUNC + strlen(f->name) + strlen(f->bodies) +
         (f->nparams == GRAPE_TRACE_NONE ? 0 : (uint64_t)f->nparams * REC_PARAM);
  }
  return n;
}

static uint64_t path_size(const grape_trace_path_t* p) {
  uint64_t n = REC_PATH;
  for (uint32_t i = 0; i < p->nops; i++)
    n += REC_OP + (uint64_t)p->ops[i].param_bytes + p->ops[i].attr_bytes +
         (uint64_t)p->ops[i].nptrs * REC_PTR;
  return n;
}

/* The timeline section, header included (0 when there is none). */
static uint64_t timeline_size(const grape_trace_t* t) {
  if (t->tl == NULL)
    return 0;
  uint64_t n = TRACE_SECTION_HEADER + REC_TL_HEAD + strlen(t->tl->clock) +
               (uint64_t)t->tl->count * REC_TL_OP;
  n += TRACE_SECTION_HEADER + 4 + 4 + (uint64_t)t->tl->count * REC_TL_ARGS;   /* TLAR */
  for (uint32_t i = 0; i < t->tl->napis; i++)
    n += 4 + strlen(t->tl->apis[i]);
  if (t->nvtx != NULL) {   /* the NVTX section goes with it */
    n += TRACE_SECTION_HEADER + 4 + 4 + 8 + 4 + (uint64_t)t->nvtx->count * REC_NVTX_RANGE +
         4 * (uint64_t)t->tl->count;
    for (uint32_t i = 0; i < t->nvtx->nnames; i++)
      n += 4 + strlen(t->nvtx->names[i]);
  }
  return n;
}

static uint64_t graph_rec_size(const grape_trace_path_t* p) {
  return p->graph ? REC_GRAPH + strlen(p->graph->why) : 0;
}

static uint64_t times_rec_size(const grape_trace_path_t* p) {
  return p->times ? REC_TIMES + 8 * (uint64_t)p->nops + strlen(p->times->device) : 0;
}

/* Bytes of path i's records, plus the images it needs that are not kept yet
 * (marked in want, which the caller clears again when the path is left out). */
static uint64_t path_cost(const grape_trace_t* t, size_t i, plan_t* pl, uint8_t* want) {
  const grape_trace_path_t* p = &t->paths[i].r;
  uint64_t n = TRACE_SECTION_HEADER + path_size(p) + graph_rec_size(p) + times_rec_size(p);
  for (uint32_t k = 0; k < p->nops; k++) {
    uint32_t f = p->ops[k].func;
    uint32_t im = f == GRAPE_TRACE_NONE ? GRAPE_TRACE_NONE : t->funcs[f].r.image;
    if (im == GRAPE_TRACE_NONE || pl->image_map[im] != GRAPE_TRACE_NONE || want[im])
      continue;
    want[im] = 1;
    n += TRACE_SECTION_HEADER + REC_IMAGE + t->images[im].r.size;
  }
  return n;
}

static void plan_free(plan_t* pl) {
  free(pl->path_kept);
  free(pl->image_map);
}

/* Decides what goes in; returns the file size in *total. */
static int plan_make(const grape_trace_t* t, uint64_t max_bytes, plan_t* pl, uint64_t* total) {
  memset(pl, 0, sizeof(*pl));
  pl->path_kept = calloc(t->npaths + 1, 1);
  pl->image_map = malloc((t->nimages + 1) * sizeof(*pl->image_map));
  uint8_t* want = calloc(t->nimages + 1, 1);
  if (pl->path_kept == NULL || pl->image_map == NULL || want == NULL) {
    free(want);
    plan_free(pl);
    return -ENOMEM;
  }
  /* The parts always written. GRPH and TIME headers are counted here even
   * when they end up absent: a little slack under the limit, never over. */
  uint64_t used = TRACE_FILE_HEADER + 6 * TRACE_SECTION_HEADER + head_size(&t->info) +
                  func_section_size(t) + 4 + (uint64_t)t->nallocs * REC_ALLOC + 4 + 4 +
                  timeline_size(t);   /* bounded by GRAPE_TIMELINE_MAX_MB: always written */
  for (size_t i = 0; i < t->nimages; i++)
    pl->image_map[i] = max_bytes ? GRAPE_TRACE_NONE : 0;
  for (size_t i = 0; i < t->npaths; i++) {
    uint64_t cost = path_cost(t, i, pl, want);
    int keep = max_bytes == 0 || used + cost <= max_bytes;
    for (size_t k = 0; k < t->nimages; k++) {
      if (want[k] && keep)
        pl->image_map[k] = 0;
      want[k] = 0;
    }
    if (!keep)
      continue;
    used += cost;
    pl->path_kept[i] = 1;
    pl->paths_kept++;
    pl->ngraph += t->paths[i].r.graph != NULL;
    pl->ntimes += t->paths[i].r.times != NULL;
  }
  free(want);
  /* Kept images get their file indices in trace order. */
  uint64_t bytes = TRACE_FILE_HEADER + 4 * TRACE_SECTION_HEADER + head_size(&t->info) +
                   func_section_size(t) + 4 + (uint64_t)t->nallocs * REC_ALLOC + timeline_size(t);
  for (size_t i = 0; i < t->nimages; i++) {
    if (pl->image_map[i] == GRAPE_TRACE_NONE)
      continue;
    pl->image_map[i] = (uint32_t)pl->images_kept++;
    bytes += TRACE_SECTION_HEADER + REC_IMAGE + t->images[i].r.size;
  }
  for (size_t i = 0; i < t->npaths; i++) {
    if (!pl->path_kept[i])
      continue;
    const grape_trace_path_t* p = &t->paths[i].r;
    bytes += TRACE_SECTION_HEADER + path_size(p) + graph_rec_size(p) + times_rec_size(p);
  }
  if (pl->ngraph)
    bytes += TRACE_SECTION_HEADER + 4;
  if (pl->ntimes)
    bytes += TRACE_SECTION_HEADER + 4;
  *total = bytes;
  return 0;
}

/* ---- Encoding ---- */

typedef struct out_s {
  uint8_t* p;
  size_t len;
  size_t sec;                  /* start of the open section's header */
} out_t;

static void w32(out_t* o, uint32_t v) {
  put_u32(o->p + o->len, v);
  o->len += 4;
}

static void w64(out_t* o, uint64_t v) {
  put_u64(o->p + o->len, v);
  o->len += 8;
}

static void wbytes(out_t* o, const void* b, size_t n) {
  if (n)
    memcpy(o->p + o->len, b, n);
  o->len += n;
}

static void wstr(out_t* o, const char* s) {
  size_t n = strlen(s);
  w32(o, (uint32_t)n);
  wbytes(o, s, n);
}

static void begin(out_t* o, uint32_t type, uint32_t flags) {
  o->sec = o->len;
  w32(o, type);
  w32(o, flags);
  o->len += 16;   /* length and checksum, filled by end() */
}

static void end(out_t* o) {
  uint8_t* h = o->p + o->sec;
  size_t len = o->len - o->sec - TRACE_SECTION_HEADER;
  put_u64(h + 8, len);
  put_u64(h + 16, grape__trace_checksum(h, h + TRACE_SECTION_HEADER, len));
}

static void write_head(out_t* o, const grape_trace_info_t* in, uint64_t paths_omitted,
                       uint64_t images_omitted) {
  begin(o, SEC_HEAD, SEC_REQUIRED);
  wstr(o, in->grape_version);
  wstr(o, in->device_name);
  w32(o, in->cc_major);
  w32(o, in->cc_minor);
  w32(o, (uint32_t)in->driver_version);
  w64(o, in->created_ns);
  w64(o, (uint64_t)in->pid);
  w32(o, (uint32_t)in->rank);
  wstr(o, in->program);
  w64(o, in->regions);
  w64(o, in->ops);
  w64(o, paths_omitted);
  w64(o, images_omitted);
  end(o);
}

static void write_funcs(out_t* o, const grape_trace_t* t, const plan_t* pl) {
  begin(o, SEC_FUNC, SEC_REQUIRED);
  w32(o, (uint32_t)t->nfuncs);
  for (size_t i = 0; i < t->nfuncs; i++) {
    const grape_trace_func_t* f = &t->funcs[i].r;
    w64(o, f->id);
    w32(o, f->image == GRAPE_TRACE_NONE ? GRAPE_TRACE_NONE : pl->image_map[f->image]);
    w32(o, (uint32_t)f->registers);
    w32(o, f->static_smem);
    w32(o, (uint32_t)f->max_threads);
    w32(o, f->param_bytes);
    w32(o, f->nparams);
    for (uint32_t k = 0; f->nparams != GRAPE_TRACE_NONE && k < f->nparams; k++) {
      w32(o, f->params[k].offset);
      w32(o, f->params[k].size);
    }
    wstr(o, f->name);
    wstr(o, f->bodies);
  }
  end(o);
}

static void write_path(out_t* o, const grape_trace_path_t* p) {
  begin(o, SEC_PATH, SEC_REQUIRED);
  w64(o, p->fp);
  w64(o, p->count);
  w32(o, p->nops);
  for (uint32_t i = 0; i < p->nops; i++) {
    const grape_trace_op_t* op = &p->ops[i];
    w32(o, op->kind);
    w32(o, op->func);
    w64(o, op->sig_func);
    for (int d = 0; d < 3; d++)
      w32(o, op->grid[d]);
    for (int d = 0; d < 3; d++)
      w32(o, op->block[d]);
    w32(o, op->shmem);
    w32(o, op->flags);
    w64(o, op->attrs_hash);
    w32(o, op->param_bytes);
    w32(o, op->attr_bytes);
    w32(o, op->nptrs);
    wbytes(o, op->params, op->param_bytes);
    wbytes(o, op->attrs, op->attr_bytes);
    for (uint32_t k = 0; k < op->nptrs; k++) {
      w32(o, op->ptrs[k].offset);
      w32(o, op->ptrs[k].alloc);
      w64(o, op->ptrs[k].delta);
    }
  }
  end(o);
}

int grape_trace_encode(const grape_trace_t* t, uint64_t max_bytes, uint8_t** buf, size_t* len,
                       grape_trace_save_stats_t* st) {
  plan_t pl;
  uint64_t total;
  int err = plan_make(t, max_bytes, &pl, &total);
  if (err)
    return err;
  if (total > SIZE_MAX - 1) {
    plan_free(&pl);
    return -EOVERFLOW;
  }
  out_t o = {malloc((size_t)total + 1), 0, 0};
  if (o.p == NULL) {
    plan_free(&pl);
    return -ENOMEM;
  }
  uint64_t paths_omitted = t->info.paths_omitted + (t->npaths - pl.paths_kept);
  uint64_t images_omitted = t->info.images_omitted + (t->nimages - pl.images_kept);
  wbytes(&o, TRACE_MAGIC, 8);
  w32(&o, GRAPE_TRACE_FORMAT_VERSION);
  w32(&o, 0);
  write_head(&o, &t->info, paths_omitted, images_omitted);
  for (size_t i = 0; i < t->nimages; i++) {
    if (pl.image_map[i] == GRAPE_TRACE_NONE)
      continue;
    const grape_trace_image_t* im = &t->images[i].r;
    begin(&o, SEC_IMAG, SEC_REQUIRED);
    w64(&o, im->hash);
    w32(&o, im->kind);
    w32(&o, im->arch);
    w64(&o, im->size);
    wbytes(&o, im->data, (size_t)im->size);
    end(&o);
  }
  write_funcs(&o, t, &pl);
  begin(&o, SEC_ALOC, SEC_REQUIRED);
  w32(&o, (uint32_t)t->nallocs);
  for (size_t i = 0; i < t->nallocs; i++) {
    w64(&o, t->allocs[i].id);
    w64(&o, t->allocs[i].base);
    w64(&o, t->allocs[i].size);
    w32(&o, t->allocs[i].kind);
    w32(&o, 0);
  }
  end(&o);
  /* Paths, then their optional records naming them by index in the file. */
  for (size_t i = 0; i < t->npaths; i++)
    if (pl.path_kept[i])
      write_path(&o, &t->paths[i].r);
  if (pl.ngraph) {
    begin(&o, SEC_GRPH, 0);
    w32(&o, (uint32_t)pl.ngraph);
    for (size_t i = 0, k = 0; i < t->npaths; i++) {
      if (!pl.path_kept[i])
        continue;
      const grape_trace_graph_t* g = t->paths[i].r.graph;
      if (g != NULL) {
        w32(&o, (uint32_t)k);
        w32(&o, g->built);
        w32(&o, g->ran_graph);
        w64(&o, g->hits);
        wstr(&o, g->why);
      }
      k++;
    }
    end(&o);
  }
  if (pl.ntimes) {
    begin(&o, SEC_TIME, 0);
    w32(&o, (uint32_t)pl.ntimes);
    for (size_t i = 0, k = 0; i < t->npaths; i++) {
      if (!pl.path_kept[i])
        continue;
      const grape_trace_path_t* p = &t->paths[i].r;
      if (p->times != NULL) {
        w32(&o, (uint32_t)k);
        w32(&o, p->times->iters);
        w64(&o, f64_bits(p->times->path_ms));
        w32(&o, p->nops);
        for (uint32_t j = 0; j < p->nops; j++)
          w64(&o, f64_bits(p->times->op_ms[j]));
        wstr(&o, p->times->device);
      }
      k++;
    }
    end(&o);
  }
  if (t->tl != NULL) {   /* optional: older readers skip it */
    const grape_trace_timeline_t* tl = t->tl;
    begin(&o, SEC_TLIN, 0);
    wstr(&o, tl->clock);
    w64(&o, tl->origin_ns);
    w64(&o, tl->dropped);
    w32(&o, tl->count);
    for (uint32_t i = 0; i < tl->count; i++) {
      const grape_trace_tl_op_t* op = &tl->ops[i];
      w32(&o, op->kind);
      w32(&o, op->how);
      w32(&o, op->func);
      w32(&o, op->thread);
      w64(&o, op->stream);
      w64(&o, op->what);
      w64(&o, op->host_start);
      w64(&o, op->host_end);
      w64(&o, op->dev_start);
      w64(&o, op->dev_end);
      w64(&o, op->seq);
    }
    end(&o);
    /* Optional beside it (older readers skip it): what each call was. */
    begin(&o, SEC_TLAR, 0);
    w32(&o, tl->napis);
    for (uint32_t i = 0; i < tl->napis; i++)
      wstr(&o, tl->apis[i]);
    w32(&o, tl->count);
    for (uint32_t i = 0; i < tl->count; i++) {
      const grape_trace_tl_op_t* op = &tl->ops[i];
      w32(&o, op->api);
      w32(&o, op->dir);
      for (int k = 0; k < 3; k++)
        w32(&o, op->grid[k]);
      for (int k = 0; k < 3; k++)
        w32(&o, op->block[k]);
      w32(&o, op->shmem);
    }
    end(&o);
  }
  if (t->tl != NULL && t->nvtx != NULL) {   /* optional, after the timeline it annotates */
    const grape_trace_nvtx_t* n = t->nvtx;
    begin(&o, SEC_NVTX, 0);
    w32(&o, n->nnames);
    for (uint32_t i = 0; i < n->nnames; i++)
      wstr(&o, n->names[i]);
    w32(&o, n->count);
    for (uint32_t i = 0; i < n->count; i++) {
      const grape_trace_range_t* r = &n->ranges[i];
      w32(&o, r->kind);
      w32(&o, r->name);
      w32(&o, r->thread);
      w32(&o, r->parent);
      w64(&o, r->start);
      w64(&o, r->end);
    }
    w64(&o, n->dropped);
    w32(&o, t->tl->count);
    for (uint32_t i = 0; i < t->tl->count; i++)
      w32(&o, t->tl->ops[i].range);
    end(&o);
  }
  begin(&o, SEC_END, SEC_REQUIRED);
  end(&o);
  if (st != NULL)
    *st = (grape_trace_save_stats_t){o.len, pl.paths_kept, t->npaths - pl.paths_kept,
                                     pl.images_kept, t->nimages - pl.images_kept};
  plan_free(&pl);
  *buf = o.p;
  *len = o.len;
  return 0;
}

/* ---- Saving ---- */

__attribute__((format(printf, 3, 4)))
static void set_err(char* err, size_t cap, const char* fmt, ...) {
  if (err == NULL || cap == 0)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, cap, fmt, ap);
  va_end(ap);
}

int grape_trace_save(const grape_trace_t* t, const char* path, uint64_t max_bytes,
                     grape_trace_save_stats_t* st, char* err, size_t errlen) {
  uint8_t* buf;
  size_t len;
  int rc = grape_trace_encode(t, max_bytes, &buf, &len, st);
  if (rc) {
    set_err(err, errlen, "%s: cannot encode the trace: %s", path, strerror(-rc));
    return rc;
  }
  char tmp[4200];
  if (snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid()) >= (int)sizeof(tmp)) {
    free(buf);
    set_err(err, errlen, "%s: path too long", path);
    return -ENAMETOOLONG;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = -errno;
    set_err(err, errlen, "%s: %s", tmp, strerror(errno));
    free(buf);
    return rc;
  }
  size_t off = 0;
  rc = grape__write_all(fd, buf, len, &off);
  free(buf);
  if (rc)
    set_err(err, errlen, "%s: write failed after %zu of %zu bytes: %s", tmp, off, len, strerror(-rc));
  if (close(fd) != 0 && rc == 0) {
    rc = -errno;
    set_err(err, errlen, "%s: %s", tmp, strerror(errno));
  }
  if (rc == 0 && rename(tmp, path) != 0) {
    rc = -errno;
    set_err(err, errlen, "%s: cannot rename into place: %s", path, strerror(errno));
  }
  if (rc)
    unlink(tmp);
  return rc;
}

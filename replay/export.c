/* Writers of what a trace holds for other tools: the timings CSV that
 * grape train / grape predict --csv read, the JSON of grape inspect --json,
 * and Chrome trace-event JSON.
 *
 * DESIGN: all are plain formatted output over the model; durations for the
 * timeline come from a callback, so the caller chooses measured or predicted
 * ones (predict/ is not a dependency of replay/). Kernel names are written
 * demangled: the predictor classifies kernels by their demangled names, and
 * people read them.
 *
 * A timeline's slices never overlap on a track. Viewers nest a slice that
 * starts before the previous one ends inside it, so a track's clock is kept in
 * whole nanoseconds (each slice starts exactly where the previous one ended)
 * and printed as microseconds with three decimals from those integers, never
 * rounded twice; since a viewer adds the parsed start and duration as
 * doubles, a duration whose sum would pass the next start by the last bit is
 * written 1 ns shorter; and displayTimeUnit is "ns", because Catapult's viewer
 * compares slice bounds rounded to that unit's precision (whole microseconds
 * for "ms"), which nests one sub-microsecond kernel in its neighbour. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/cubin.h"
#include "grape/trace.h"
#include "graphcache/fingerprint.h"
#include "chrome_time.h"
#include "util/csv_str.h"
#include "util/json_str.h"

long grape_replay_write_csv(const grape_trace_t* t, const char* device, FILE* out) {
  long rows = 0;
  fprintf(out, "kernel,grid_x,grid_y,grid_z,block_x,block_y,block_z,smem,regs,device,time_ms,"
               "path,position,iters\n");
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    if (p->times == NULL)
      continue;
    char fp[17];
    grape__fp_hex(p->fp, fp);
    for (uint32_t j = 0; j < p->nops; j++) {
      const grape_trace_op_t* op = &p->ops[j];
      if (op->kind != GRAPE_TRACE_OP_KERNEL || op->func == GRAPE_TRACE_NONE ||
          !(p->times->op_ms[j] > 0))
        continue;
      const grape_trace_func_t* f = grape_trace_func(t, op->func);
      char* name = grape_demangle(f->name);
      grape__csv_put_str(out, name ? name : f->name);
      free(name);
      fprintf(out, ",%u,%u,%u,%u,%u,%u,%u,%d,", op->grid[0], op->grid[1], op->grid[2],
              op->block[0], op->block[1], op->block[2], op->shmem, f->registers);
      grape__csv_put_str(out, device ? device : p->times->device);
      fprintf(out, ",%.9g,%s,%u,%u\n", p->times->op_ms[j], fp, j, p->times->iters);
      rows++;
    }
  }
  return ferror(out) ? -EIO : rows;
}

const char* grape_trace_op_kind_name(uint32_t k) {
  return k == GRAPE_TRACE_OP_KERNEL ? "kernel" : k == GRAPE_TRACE_OP_MEMSET ? "memset" : "memcpy";
}

const char* grape_trace_alloc_kind_name(uint32_t k) {
  static const char* const names[] = {"?", "device", "async", "managed", "mapped", "host-pinned",
                                      "host-registered"};
  return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

/* ---- grape inspect --json ---- */

static void json_op(FILE* out, const grape_trace_t* t, const grape_trace_op_t* op) {
  fprintf(out, "{\"kind\":\"%s\"", grape_trace_op_kind_name(op->kind));
  if (op->kind != GRAPE_TRACE_OP_KERNEL) {
    fprintf(out, ",\"bytes\":%" PRIu64, op->sig_func);
    if (op->kind == GRAPE_TRACE_OP_MEMCPY)
      fprintf(out, ",\"to_host\":%s", op->flags & GRAPE_TRACE_OP_TO_HOST ? "true" : "false");
    fputc('}', out);
    return;
  }
  const char* mangled = op->func == GRAPE_TRACE_NONE ? "" : grape_trace_func(t, op->func)->name;
  char name[256];
  fprintf(out, ",\"kernel\":");
  if (op->func == GRAPE_TRACE_NONE)
    fprintf(out, "null");
  else
    fprintf(out, "%u", op->func);
  fprintf(out, ",\"name\":");
  grape__json_put_str(out, grape_trace_short_name(mangled, name, sizeof(name)));
  fprintf(out, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u,\"param_bytes\":%u,"
         "\"attr_bytes\":%u,\"pointers\":%u}",
         op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2],
         op->shmem, op->param_bytes, op->attr_bytes, op->nptrs);
}

long grape_trace_write_json(const grape_trace_t* t, FILE* out) {
  const grape_trace_info_t* in = grape_trace_info(t);
  fprintf(out, "{\"format_version\":%d,\"grape_version\":", GRAPE_TRACE_FORMAT_VERSION);
  grape__json_put_str(out, in->grape_version);
  fprintf(out, ",\"program\":");
  grape__json_put_str(out, in->program);
  fprintf(out, ",\"pid\":%" PRId64 ",\"rank\":%d,\"created_ns\":%" PRIu64 ",\"device\":{\"name\":",
         in->pid, (int)in->rank, in->created_ns);
  grape__json_put_str(out, in->device_name);
  fprintf(out, ",\"cc\":\"%u.%u\",\"driver_version\":%d},\"regions\":%" PRIu64 ",\"ops\":%" PRIu64
         ",\"paths_omitted\":%" PRIu64 ",\"images_omitted\":%" PRIu64 ",\n\"paths\":[",
         in->cc_major, in->cc_minor, (int)in->driver_version, in->regions, in->ops,
         in->paths_omitted, in->images_omitted);
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    char fp[17];
    grape__fp_hex(p->fp, fp);
    fprintf(out, "%s\n{\"fingerprint\":\"%s\",\"count\":%" PRIu64 ",\"ops\":[", i ? "," : "", fp,
           p->count);
    for (uint32_t j = 0; j < p->nops; j++) {
      if (j)
        fputc(',', out);
      json_op(out, t, &p->ops[j]);
    }
    fprintf(out, "]");
    if (p->graph != NULL) {
      fprintf(out, ",\"graph\":{\"hits\":%" PRIu64 ",\"built\":%s,\"ran\":\"%s\",\"why\":",
             p->graph->hits, p->graph->built ? "true" : "false",
             p->graph->ran_graph ? "graph" : "eager");
      grape__json_put_str(out, p->graph->why);
      fprintf(out, "}");
    }
    if (p->times != NULL) {
      fprintf(out, ",\"times\":{\"iters\":%u,\"path_ms\":%.9g,\"device\":", p->times->iters,
             p->times->path_ms);
      grape__json_put_str(out, p->times->device);
      fprintf(out, ",\"op_ms\":[");
      for (uint32_t j = 0; j < p->nops; j++)
        fprintf(out, "%s%.9g", j ? "," : "", p->times->op_ms[j]);
      fprintf(out, "]}");
    }
    fprintf(out, "}");
  }
  fprintf(out, "],\n\"kernels\":[");
  for (size_t i = 0; i < grape_trace_func_count(t); i++) {
    const grape_trace_func_t* f = grape_trace_func(t, i);
    char* dm = grape_demangle(f->name);
    fprintf(out, "%s\n{\"name\":", i ? "," : "");
    grape__json_put_str(out, f->name);
    fprintf(out, ",\"demangled\":");
    grape__json_put_str(out, dm ? dm : f->name);
    free(dm);
    fprintf(out, ",\"image\":");
    if (f->image == GRAPE_TRACE_NONE)
      fprintf(out, "null");
    else
      fprintf(out, "%u", f->image);
    fprintf(out, ",\"params\":");
    if (f->nparams == GRAPE_TRACE_NONE) {
      fprintf(out, "null");
    } else {
      fprintf(out, "[");
      for (uint32_t k = 0; k < f->nparams; k++)
        fprintf(out, "%s[%u,%u]", k ? "," : "", f->params[k].offset, f->params[k].size);
      fprintf(out, "]");
    }
    fprintf(out, ",\"param_bytes\":%u,\"registers\":%d,\"static_smem\":%u,\"bodies\":", f->param_bytes,
           (int)f->registers, f->static_smem);
    grape__json_put_str(out, f->bodies);
    fprintf(out, "}");
  }
  fprintf(out, "],\n\"images\":[");
  for (size_t i = 0; i < grape_trace_image_count(t); i++) {
    const grape_trace_image_t* im = grape_trace_image(t, i);
    fprintf(out, "%s{\"kind\":\"%s\",\"arch\":%u,\"bytes\":%" PRIu64 ",\"hash\":\"%016" PRIx64 "\"}",
           i ? "," : "", im->kind == GRAPE_TRACE_IMAGE_ELF ? "cubin" : "ptx", im->arch, im->size,
           im->hash);
  }
  fprintf(out, "],\n\"allocations\":[");
  for (size_t i = 0; i < grape_trace_alloc_count(t); i++) {
    const grape_trace_alloc_t* a = grape_trace_alloc(t, i);
    fprintf(out, "%s{\"id\":%" PRIu64 ",\"kind\":\"%s\",\"bytes\":%" PRIu64 ",\"base\":\"0x%" PRIx64
           "\"}", i ? "," : "", a->id, grape_trace_alloc_kind_name(a->kind), a->size, a->base);
  }
  fprintf(out, "]}\n");
  return ferror(out) ? -EIO : 0;
}

static void op_label(const grape_trace_t* t, const grape_trace_op_t* op, char* out, size_t cap) {
  if (op->kind == GRAPE_TRACE_OP_MEMSET)
    snprintf(out, cap, "memset");
  else if (op->kind == GRAPE_TRACE_OP_MEMCPY)
    snprintf(out, cap, "memcpy");
  else if (op->func == GRAPE_TRACE_NONE)
    snprintf(out, cap, "?");
  else
    grape_trace_short_name(grape_trace_func(t, op->func)->name, out, cap);
}

void grape__us_text(int64_t ns, char* out, size_t cap) {
  snprintf(out, cap, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

int64_t grape__viewer_safe_dur(int64_t start, int64_t dur) {
  char a[32], b[32], c[32];
  grape__us_text(start, a, sizeof(a));
  grape__us_text(start + dur, c, sizeof(c));
  double end = strtod(c, NULL);
  while (dur > 0) {
    grape__us_text(dur, b, sizeof(b));
    if (strtod(a, NULL) + strtod(b, NULL) <= end)
      break;
    dur--;
  }
  return dur;
}

/* A duration dur() gives that a slice can show (ms). */
static int drawable(double ms) {
  return ms >= 0 && ms <= 9e9;   /* not NaN or negative, nor past any clock (~100 days) */
}

long grape_trace_export_chrome(const grape_trace_t* t, grape_trace_duration_fn* dur, void* arg,
                               const char* label, FILE* out, size_t* tracks) {
  const grape_trace_info_t* in = grape_trace_info(t);
  long slices = 0;
  if (tracks != NULL)
    *tracks = 0;
  /* The traced process's own pid, which viewers print after its name. */
  long long pid = in->pid > 0 ? (long long)in->pid : 1;
  fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"grape\",\"durations\":");
  grape__json_put_str(out, label ? label : "");
  fprintf(out, ",\"device\":");
  grape__json_put_str(out, in->device_name);
  fprintf(out, "},\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%lld,"
               "\"tid\":0,\"args\":{\"name\":", pid);
  char proc[600];
  snprintf(proc, sizeof(proc), "%s, rank %d", in->program[0] ? in->program : "program",
           (int)in->rank);
  grape__json_put_str(out, proc);
  fprintf(out, "}}");
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    /* A track without a slice is not drawn: it is not named either, so that
     * the tracks said are the tracks a viewer shows. */
    uint32_t shown = 0;
    for (uint32_t j = 0; j < p->nops && !shown; j++)
      shown = drawable(dur(t, i, j, arg));
    if (!shown)
      continue;
    if (tracks != NULL)
      (*tracks)++;
    char fp[17], name[96];
    grape__fp_hex(p->fp, fp);
    snprintf(name, sizeof(name), "path %s x%llu", fp, (unsigned long long)p->count);
    fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%zu,"
                 "\"args\":{\"name\":", pid, i + 1);
    grape__json_put_str(out, name);
    fprintf(out, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%zu,"
                 "\"args\":{\"sort_index\":%zu}}", pid, i + 1, i);
    int64_t ts = 0;   /* nanoseconds from the path's start */
    for (uint32_t j = 0; j < p->nops; j++) {
      double ms = dur(t, i, j, arg);
      if (!drawable(ms))
        continue;
      const grape_trace_op_t* op = &p->ops[j];
      int64_t ns = llround(ms * 1e6);
      char lbl[256], ts_us[32], dur_us[32];
      op_label(t, op, lbl, sizeof(lbl));
      grape__us_text(ts, ts_us, sizeof(ts_us));
      grape__us_text(grape__viewer_safe_dur(ts, ns), dur_us, sizeof(dur_us));
      fprintf(out, ",\n{\"name\":");
      grape__json_put_str(out, lbl);
      fprintf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%lld,\"tid\":%zu,\"ts\":%s,\"dur\":%s,"
                   "\"args\":{\"position\":%u,\"ms\":%.9g",
              op->kind == GRAPE_TRACE_OP_KERNEL ? "kernel" : "memory", pid, i + 1, ts_us, dur_us,
              j, ms);
      if (op->kind == GRAPE_TRACE_OP_KERNEL) {
        fprintf(out, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u", op->grid[0],
                op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2], op->shmem);
        if (op->func != GRAPE_TRACE_NONE) {
          char* dm = grape_demangle(grape_trace_func(t, op->func)->name);
          fprintf(out, ",\"kernel\":");
          grape__json_put_str(out, dm ? dm : grape_trace_func(t, op->func)->name);
          free(dm);
        }
      } else {
        fprintf(out, ",\"bytes\":%llu", (unsigned long long)op->sig_func);
      }
      fprintf(out, "}}");
      ts += ns;
      slices++;
    }
  }
  fprintf(out, "\n]}\n");
  return ferror(out) ? -EIO : slices;
}

const char* grape_trace_short_name(const char* mangled, char* out, size_t cap) {
  if (cap == 0)
    return out;
  char* d = mangled && *mangled ? grape_demangle(mangled) : NULL;
  const char* s = d ? d : (mangled && *mangled ? mangled : "?");
  /* "void ns::k<int>(int*)": drop the return type before the name and the
   * parameter list (the first '(' at template depth 0). */
  size_t len = strlen(s), end = len, start = 0;
  int depth = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] == '<')
      depth++;
    else if (s[i] == '>' && depth > 0)
      depth--;
    else if (s[i] == '(' && depth == 0) {
      end = i;
      break;
    } else if (s[i] == ' ' && depth == 0)
      start = i + 1;
  }
  if (start >= end)
    start = 0;
  size_t n = end - start < cap - 1 ? end - start : cap - 1;
  memcpy(out, s + start, n);
  out[n] = '\0';
  free(d);
  return out;
}

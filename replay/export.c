/* Writers of what a trace holds for other tools: the timings CSV that
 * grape train / grape predict --csv read, and Chrome trace-event JSON.
 *
 * DESIGN: both are plain formatted output over the model; durations for the
 * timeline come from a callback, so the caller chooses measured or predicted
 * ones (predict/ is not a dependency of replay/). Kernel names are written
 * demangled: the predictor classifies kernels by their demangled names, and
 * people read them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape/cubin.h"
#include "grape/trace.h"
#include "graphcache/fingerprint.h"

/* Writes s as a CSV field (quoted, quotes doubled). */
static void csv_field(FILE* out, const char* s) {
  fputc('"', out);
  for (; *s; s++) {
    if (*s == '"')
      fputc('"', out);
    fputc(*s, out);
  }
  fputc('"', out);
}

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
      csv_field(out, name ? name : f->name);
      free(name);
      fprintf(out, ",%u,%u,%u,%u,%u,%u,%u,%d,", op->grid[0], op->grid[1], op->grid[2],
              op->block[0], op->block[1], op->block[2], op->shmem, f->registers);
      csv_field(out, device ? device : p->times->device);
      fprintf(out, ",%.9g,%s,%u,%u\n", p->times->op_ms[j], fp, j, p->times->iters);
      rows++;
    }
  }
  return ferror(out) ? -EIO : rows;
}

/* Writes s as a JSON string. */
static void json_str(FILE* out, const char* s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(out, "\\%c", c);
    else if (c < 0x20)
      fprintf(out, "\\u%04x", c);
    else
      fputc(c, out);
  }
  fputc('"', out);
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

long grape_trace_export_chrome(const grape_trace_t* t, grape_trace_duration_fn* dur, void* arg,
                               const char* label, FILE* out) {
  const grape_trace_info_t* in = grape_trace_info(t);
  long slices = 0;
  fprintf(out, "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"source\":\"grape\",\"durations\":");
  json_str(out, label ? label : "");
  fprintf(out, ",\"device\":");
  json_str(out, in->device_name);
  fprintf(out, "},\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
               "\"args\":{\"name\":");
  char proc[600];
  snprintf(proc, sizeof(proc), "%s (pid %lld, rank %d)", in->program[0] ? in->program : "program",
           (long long)in->pid, (int)in->rank);
  json_str(out, proc);
  fprintf(out, "}}");
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    char fp[17], name[96];
    grape__fp_hex(p->fp, fp);
    snprintf(name, sizeof(name), "path %s x%llu", fp, (unsigned long long)p->count);
    fprintf(out, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,\"args\":{\"name\":",
            i + 1);
    json_str(out, name);
    fprintf(out, "}},\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":%zu,"
                 "\"args\":{\"sort_index\":%zu}}", i + 1, i);
    double ts = 0;   /* microseconds from the path's start */
    for (uint32_t j = 0; j < p->nops; j++) {
      double ms = dur(t, i, j, arg);
      if (!(ms >= 0))
        continue;
      const grape_trace_op_t* op = &p->ops[j];
      char lbl[256];
      op_label(t, op, lbl, sizeof(lbl));
      fprintf(out, ",\n{\"name\":");
      json_str(out, lbl);
      fprintf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%zu,\"ts\":%.3f,\"dur\":%.3f,"
                   "\"args\":{\"position\":%u,\"ms\":%.9g",
              op->kind == GRAPE_TRACE_OP_KERNEL ? "kernel" : "memory", i + 1, ts, ms * 1000.0, j,
              ms);
      if (op->kind == GRAPE_TRACE_OP_KERNEL) {
        fprintf(out, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u", op->grid[0],
                op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2], op->shmem);
        if (op->func != GRAPE_TRACE_NONE) {
          char* dm = grape_demangle(grape_trace_func(t, op->func)->name);
          fprintf(out, ",\"kernel\":");
          json_str(out, dm ? dm : grape_trace_func(t, op->func)->name);
          free(dm);
        }
      } else {
        fprintf(out, ",\"bytes\":%llu", (unsigned long long)op->sig_func);
      }
      fprintf(out, "}}");
      ts += ms * 1000.0;
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

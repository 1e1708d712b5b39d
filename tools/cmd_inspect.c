/* grape inspect: what a trace holds, as text or JSON.
 *
 * Reads the trace through the validating reader (a damaged file is refused
 * with the reader's message: section and byte offset) and prints the header,
 * then the paths, most frequent first as the shim wrote them, each with its
 * count and its ops (demangled kernel names, launch shapes), then the
 * kernels, images and allocations. --json prints the same as one object. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "grape/cubin.h"
#include "grape/trace.h"

static void usage(FILE* to) {
  fprintf(to,
          "usage: grape inspect [--json] [--brief] TRACE\n"
          "\n"
          "Summarises a trace written by libgrape.so (GRAPE_TRACE=FILE): the process and\n"
          "device it came from, every distinct path with its count and ops, the kernels,\n"
          "kernel images and allocations. A damaged trace is refused with the section\n"
          "and byte offset of the damage.\n"
          "\n"
          "  --json    one JSON object on stdout\n"
          "  --brief   the summary and the paths without their ops\n");
}

static const char* op_kind_name(uint32_t k) {
  return k == GRAPE_TRACE_OP_KERNEL ? "kernel" : k == GRAPE_TRACE_OP_MEMSET ? "memset" : "memcpy";
}

static const char* alloc_kind_name(uint32_t k) {
  static const char* const names[] = {"?", "device", "async", "managed", "mapped", "host-pinned",
                                      "host-registered"};
  return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static void fp_hex(uint64_t fp, char out[17]) {
  snprintf(out, 17, "%016" PRIx64, fp);
}

/* ---- Text ---- */

static void text_op(const grape_trace_t* t, uint32_t j, const grape_trace_op_t* op) {
  if (op->kind != GRAPE_TRACE_OP_KERNEL) {
    printf("    %3u  %-40s %" PRIu64 " bytes\n", j, op_kind_name(op->kind), op->sig_func);
    return;
  }
  char name[256];
  grape_trace_short_name(op->func == GRAPE_TRACE_NONE ? "" : grape_trace_func(t, op->func)->name,
                         name, sizeof(name));
  printf("    %3u  %-40s grid %u,%u,%u  block %u,%u,%u  smem %u  %u param bytes, %u pointers\n",
         j, name, op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2],
         op->shmem, op->param_bytes, op->nptrs);
}

static void text(const grape_trace_t* t, int brief) {
  const grape_trace_info_t* in = grape_trace_info(t);
  char when[64] = "?";
  time_t secs = (time_t)(in->created_ns / 1000000000u);
  struct tm tm;
  if (gmtime_r(&secs, &tm) != NULL)
    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
  printf("trace of %s (pid %" PRId64 ", rank %d), written %s by grape %s\n",
         in->program[0] ? in->program : "(unknown program)", in->pid, (int)in->rank, when,
         in->grape_version);
  printf("device: %s, compute capability %u.%u, driver %d\n",
         in->device_name[0] ? in->device_name : "(unknown)", in->cc_major, in->cc_minor,
         (int)in->driver_version);
  uint64_t sum = 0;
  for (size_t i = 0; i < grape_trace_path_count(t); i++)
    sum += grape_trace_path(t, i)->count;
  printf("%" PRIu64 " regions, %" PRIu64 " ops; %zu paths (counts sum to %" PRIu64 ")", in->regions,
         in->ops, grape_trace_path_count(t), sum);
  if (in->paths_omitted || in->images_omitted)
    printf("; left out: %" PRIu64 " paths, %" PRIu64 " images", in->paths_omitted,
           in->images_omitted);
  printf("; %zu kernels, %zu images, %zu allocations\n", grape_trace_func_count(t),
         grape_trace_image_count(t), grape_trace_alloc_count(t));

  printf("\npaths (fingerprint, count, ops):\n");
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    char fp[17];
    fp_hex(p->fp, fp);
    printf("  %s %8" PRIu64 "x  %u ops", fp, p->count, p->nops);
    if (p->times != NULL)
      printf("  %.6f ms as a graph on %s", p->times->path_ms, p->times->device);
    if (p->graph != NULL)
      printf("  graph mode: %s, %" PRIu64 " hits%s%s", p->graph->ran_graph ? "graph" : "eager",
             p->graph->hits, p->graph->why[0] ? ", " : "", p->graph->why);
    printf("\n");
    for (uint32_t j = 0; !brief && j < p->nops; j++)
      text_op(t, j, &p->ops[j]);
  }
  if (brief)
    return;
  printf("\nkernels:\n");
  for (size_t i = 0; i < grape_trace_func_count(t); i++) {
    const grape_trace_func_t* f = grape_trace_func(t, i);
    char* dm = grape_demangle(f->name[0] ? f->name : "(unnamed)");
    printf("  %3zu  %s\n       image ", i, dm ? dm : f->name);
    if (f->image == GRAPE_TRACE_NONE)
      printf("none");
    else
      printf("%u", f->image);
    if (f->nparams == GRAPE_TRACE_NONE)
      printf(", parameter layout unknown");
    else
      printf(", %u parameters in %u bytes", f->nparams, f->param_bytes);
    printf(", %d registers, %u bytes static shared memory", (int)f->registers, f->static_smem);
    if (f->bodies[0])
      printf(", CPU body in %s", f->bodies);
    printf("\n");
    free(dm);
  }
  printf("\nimages:\n");
  for (size_t i = 0; i < grape_trace_image_count(t); i++) {
    const grape_trace_image_t* im = grape_trace_image(t, i);
    printf("  %3zu  %s sm_%u, %" PRIu64 " bytes, xxh3 %016" PRIx64 "\n", i,
           im->kind == GRAPE_TRACE_IMAGE_ELF ? "cubin" : "PTX", im->arch, im->size, im->hash);
  }
  printf("\nallocations:\n");
  for (size_t i = 0; i < grape_trace_alloc_count(t); i++) {
    const grape_trace_alloc_t* a = grape_trace_alloc(t, i);
    printf("  %3zu  #%" PRIu64 " %s, %" PRIu64 " bytes at 0x%" PRIx64 "\n", i, a->id,
           alloc_kind_name(a->kind), a->size, a->base);
  }
}

/* ---- JSON ---- */

static void jstr(const char* s) {
  putchar('"');
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      printf("\\%c", c);
    else if (c < 0x20)
      printf("\\u%04x", c);
    else
      putchar(c);
  }
  putchar('"');
}

static void json_op(const grape_trace_t* t, const grape_trace_op_t* op) {
  printf("{\"kind\":\"%s\"", op_kind_name(op->kind));
  if (op->kind != GRAPE_TRACE_OP_KERNEL) {
    printf(",\"bytes\":%" PRIu64 "}", op->sig_func);
    return;
  }
  const char* mangled = op->func == GRAPE_TRACE_NONE ? "" : grape_trace_func(t, op->func)->name;
  char name[256];
  printf(",\"kernel\":");
  if (op->func == GRAPE_TRACE_NONE)
    printf("null");
  else
    printf("%u", op->func);
  printf(",\"name\":");
  jstr(grape_trace_short_name(mangled, name, sizeof(name)));
  printf(",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u,\"param_bytes\":%u,"
         "\"attr_bytes\":%u,\"pointers\":%u}",
         op->grid[0], op->grid[1], op->grid[2], op->block[0], op->block[1], op->block[2],
         op->shmem, op->param_bytes, op->attr_bytes, op->nptrs);
}

static void json(const grape_trace_t* t) {
  const grape_trace_info_t* in = grape_trace_info(t);
  printf("{\"format_version\":%d,\"grape_version\":", GRAPE_TRACE_FORMAT_VERSION);
  jstr(in->grape_version);
  printf(",\"program\":");
  jstr(in->program);
  printf(",\"pid\":%" PRId64 ",\"rank\":%d,\"created_ns\":%" PRIu64 ",\"device\":{\"name\":",
         in->pid, (int)in->rank, in->created_ns);
  jstr(in->device_name);
  printf(",\"cc\":\"%u.%u\",\"driver_version\":%d},\"regions\":%" PRIu64 ",\"ops\":%" PRIu64
         ",\"paths_omitted\":%" PRIu64 ",\"images_omitted\":%" PRIu64 ",\n\"paths\":[",
         in->cc_major, in->cc_minor, (int)in->driver_version, in->regions, in->ops,
         in->paths_omitted, in->images_omitted);
  for (size_t i = 0; i < grape_trace_path_count(t); i++) {
    const grape_trace_path_t* p = grape_trace_path(t, i);
    char fp[17];
    fp_hex(p->fp, fp);
    printf("%s\n{\"fingerprint\":\"%s\",\"count\":%" PRIu64 ",\"ops\":[", i ? "," : "", fp,
           p->count);
    for (uint32_t j = 0; j < p->nops; j++) {
      if (j)
        putchar(',');
      json_op(t, &p->ops[j]);
    }
    printf("]");
    if (p->graph != NULL) {
      printf(",\"graph\":{\"hits\":%" PRIu64 ",\"built\":%s,\"ran\":\"%s\",\"why\":",
             p->graph->hits, p->graph->built ? "true" : "false",
             p->graph->ran_graph ? "graph" : "eager");
      jstr(p->graph->why);
      printf("}");
    }
    if (p->times != NULL) {
      printf(",\"times\":{\"iters\":%u,\"path_ms\":%.9g,\"device\":", p->times->iters,
             p->times->path_ms);
      jstr(p->times->device);
      printf(",\"op_ms\":[");
      for (uint32_t j = 0; j < p->nops; j++)
        printf("%s%.9g", j ? "," : "", p->times->op_ms[j]);
      printf("]}");
    }
    printf("}");
  }
  printf("],\n\"kernels\":[");
  for (size_t i = 0; i < grape_trace_func_count(t); i++) {
    const grape_trace_func_t* f = grape_trace_func(t, i);
    char* dm = grape_demangle(f->name);
    printf("%s\n{\"name\":", i ? "," : "");
    jstr(f->name);
    printf(",\"demangled\":");
    jstr(dm ? dm : f->name);
    free(dm);
    printf(",\"image\":");
    if (f->image == GRAPE_TRACE_NONE)
      printf("null");
    else
      printf("%u", f->image);
    printf(",\"params\":");
    if (f->nparams == GRAPE_TRACE_NONE) {
      printf("null");
    } else {
      printf("[");
      for (uint32_t k = 0; k < f->nparams; k++)
        printf("%s[%u,%u]", k ? "," : "", f->params[k].offset, f->params[k].size);
      printf("]");
    }
    printf(",\"param_bytes\":%u,\"registers\":%d,\"static_smem\":%u,\"bodies\":", f->param_bytes,
           (int)f->registers, f->static_smem);
    jstr(f->bodies);
    printf("}");
  }
  printf("],\n\"images\":[");
  for (size_t i = 0; i < grape_trace_image_count(t); i++) {
    const grape_trace_image_t* im = grape_trace_image(t, i);
    printf("%s{\"kind\":\"%s\",\"arch\":%u,\"bytes\":%" PRIu64 ",\"hash\":\"%016" PRIx64 "\"}",
           i ? "," : "", im->kind == GRAPE_TRACE_IMAGE_ELF ? "cubin" : "ptx", im->arch, im->size,
           im->hash);
  }
  printf("],\n\"allocations\":[");
  for (size_t i = 0; i < grape_trace_alloc_count(t); i++) {
    const grape_trace_alloc_t* a = grape_trace_alloc(t, i);
    printf("%s{\"id\":%" PRIu64 ",\"kind\":\"%s\",\"bytes\":%" PRIu64 ",\"base\":\"0x%" PRIx64
           "\"}", i ? "," : "", a->id, alloc_kind_name(a->kind), a->size, a->base);
  }
  printf("]}\n");
}

int cmd_inspect(int argc, char** argv) {
  const char* path = NULL;
  int as_json = 0, brief = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      usage(stdout);
      return 0;
    } else if (strcmp(argv[i], "--json") == 0) {
      as_json = 1;
    } else if (strcmp(argv[i], "--brief") == 0) {
      brief = 1;
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      fprintf(stderr, "grape: error: unknown option '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    } else if (path == NULL) {
      path = argv[i];
    } else {
      fprintf(stderr, "grape: error: one trace at a time ('%s' and '%s')\n", path, argv[i]);
      return 2;
    }
  }
  if (path == NULL) {
    usage(stderr);
    return 2;
  }
  grape_trace_t* t;
  char err[512];
  int e = grape_trace_load(path, &t, err, sizeof(err));
  if (e < 0) {
    fprintf(stderr, "grape: error: %s\n", err);
    return 1;
  }
  if (as_json)
    json(t);
  else
    text(t, brief);
  grape_trace_free(t);
  return ferror(stdout) ? 1 : 0;
}

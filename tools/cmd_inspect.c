/* grape inspect: what a trace holds, as text or JSON.
 *
 * Reads the trace through the validating reader (a damaged file is refused
 * with the reader's message: section and byte offset) and prints the header,
 * then the paths, most frequent first as the shim wrote them, each with its
 * count and its ops (demangled kernel names, launch shapes), then the
 * kernels, images and allocations. --json prints the same as one object.
 * Several traces (run.*.grape of a job's processes or ranks) are summarised
 * one after another, each under its file name, or as a JSON array; one that
 * cannot be read is reported and the others are still shown.
 *
 * DESIGN: thin, like every command: the reader validates, replay/export.c
 * writes the JSON; only the text layout lives here. */
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
          "usage: grape inspect [--json] [--brief] TRACE...\n"
          "\n"
          "Summarises a trace written by libgrape.so (GRAPE_TRACE=FILE): the process and\n"
          "device it came from, every distinct path with its count and ops, the kernels,\n"
          "kernel images and allocations. A damaged trace is refused with the section\n"
          "and byte offset of the damage. Several traces are summarised in turn, each\n"
          "under its file name; the exit status is 1 if any could not be read.\n"
          "\n"
          "  --json    one JSON object on stdout (an array of them for several traces)\n"
          "  --brief   the summary and the paths without their ops\n");
}

static void fp_hex(uint64_t fp, char out[17]) {
  snprintf(out, 17, "%016" PRIx64, fp);
}

/* ---- Text ---- */

static void text_op(const grape_trace_t* t, uint32_t j, const grape_trace_op_t* op) {
  if (op->kind != GRAPE_TRACE_OP_KERNEL) {
    printf("    %3u  %-40s %" PRIu64 " bytes\n", j, grape_trace_op_kind_name(op->kind), op->sig_func);
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
           grape_trace_alloc_kind_name(a->kind), a->size, a->base);
  }
}

int cmd_inspect(int argc, char** argv) {
  int as_json = 0, brief = 0, ntraces = 0;
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
    } else {
      argv[1 + ntraces++] = argv[i];   /* the traces, in order, over what was read */
    }
  }
  if (ntraces == 0) {
    usage(stderr);
    return 2;
  }
  int rc = 0, shown = 0;
  if (as_json && ntraces > 1)
    printf("[\n");
  for (int k = 0; k < ntraces; k++) {
    const char* path = argv[1 + k];
    grape_trace_t* t;
    char err[512];
    if (grape_trace_load(path, &t, err, sizeof(err)) < 0) {
      fprintf(stderr, "grape: error: %s\n", err);
      rc = 1;
      continue;
    }
    if (as_json) {
      if (shown)
        printf(",\n");
      grape_trace_write_json(t, stdout);
    } else {
      if (ntraces > 1)
        printf("%s== %s ==\n", shown ? "\n" : "", path);
      text(t, brief);
    }
    shown++;
    grape_trace_free(t);
  }
  if (as_json && ntraces > 1)
    printf("]\n");
  return ferror(stdout) ? 1 : rc;
}

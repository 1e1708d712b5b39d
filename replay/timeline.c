/* grape export --chrome: the timelines of one or more traces (GRAPE_TIMELINE)
 * as one Chrome trace-event JSON file, drawn as the run went.
 *
 * DESIGN: each trace is a process (its pid; a pid already taken by another
 * trace gets the next free number), with three kinds of tracks: a host row
 * per thread (the program's CUDA calls, held ones marked), a row per thread
 * for the shim's own submissions of held work (so that a submission made
 * inside a call, a flush, is not drawn overlapping it), and a row per stream
 * (device work where it ran: the eager ops, the graphs graph mode launched
 * and the held ops it submitted one by one). A flow arrow goes from each call
 * to its device work: an eager call's own, a held call's the submission that
 * ran it, by the numbers the shim gives held ops per stream (a submission
 * names the first it ran; a graph of n ops runs n). Every track's
 * slices are written in order and never overlap (a viewer nests a slice that
 * starts before the previous one ends): a slice that would, after the float
 * milliseconds of event timing, starts where the previous one ended and is
 * counted as clamped. Traces on CLOCK_MONOTONIC share one clock and are
 * placed by it; simulated clocks each start at 0. NVTX ranges (the trace's
 * NVTX section) go on a row per thread above its calls, nested as the
 * program pushed them (start/end ranges, which need not nest, on a row of
 * their own; marks as instant events), and every call and its device work
 * name the innermost range they ran in ("nvtx" in their args). As nsys
 * shows them: a call is named after the entry point the program called
 * (cuLaunchKernel, cudaMemcpyAsync; its kernel in the args), a copy's work
 * after its direction ("memcpy HtoD", with its bytes), and a kernel's carries
 * its grid, block, shared memory and registers. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chrome_time.h"
#include "grape/trace.h"
#include "util/json_str.h"

/* Track ids inside a process. */
#define TID_SUBMIT 10000u   /* + host thread */
#define TID_STREAM 20000u   /* + stream ordinal */
#define TID_NVTX 30000u     /* + host thread: its push/pop ranges and marks */
#define TID_NVTX_SE 40000u  /* + host thread: its start/end ranges */

typedef struct track_s {
  uint32_t tid;
  int64_t end;               /* where its last slice ended, ns */
  size_t slices;
} track_t;

typedef struct proc_s {
  const grape_trace_t* t;
  const grape_trace_timeline_t* tl;
  long long pid;
  int64_t shift;             /* ns added to the trace's own times */
  track_t* tracks;
  size_t ntracks;
  uint64_t* streams;         /* stream keys by ordinal (first seen first) */
  size_t nstreams;
  int64_t* dev_at;           /* per record: its device slice's middle as drawn (half ns), or -1 */
  uint32_t* ran_in;          /* per held record: the submission that ran it, or NONE */
  uint32_t* ran_for;         /* per submission of one op: the held call it ran, or NONE */
} proc_t;

static track_t* track_of(proc_t* p, uint32_t tid) {
  for (size_t i = 0; i < p->ntracks; i++)
    if (p->tracks[i].tid == tid)
      return &p->tracks[i];
  return NULL;
}

static uint32_t stream_tid(proc_t* p, uint64_t key) {
  for (size_t i = 0; i < p->nstreams; i++)
    if (p->streams[i] == key)
      return TID_STREAM + (uint32_t)i;
  return TID_STREAM;   /* not reached: every stream was listed first */
}

static int has_dev(const grape_trace_tl_op_t* op) {
  return op->how != GRAPE_TRACE_TL_HELD && op->dev_start != GRAPE_TRACE_TL_UNKNOWN;
}

static uint32_t host_tid(const grape_trace_tl_op_t* op) {
  return op->how == GRAPE_TRACE_TL_SUBMIT ? TID_SUBMIT + op->thread : op->thread;
}

static int add_track(proc_t* p, uint32_t tid, size_t* cap) {
  if (track_of(p, tid) != NULL)
    return 0;
  if (p->ntracks == *cap) {
    size_t nc = *cap ? *cap * 2 : 16;
    track_t* v = realloc(p->tracks, nc * sizeof(*v));
    if (v == NULL)
      return -ENOMEM;
    p->tracks = v;
    *cap = nc;
  }
  p->tracks[p->ntracks++] = (track_t){tid, INT64_MIN, 0};
  return 0;
}

typedef struct held_s {
  uint32_t tid;              /* its stream's track */
  uint64_t seq;
  uint32_t i;                /* the record */
} held_t;

static int held_cmp(const void* a, const void* b) {
  const held_t* x = a;
  const held_t* y = b;
  if (x->tid != y->tid)
    return x->tid < y->tid ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Lists the streams and tracks, and pairs each held call with the
 * submission that ran it. */
static int proc_scan(proc_t* p) {
  const grape_trace_timeline_t* tl = p->tl;
  size_t cap_tracks = 0, cap_streams = 0;
  p->dev_at = malloc(((size_t)tl->count + 1) * sizeof(*p->dev_at));
  p->ran_in = malloc(((size_t)tl->count + 1) * sizeof(*p->ran_in));
  p->ran_for = malloc(((size_t)tl->count + 1) * sizeof(*p->ran_for));
  if (p->dev_at == NULL || p->ran_in == NULL || p->ran_for == NULL)
    return -ENOMEM;
  for (uint32_t i = 0; i < tl->count; i++) {
    const grape_trace_tl_op_t* op = &tl->ops[i];
    p->ran_in[i] = p->ran_for[i] = GRAPE_TRACE_NONE;
    p->dev_at[i] = -1;
    size_t s = 0;
    while (s < p->nstreams && p->streams[s] != op->stream)
      s++;
    if (s == p->nstreams) {
      if (p->nstreams == cap_streams) {
        size_t nc = cap_streams ? cap_streams * 2 : 8;
        uint64_t* v = realloc(p->streams, nc * sizeof(*v));
        if (v == NULL)
          goto oom;
        p->streams = v;
        cap_streams = nc;
      }
      p->streams[p->nstreams++] = op->stream;
    }
    if (add_track(p, host_tid(op), &cap_tracks) != 0 ||
        (has_dev(op) && add_track(p, TID_STREAM + (uint32_t)s, &cap_tracks) != 0))
      goto oom;
  }
  const grape_trace_nvtx_t* nv = grape_trace_nvtx(p->t);
  for (uint32_t i = 0; nv != NULL && i < nv->count; i++)
    if (add_track(p, (nv->ranges[i].kind == GRAPE_TRACE_NVTX_START ? TID_NVTX_SE : TID_NVTX) +
                         nv->ranges[i].thread, &cap_tracks) != 0)
      goto oom;
  /* Held calls by (stream, number); a submission ran the held calls of its
   * stream numbered [seq, seq + ops). */
  held_t* held = malloc(((size_t)tl->count + 1) * sizeof(*held));
  if (held == NULL)
    goto oom;
  size_t nheld = 0;
  for (uint32_t i = 0; i < tl->count; i++)
    if (tl->ops[i].how == GRAPE_TRACE_TL_HELD)
      held[nheld++] = (held_t){stream_tid(p, tl->ops[i].stream), tl->ops[i].seq, i};
  qsort(held, nheld, sizeof(*held), held_cmp);
  for (uint32_t i = 0; i < tl->count; i++) {
    const grape_trace_tl_op_t* op = &tl->ops[i];
    if (op->how != GRAPE_TRACE_TL_SUBMIT || op->seq == GRAPE_TRACE_TL_UNKNOWN)
      continue;
    uint64_t n = op->kind == GRAPE_TRACE_TL_GRAPH ? op->what : 1;
    held_t key = {stream_tid(p, op->stream), op->seq, 0};
    size_t lo = 0, hi = nheld;
    while (lo < hi) {   /* the first held call at or after key */
      size_t mid = lo + (hi - lo) / 2;
      if (held_cmp(&held[mid], &key) < 0)
        lo = mid + 1;
      else
        hi = mid;
    }
    for (; lo < nheld && held[lo].tid == key.tid && held[lo].seq - op->seq < n; lo++) {
      p->ran_in[held[lo].i] = i;
      if (p->ran_for[i] == GRAPE_TRACE_NONE)
        p->ran_for[i] = held[lo].i;
    }
  }
  free(held);
  return 0;
oom:
  return -ENOMEM;
}

/* The slice [start, end) on track tid, moved to start where the previous one
 * ended if it would overlap it. Writes its middle into *at (half ns). */
static void slice(FILE* out, proc_t* p, uint32_t tid, int64_t start, int64_t end, const char* name,
                  const char* cat, const char* args, const char* kernel, const char* nvtx,
                  grape_trace_export_stats_t* st, int64_t* at) {
  track_t* tr = track_of(p, tid);
  if (start < tr->end) {
    start = tr->end;
    st->clamped++;
  }
  /* At least 1 ns as the viewer adds it: an empty slice where the previous
   * one ended (a held call on the sim's clock) is drawn nested in it. */
  int64_t d = end > start ? end - start : 1;
  while (grape__viewer_safe_dur(start, d) == 0)
    d++;
  end = start + d;
  char ts[32], dur[32];
  int64_t shown = grape__viewer_safe_dur(start, d);
  grape__us_text(start, ts, sizeof(ts));
  grape__us_text(shown, dur, sizeof(dur));
  fprintf(out, ",\n{\"name\":");
  grape__json_put_str(out, name);
  fprintf(out, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%lld,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
               "\"args\":{%s", cat, p->pid, tid, ts, dur, args);
  if (kernel != NULL) {   /* a call's kernel, as nsys's API row names it */
    fprintf(out, ",\"kernel\":");
    grape__json_put_str(out, kernel);
  }
  if (nvtx != NULL) {
    fprintf(out, ",\"nvtx\":");
    grape__json_put_str(out, nvtx);
  }
  fprintf(out, "}}");
  tr->end = end;
  tr->slices++;
  st->slices++;
  *at = 2 * start + shown;   /* its middle, in half nanoseconds */
}

/* A time in half nanoseconds as microseconds: "12.3455". */
static void half_ns_text(int64_t h, char* out, size_t cap) {
  int64_t e4 = h * 5;   /* ten-thousandths of a microsecond */
  snprintf(out, cap, "%" PRId64 ".%04d", e4 / 10000, (int)(e4 % 10000));
}

/* An arrow between the middles of two slices (half nanoseconds): a slice's
 * start is often where the previous one on its track ended, and a viewer
 * binding an end there could take either. */
static void flow(FILE* out, const proc_t* p, size_t id, uint32_t from_tid, int64_t from,
                 uint32_t to_tid, int64_t to, grape_trace_export_stats_t* st) {
  char a[32], b[32];
  half_ns_text(from, a, sizeof(a));
  half_ns_text(to, b, sizeof(b));
  fprintf(out, ",\n{\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"s\",\"id\":%zu,\"pid\":%lld,"
               "\"tid\":%u,\"ts\":%s}", id, p->pid, from_tid, a);
  fprintf(out, ",\n{\"name\":\"launch\",\"cat\":\"flow\",\"ph\":\"f\",\"bp\":\"e\",\"id\":%zu,"
               "\"pid\":%lld,\"tid\":%u,\"ts\":%s}", id, p->pid, to_tid, b);
  st->flows++;
}

/* A copy's direction as nsys names it ("HtoD"), or NULL when not known. */
static const char* dir_name(uint32_t dir) {
  static const char* const names[] = {NULL, "HtoD", "DtoH", "DtoD", "HtoH"};
  return dir <= GRAPE_TRACE_DIR_HTOH ? names[dir] : NULL;
}

/* The record a submission of one held op ran for (its kernel's name and
 * launch shape are the held call's), else the record itself. */
static const grape_trace_tl_op_t* origin_of(const proc_t* p, uint32_t i) {
  const grape_trace_tl_op_t* op = &p->tl->ops[i];
  return op->how == GRAPE_TRACE_TL_SUBMIT && p->ran_for[i] != GRAPE_TRACE_NONE
             ? &p->tl->ops[p->ran_for[i]] : op;
}

/* What a record's work is called: the kernel's short name, "memset",
 * "memcpy HtoD" (its direction, as nsys's "Memcpy HtoD"), or a graph's size
 * (grape's "graph (K ops)", the program's "graph launch (N nodes)");
 * for a held op the shim submitted, the call it ran for. */
static void name_of(const proc_t* p, uint32_t i, char* out, size_t cap) {
  const grape_trace_tl_op_t* op = &p->tl->ops[i];
  if (op->kind == GRAPE_TRACE_TL_GRAPH && op->how == GRAPE_TRACE_TL_EAGER) {
    if (op->what > 0)   /* the program's own graph */
      snprintf(out, cap, "graph launch (%" PRIu64 " nodes)", op->what);
    else
      snprintf(out, cap, "graph launch");
    return;
  }
  if (op->kind == GRAPE_TRACE_TL_GRAPH) {
    snprintf(out, cap, "graph (%" PRIu64 " ops)", op->what);
    return;
  }
  const grape_trace_tl_op_t* o = op->kind == GRAPE_TRACE_OP_KERNEL ? origin_of(p, i) : op;
  if (o->kind == GRAPE_TRACE_OP_KERNEL && o->func != GRAPE_TRACE_NONE)
    grape_trace_short_name(grape_trace_func(p->t, o->func)->name, out, cap);
  else if (op->kind == GRAPE_TRACE_OP_MEMCPY && dir_name(op->dir) != NULL)
    snprintf(out, cap, "memcpy %s", dir_name(op->dir));
  else
    snprintf(out, cap, "%s", grape_trace_op_kind_name(op->kind));
}

/* The entry point the program called, or NULL (the shim's own submissions,
 * or a trace written before calls were named). */
static const char* api_name(const proc_t* p, const grape_trace_tl_op_t* op) {
  return op->api >= 1 && op->api <= p->tl->napis ? p->tl->apis[op->api - 1] : NULL;
}

/* A record's args, as nsys shows them: how it ran, its stream; a copy's or
 * memset's bytes (and a copy's direction); a kernel's grid, block, shared
 * memory and registers; a graph's ops (grape's) or nodes (the program's). */
static void args_of(const proc_t* p, uint32_t i, char* out, size_t cap) {
  static const char* const how[] = {"", "eager", "held", "submitted by grape"};
  const grape_trace_tl_op_t* op = &p->tl->ops[i];
  size_t n = (size_t)snprintf(out, cap, "\"how\":\"%s\",\"stream\":\"0x%" PRIx64 "\"",
                              how[op->how], op->stream);
#define ARG(...) (n += n < cap ? (size_t)snprintf(out + n, cap - n, __VA_ARGS__) : 0)
  if (op->kind == GRAPE_TRACE_OP_MEMSET || op->kind == GRAPE_TRACE_OP_MEMCPY)
    ARG(",\"bytes\":%" PRIu64, op->what);
  if (op->kind == GRAPE_TRACE_OP_MEMCPY && dir_name(op->dir) != NULL)
    ARG(",\"dir\":\"%s\"", dir_name(op->dir));
  else if (op->kind == GRAPE_TRACE_TL_GRAPH && op->how == GRAPE_TRACE_TL_EAGER)
    ARG(",\"nodes\":%" PRIu64, op->what);
  else if (op->kind == GRAPE_TRACE_TL_GRAPH)
    ARG(",\"ops\":%" PRIu64, op->what);
  const grape_trace_tl_op_t* o = origin_of(p, i);
  if (op->kind == GRAPE_TRACE_OP_KERNEL && o->block[0] != 0) {
    ARG(",\"grid\":\"[%u,%u,%u]\",\"block\":\"[%u,%u,%u]\",\"shared_mem_dynamic\":%u",
        o->grid[0], o->grid[1], o->grid[2], o->block[0], o->block[1], o->block[2], o->shmem);
    if (o->func != GRAPE_TRACE_NONE) {
      const grape_trace_func_t* f = grape_trace_func(p->t, o->func);
      ARG(",\"shared_mem_static\":%u", f->static_smem);
      if (f->registers >= 0)
        ARG(",\"registers_per_thread\":%d", (int)f->registers);
    }
  }
  if (op->how == GRAPE_TRACE_TL_SUBMIT) {   /* when grape submitted it, on the host */
    char us[32];
    grape__us_text((int64_t)op->host_start + p->shift, us, sizeof(us));
    ARG(",\"submitted_at_us\":%s", us);
  }
#undef ARG
}

/* The innermost NVTX range a record ran in, or NULL. */
static const char* range_name(const proc_t* p, const grape_trace_tl_op_t* op) {
  const grape_trace_nvtx_t* n = grape_trace_nvtx(p->t);
  if (n == NULL || op->range == 0 || op->range > n->count)
    return NULL;
  return n->names[n->ranges[op->range - 1].name];
}

/* The NVTX records: ranges as slices on their thread's NVTX rows (nested as
 * they were pushed: written in the order they started, a viewer nests a
 * slice inside the one that holds it), marks as instant events. */
static void nvtx_events(FILE* out, proc_t* p, grape_trace_export_stats_t* st) {
  const grape_trace_nvtx_t* n = grape_trace_nvtx(p->t);
  for (uint32_t i = 0; n != NULL && i < n->count; i++) {
    const grape_trace_range_t* r = &n->ranges[i];
    uint32_t tid = (r->kind == GRAPE_TRACE_NVTX_START ? TID_NVTX_SE : TID_NVTX) + r->thread;
    char ts[32], dur[32];
    grape__us_text((int64_t)r->start + p->shift, ts, sizeof(ts));
    fprintf(out, ",\n{\"name\":");
    grape__json_put_str(out, n->names[r->name]);
    if (r->kind == GRAPE_TRACE_NVTX_MARK) {
      fprintf(out, ",\"cat\":\"nvtx\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%lld,\"tid\":%u,\"ts\":%s}",
              p->pid, tid, ts);
      continue;
    }
    grape__us_text((int64_t)(r->end - r->start), dur, sizeof(dur));
    fprintf(out, ",\"cat\":\"nvtx\",\"ph\":\"X\",\"pid\":%lld,\"tid\":%u,\"ts\":%s,\"dur\":%s,"
                 "\"args\":{\"style\":\"%s\"}}", p->pid, tid, ts, dur,
            r->kind == GRAPE_TRACE_NVTX_START ? "StartEnd" : "PushPop");
    track_t* tr = track_of(p, tid);
    if (tr != NULL)
      tr->slices++;
    st->slices++;
  }
}

static void meta(FILE* out, long long pid, uint32_t tid, const char* what, const char* key,
                 const char* name, long sort, int first) {
  fprintf(out, "%s{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%u,\"args\":{\"%s\":",
          first ? "" : ",\n", what, pid, tid, key);
  if (name != NULL)
    grape__json_put_str(out, name);
  else
    fprintf(out, "%ld", sort);
  fprintf(out, "}}");
}

static void proc_meta(FILE* out, proc_t* p, int first) {
  const grape_trace_info_t* in = grape_trace_info(p->t);
  char name[700];
  snprintf(name, sizeof(name), "%s, rank %d", in->program[0] ? in->program : "program",
           (int)in->rank);
  meta(out, p->pid, 0, "process_name", "name", name, 0, first);
  if (p->tl->dropped > 0) {
    snprintf(name, sizeof(name), "%" PRIu64 " calls not recorded (GRAPE_TIMELINE_MAX_MB)",
             p->tl->dropped);
    meta(out, p->pid, 0, "process_labels", "labels", name, 0, 0);
  }
  for (size_t i = 0; i < p->ntracks; i++) {
    uint32_t tid = p->tracks[i].tid;
    if (tid >= TID_NVTX_SE) {
      snprintf(name, sizeof(name), "thread %u: NVTX start/end ranges", tid - TID_NVTX_SE);
    } else if (tid >= TID_NVTX) {
      snprintf(name, sizeof(name), "thread %u: NVTX ranges", tid - TID_NVTX);
    } else if (tid >= TID_STREAM) {
      uint64_t key = p->streams[tid - TID_STREAM];
      if (key == 1)
        snprintf(name, sizeof(name), "stream (legacy default)");
      else
        snprintf(name, sizeof(name), "stream 0x%" PRIx64, key);
    } else if (tid >= TID_SUBMIT) {
      snprintf(name, sizeof(name), "thread %u: grape submits held work", tid - TID_SUBMIT);
    } else {
      snprintf(name, sizeof(name), "thread %u: CUDA calls", tid);
    }
    meta(out, p->pid, tid, "thread_name", "name", name, 0, 0);
    /* Host rows first, each thread's NVTX ranges above its calls and its
     * submissions under them, then the streams. */
    long sort = tid >= TID_NVTX_SE ? 4L * (tid - TID_NVTX_SE) + 1
                : tid >= TID_NVTX ? 4L * (tid - TID_NVTX)
                : tid >= TID_STREAM ? 2000000L + (long)(tid - TID_STREAM)
                : tid >= TID_SUBMIT ? 4L * (tid - TID_SUBMIT) + 3 : 4L * tid + 2;
    meta(out, p->pid, tid, "thread_sort_index", "sort_index", NULL, sort, 0);
  }
}

/* Device records by device start (ties by record order); arg: the records. */
static int by_dev_start(const void* a, const void* b, void* arg) {
  const grape_trace_tl_op_t* ops = arg;
  uint32_t x = *(const uint32_t*)a, y = *(const uint32_t*)b;
  uint64_t dx = ops[x].dev_start, dy = ops[y].dev_start;
  return dx != dy ? (dx < dy ? -1 : 1) : (x < y ? -1 : x > y);
}

static int proc_events(FILE* out, proc_t* p, size_t* flow_id, grape_trace_export_stats_t* st) {
  const grape_trace_timeline_t* tl = p->tl;
  char name[300], args[400];
  /* Device slices first (a held call's arrow points at a later record's), in
   * device order: a submission made inside a call (a flush) ran before the
   * call's own work though it started later on the host. */
  uint32_t* order = malloc(((size_t)tl->count + 1) * sizeof(*order));
  if (order == NULL)
    return -ENOMEM;
  uint32_t ndev = 0;
  for (uint32_t i = 0; i < tl->count; i++)
    if (has_dev(&tl->ops[i]))
      order[ndev++] = i;
  qsort_r(order, ndev, sizeof(*order), by_dev_start, (void*)tl->ops);
  for (uint32_t k = 0; k < ndev; k++) {
    uint32_t i = order[k];
    const grape_trace_tl_op_t* op = &tl->ops[i];
    name_of(p, i, name, sizeof(name));
    args_of(p, i, args, sizeof(args));
    const char* cat = op->kind == GRAPE_TRACE_TL_GRAPH ? "graph"
                      : op->kind == GRAPE_TRACE_OP_KERNEL ? "kernel" : "memory";
    slice(out, p, stream_tid(p, op->stream), (int64_t)op->dev_start + p->shift,
          (int64_t)op->dev_end + p->shift, name, cat, args, NULL, range_name(p, op), st,
          &p->dev_at[i]);
  }
  for (uint32_t i = 0; i < tl->count; i++) {
    const grape_trace_tl_op_t* op = &tl->ops[i];
    /* A program's call is named after the entry point it called, as nsys's
     * CUDA API row does (its kernel in the args); the shim's submissions,
     * and calls of traces that predate the names, after their work. */
    char work[300];
    name_of(p, i, work, sizeof(work));
    const char* api = api_name(p, op);
    snprintf(name, sizeof(name), "%s", api != NULL ? api : work);
    if (op->how == GRAPE_TRACE_TL_HELD)
      strncat(name, " (held)", sizeof(name) - strlen(name) - 1);
    if (op->how == GRAPE_TRACE_TL_SUBMIT)
      snprintf(name + strlen(name), sizeof(name) - strlen(name), " %s",
               op->kind == GRAPE_TRACE_TL_GRAPH ? "launched" : "submitted");
    args_of(p, i, args, sizeof(args));
    const char* cat = op->how == GRAPE_TRACE_TL_HELD ? "held"
                      : op->how == GRAPE_TRACE_TL_SUBMIT ? "grape" : "api";
    int64_t at;
    uint32_t tid = host_tid(op);
    slice(out, p, tid, (int64_t)op->host_start + p->shift, (int64_t)op->host_end + p->shift, name,
          cat, args, api != NULL && op->kind == GRAPE_TRACE_OP_KERNEL ? work : NULL,
          range_name(p, op), st, &at);
    /* The arrow to the device work: its own, or the submission's that ran it. */
    uint32_t dev = op->how == GRAPE_TRACE_TL_HELD ? p->ran_in[i] : i;
    if (dev != GRAPE_TRACE_NONE && p->dev_at[dev] >= 0)
      flow(out, p, ++*flow_id, tid, at, stream_tid(p, tl->ops[dev].stream), p->dev_at[dev], st);
  }
  free(order);
  nvtx_events(out, p, st);
  return 0;
}

static void proc_free(proc_t* p) {
  free(p->tracks);
  free(p->streams);
  free(p->dev_at);
  free(p->ran_in);
  free(p->ran_for);
}

int grape_trace_export_timeline(const grape_trace_t* const* traces, size_t n, FILE* out,
                                grape_trace_export_stats_t* st) {
  grape_trace_export_stats_t local;
  if (st == NULL)
    st = &local;
  memset(st, 0, sizeof(*st));
  proc_t* ps = calloc(n + 1, sizeof(*ps));
  if (ps == NULL)
    return -ENOMEM;
  int rc = 0;
  uint64_t mono0 = UINT64_MAX;   /* the earliest origin on the shared clock */
  for (size_t k = 0; k < n; k++) {
    ps[k].t = traces[k];
    ps[k].tl = grape_trace_timeline(traces[k]);
    if (ps[k].tl == NULL) {
      rc = -EINVAL;
      goto done;
    }
    if (strcmp(ps[k].tl->clock, "monotonic") == 0 && ps[k].tl->origin_ns < mono0)
      mono0 = ps[k].tl->origin_ns;
    long long pid = grape_trace_info(traces[k])->pid > 0 ? grape_trace_info(traces[k])->pid : 1;
    for (size_t j = 0; j < k; j++)   /* two traces of one pid (two hosts): the next free one */
      if (ps[j].pid == pid) {
        pid++;
        j = (size_t)-1;
      }
    ps[k].pid = pid;
    if ((rc = proc_scan(&ps[k])) != 0)
      goto done;
  }
  for (size_t k = 0; k < n; k++)
    if (strcmp(ps[k].tl->clock, "monotonic") == 0)
      ps[k].shift = (int64_t)(ps[k].tl->origin_ns - mono0);
  fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"source\":\"grape\",\"view\":"
               "\"timeline\"},\"traceEvents\":[\n");
  size_t flow_id = 0;
  for (size_t k = 0; k < n; k++) {
    proc_meta(out, &ps[k], k == 0);
    if ((rc = proc_events(out, &ps[k], &flow_id, st)) != 0)
      goto done;
    st->processes++;
    for (size_t i = 0; i < ps[k].ntracks; i++)
      st->tracks += ps[k].tracks[i].slices > 0;
  }
  fprintf(out, "\n]}\n");
  rc = ferror(out) ? -EIO : 0;
done:
  for (size_t k = 0; k < n; k++)
    proc_free(&ps[k]);
  free(ps);
  return rc;
}

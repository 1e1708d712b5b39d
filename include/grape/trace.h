/* grape trace API: the trace file (docs/trace-format.md), its validating
 * reader, its writer, and offline replay of the recorded paths.
 *
 * A trace is what the shim saw in one process, kept so that it outlives the
 * process: the kernel images the device loaded, the functions launched from
 * them, the device allocations their parameters point into, and every
 * distinct control-flow path with one representative parameter set, its
 * occurrence count and (optionally) graph-mode outcome and measured times.
 *
 *   grape_trace_t* t;
 *   char err[256];
 *   if (grape_trace_load("run.grape", &t, err, sizeof(err)) < 0)
 *     fprintf(stderr, "%s\n", err);                 // names section and offset
 *   for (size_t i = 0; i < grape_trace_path_count(t); i++) {
 *     const grape_trace_path_t* p = grape_trace_path(t, i);
 *     ...p->fp, p->count, p->ops[0..p->nops)...
 *   }
 *   grape_trace_free(t);
 *
 * The same object is built by the shim at exit (grape_trace_new, then
 * grape_trace_add_*) and written with grape_trace_save, so writing what was
 * read gives the same bytes.
 *
 * DESIGN: one in-memory model, grape_trace_t, serves the writer, the reader,
 * replay and export. Its records are plain read-only structs (like
 * grape_gpu_spec_t in predict.h) rather than dozens of accessors; their
 * layout is versioned by GRAPE_TRACE_API_VERSION. The file format has its own
 * version, GRAPE_TRACE_FORMAT_VERSION: a reader refuses a newer one, and new
 * optional data goes into new section types, which older readers skip. The
 * reader validates every length, count, index and offset against the bytes
 * that are there before it allocates or reads, so a damaged file gives an
 * error naming the section and byte offset, never a crash, and memory stays
 * proportional to the file's size. Errors are negative errno values. A
 * grape_trace_t is not thread-safe; distinct ones are independent.
 */
#ifndef GRAPE_TRACE_H
#define GRAPE_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "grape/grape.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a public struct below changes layout. */
#define GRAPE_TRACE_API_VERSION 3   /* 2: grape_trace_tl_op_t.range, the NVTX ranges;
                                       3: its api, dir, grid, block, shmem */
/* Version written in a trace file's header; newer files are refused. */
#define GRAPE_TRACE_FORMAT_VERSION 1

/* "No index" in any index field. */
#define GRAPE_TRACE_NONE 0xffffffffu

typedef struct grape_trace_s grape_trace_t;

/* ---- Records ---- */

/* The process and device the trace came from. Strings are never NULL once
 * read (empty when unknown). */
typedef struct grape_trace_info_s {
  const char* grape_version;   /* of the writer, "0.1.0" */
  const char* device_name;     /* "NVIDIA H100 80GB HBM3" */
  uint32_t cc_major, cc_minor; /* compute capability; 0 when unknown */
  int32_t driver_version;      /* cuDriverGetVersion, e.g. 13000; 0 when unknown */
  uint64_t created_ns;         /* Unix time of writing, nanoseconds */
  int64_t pid;
  int32_t rank;                /* RANK, else LOCAL_RANK, else 0 */
  const char* program;         /* the traced executable's path */
  uint64_t regions;            /* regions the process ended (sum of all paths' counts) */
  uint64_t ops;                /* ops in those regions */
  uint64_t paths_omitted;      /* paths left out: size limit or out of memory */
  uint64_t images_omitted;     /* kernel images left out for the same reasons */
} grape_trace_info_t;

/* Kinds of images, as in grape/cubin.h's grape_image_kind_t. */
enum { GRAPE_TRACE_IMAGE_PTX = 1, GRAPE_TRACE_IMAGE_ELF = 2 };

/* One kernel image as the device loaded it (a cubin, or PTX). */
typedef struct grape_trace_image_s {
  uint64_t hash;               /* XXH3-64 of the bytes: images are stored once */
  uint32_t kind;               /* GRAPE_TRACE_IMAGE_* */
  uint32_t arch;               /* SM version: 90 for sm_90; 0 when unknown */
  const uint8_t* data;
  uint64_t size;
} grape_trace_image_t;

typedef struct grape_trace_param_s {
  uint32_t offset;             /* in the parameter block, bytes */
  uint32_t size;
} grape_trace_param_t;

/* One kernel. Ops name it by index; its id is what op signatures carry. */
typedef struct grape_trace_func_s {
  const char* name;            /* mangled; "" when the shim never learnt it */
  uint64_t id;                 /* XXH3-64 of name (the shim's function id) */
  uint32_t image;              /* index of the image holding it, or GRAPE_TRACE_NONE */
  int32_t registers;           /* per thread; -1 unknown */
  uint32_t static_smem;        /* bytes */
  int32_t max_threads;         /* per block; -1 unknown */
  uint32_t param_bytes;        /* parameter block size */
  uint32_t nparams;            /* GRAPE_TRACE_NONE: layout unknown */
  const grape_trace_param_t* params;
  const char* bodies;          /* object that held its CPU body for the simulated
                                  device when traced there; "" otherwise */
} grape_trace_func_t;

/* Allocation kinds (the shim's allocation map). */
enum {
  GRAPE_TRACE_ALLOC_DEVICE = 1,
  GRAPE_TRACE_ALLOC_ASYNC = 2,
  GRAPE_TRACE_ALLOC_MANAGED = 3,
  GRAPE_TRACE_ALLOC_MAPPED = 4,
  GRAPE_TRACE_ALLOC_HOST_PINNED = 5,
  GRAPE_TRACE_ALLOC_HOST_REGISTERED = 6,
};

typedef struct grape_trace_alloc_s {
  uint64_t id;                 /* the shim's allocation serial number */
  uint64_t base;               /* address in the traced process */
  uint64_t size;
  uint32_t kind;               /* GRAPE_TRACE_ALLOC_* */
} grape_trace_alloc_t;

/* A parameter word that held a pointer into a known allocation. */
typedef struct grape_trace_ptr_s {
  uint32_t offset;             /* of the 8-byte word in the parameter block (multiple of 8) */
  uint32_t alloc;              /* allocation index */
  uint64_t delta;              /* byte offset inside the allocation */
} grape_trace_ptr_t;

/* Op kinds, as in graphcache's grape_op_kind_t. */
enum { GRAPE_TRACE_OP_KERNEL = 1, GRAPE_TRACE_OP_MEMSET = 2, GRAPE_TRACE_OP_MEMCPY = 3 };

/* A memcpy op's flag: its destination was page-locked host memory (else
 * device memory). */
#define GRAPE_TRACE_OP_TO_HOST 8u

/* One op of a path: the shim's op signature, plus the representative
 * parameters of a kernel. */
typedef struct grape_trace_op_s {
  uint32_t kind;               /* GRAPE_TRACE_OP_* */
  uint32_t func;               /* kernel: function index or GRAPE_TRACE_NONE; else NONE */
  uint64_t sig_func;           /* kernel: the function id; memset/memcpy: byte count */
  uint32_t grid[3];            /* memset: value width in bytes in grid[0] */
  uint32_t block[3];
  uint32_t shmem;              /* dynamic shared memory, bytes */
  uint32_t flags;              /* the shim's GRAPE_SIG_* (1 cooperative, 2 'extra' parameters,
                                  4 a CUkernel; memcpy: GRAPE_TRACE_OP_TO_HOST) */
  uint64_t attrs_hash;         /* hash of the launch attributes, 0 when none */
  uint32_t param_bytes;
  uint32_t attr_bytes;         /* launch attributes as captured (CUlaunchAttribute[]) */
  uint32_t nptrs;
  const uint8_t* params;       /* param_bytes bytes */
  const uint8_t* attrs;        /* attr_bytes bytes */
  const grape_trace_ptr_t* ptrs;   /* by increasing offset */
} grape_trace_op_t;

/* Graph-mode outcome of a path (when the shim ran in graph mode). */
typedef struct grape_trace_graph_s {
  uint64_t hits;               /* times it was replayed as a graph */
  uint32_t built;              /* 1 when a graph was built for it */
  uint32_t ran_graph;          /* 1 graph, 0 eager */
  const char* why;             /* why it ran as it did ("" none) */
} grape_trace_graph_t;

/* Measured times of a path (grape replay --time). */
typedef struct grape_trace_times_s {
  uint32_t iters;              /* launches averaged */
  double path_ms;              /* the whole path as one graph, mean */
  const double* op_ms;         /* per op, mean; nops entries (negative: not timed) */
  const char* device;          /* where measured */
} grape_trace_times_t;

typedef struct grape_trace_path_s {
  uint64_t fp;                 /* the shim's path fingerprint */
  uint64_t count;              /* occurrences */
  uint32_t nops;
  const grape_trace_op_t* ops;
  const grape_trace_graph_t* graph;   /* NULL when none */
  const grape_trace_times_t* times;   /* NULL when none */
} grape_trace_path_t;

/* ---- The timeline (GRAPE_TIMELINE): every op in the order it was issued ---- */

/* What a timeline record is: an op kind (GRAPE_TRACE_OP_*), or a graph
 * launch: the shim's in graph mode (how SUBMIT, what: the held ops it ran),
 * or the program's own graph (how EAGER, what: its nodes, 0 when not known). */
enum { GRAPE_TRACE_TL_GRAPH = 4 };

/* How the op went: the program's call reached the driver at once (eager);
 * graph mode held it (the call returned without submitting: it runs later,
 * in a submission record on its stream); or the shim submitted held work
 * (a graph launch of `what` held ops, or one held op eagerly). */
enum { GRAPE_TRACE_TL_EAGER = 1, GRAPE_TRACE_TL_HELD = 2, GRAPE_TRACE_TL_SUBMIT = 3 };

/* A device time that was not measured. */
#define GRAPE_TRACE_TL_UNKNOWN UINT64_MAX

/* A copy's direction, as nsys names it ("Memcpy HtoD"): where its source and
 * destination lie (device: device, managed or mapped memory). */
enum {
  GRAPE_TRACE_DIR_NONE = 0,   /* not a copy, or not known */
  GRAPE_TRACE_DIR_HTOD = 1,
  GRAPE_TRACE_DIR_DTOH = 2,
  GRAPE_TRACE_DIR_DTOD = 3,
  GRAPE_TRACE_DIR_HTOH = 4,
};

typedef struct grape_trace_tl_op_s {
  uint32_t kind;               /* GRAPE_TRACE_OP_* or GRAPE_TRACE_TL_GRAPH */
  uint32_t how;                /* GRAPE_TRACE_TL_* */
  uint32_t func;               /* kernel: function index, or GRAPE_TRACE_NONE; else NONE */
  uint32_t thread;             /* host thread, numbered from 1 in order of first call */
  uint64_t stream;             /* the shim's stream key: the handle, 1 for the legacy
                                  stream, a per-thread value for a per-thread default one */
  uint64_t what;               /* kernel: function id; memset/copy: bytes; graph: held ops it
                                  ran (the shim's), or its nodes (the program's; 0 unknown) */
  uint64_t host_start, host_end;   /* the call on the host, ns after the timeline's origin */
  uint64_t dev_start, dev_end;     /* on the device, same clock; GRAPE_TRACE_TL_UNKNOWN
                                      when not measured (held calls) */
  uint64_t seq;                /* held: its number among its stream's held ops (from 0);
                                  submission: the number of the first held op it ran
                                  (it ran `what` ops for a graph, else 1); eager: 0 */
  uint32_t range;              /* NVTX: the innermost push/pop range open on its thread at
                                  the call, as 1 + its index in grape_trace_nvtx's ranges;
                                  0 when none (or the trace has no NVTX section) */
  uint32_t api;                /* the entry point the program called (cudaLaunchKernel,
                                  cuMemcpyHtoD_v2, ...) as 1 + its index in the timeline's
                                  apis; 0 for the shim's own submissions, or when not known */
  uint32_t dir;                /* a copy: GRAPE_TRACE_DIR_*; else GRAPE_TRACE_DIR_NONE */
  uint32_t grid[3], block[3];  /* a kernel: its launch's grid and block; else zeros */
  uint32_t shmem;              /* a kernel: its launch's dynamic shared memory, bytes */
} grape_trace_tl_op_t;

typedef struct grape_trace_timeline_s {
  const char* clock;           /* "monotonic" (CLOCK_MONOTONIC) or "simulated" (the sim's) */
  uint64_t origin_ns;          /* that clock's reading at time 0 */
  uint64_t dropped;            /* ops left out: past GRAPE_TIMELINE_MAX_MB */
  uint32_t count;
  const grape_trace_tl_op_t* ops;  /* by host_start, non-decreasing */
  uint32_t napis;
  const char* const* apis;     /* the entry points records name (their api), each once */
} grape_trace_timeline_t;

/* ---- NVTX ranges (with the timeline): the program's annotations ---- */

/* What an NVTX record is: a push/pop range, a start/end range, a mark. */
enum { GRAPE_TRACE_NVTX_PUSH = 1, GRAPE_TRACE_NVTX_START = 2, GRAPE_TRACE_NVTX_MARK = 3 };

typedef struct grape_trace_range_s {
  uint32_t kind;               /* GRAPE_TRACE_NVTX_* */
  uint32_t name;               /* index into grape_trace_nvtx_t.names */
  uint32_t thread;             /* host thread, numbered as the timeline's records are */
  uint32_t parent;             /* push/pop ranges and marks: the push/pop range open around
                                  it on its thread, 1 + its index; 0 when none */
  uint64_t start, end;         /* ns after the timeline's origin; a mark: end == start; a
                                  range still open at exit ends there */
} grape_trace_range_t;

typedef struct grape_trace_nvtx_s {
  uint32_t nnames;
  const char* const* names;    /* the range and mark names, each once */
  uint32_t count;
  const grape_trace_range_t* ranges;   /* in the order they started on each thread */
  uint64_t dropped;            /* records left out past the shim's limit */
} grape_trace_nvtx_t;

/* ---- Reading ---- */

/* Reads and validates the trace file at path (mapped, read in one pass).
 * @return 0 and *out, or a negative errno with err filled ("PATH: section
 * 'PATH' at byte 1234: ..."); err may be NULL. */
GRAPE_API int grape_trace_load(const char* path, grape_trace_t** out, char* err, size_t errlen);

/* The same for bytes in memory; the trace keeps pointers into data, which must
 * outlive it. */
GRAPE_API int grape_trace_load_mem(const void* data, size_t size, grape_trace_t** out, char* err,
                                   size_t errlen);

GRAPE_API const grape_trace_info_t* grape_trace_info(const grape_trace_t* t);
GRAPE_API size_t grape_trace_image_count(const grape_trace_t* t);
GRAPE_API const grape_trace_image_t* grape_trace_image(const grape_trace_t* t, size_t i);
GRAPE_API size_t grape_trace_func_count(const grape_trace_t* t);
GRAPE_API const grape_trace_func_t* grape_trace_func(const grape_trace_t* t, size_t i);
GRAPE_API size_t grape_trace_alloc_count(const grape_trace_t* t);
GRAPE_API const grape_trace_alloc_t* grape_trace_alloc(const grape_trace_t* t, size_t i);
GRAPE_API size_t grape_trace_path_count(const grape_trace_t* t);
GRAPE_API const grape_trace_path_t* grape_trace_path(const grape_trace_t* t, size_t i);

/* The timeline, or NULL when the trace has none. */
GRAPE_API const grape_trace_timeline_t* grape_trace_timeline(const grape_trace_t* t);

/* The NVTX ranges, or NULL when the trace has none (then every timeline
 * record's range is 0). */
GRAPE_API const grape_trace_nvtx_t* grape_trace_nvtx(const grape_trace_t* t);

GRAPE_API void grape_trace_free(grape_trace_t* t);

/* ---- Building and writing ---- */

/* An empty trace. @return 0 or -ENOMEM. */
GRAPE_API int grape_trace_new(grape_trace_t** out);

/* Sets the header; strings are copied (NULL means empty). */
GRAPE_API int grape_trace_set_info(grape_trace_t* t, const grape_trace_info_t* info);

/* Flag of grape_trace_add_image: keep a pointer to data instead of a copy
 * (it must outlive the trace: the shim's parsed images live until exit). */
#define GRAPE_TRACE_BORROW 0x1u

/* Adds an image unless one with the same bytes is there already.
 * @return 0 and its index in *idx, or -ENOMEM / -EINVAL. */
GRAPE_API int grape_trace_add_image(grape_trace_t* t, uint32_t kind, uint32_t arch, const void* data,
                                    uint64_t size, unsigned flags, uint32_t* idx);

/* Adds a function (copied). f->image must be an index already added, or NONE.
 * @return 0 and its index, or -ENOMEM / -EINVAL. */
GRAPE_API int grape_trace_add_func(grape_trace_t* t, const grape_trace_func_t* f, uint32_t* idx);

GRAPE_API int grape_trace_add_alloc(grape_trace_t* t, const grape_trace_alloc_t* a, uint32_t* idx);

/* Adds a path (deep copy; graph and times included when not NULL). Every
 * index it holds must already be in the trace, every pointer word inside its
 * parameters and its allocation. @return 0 and its index, or -ENOMEM / -EINVAL. */
GRAPE_API int grape_trace_add_path(grape_trace_t* t, const grape_trace_path_t* p, uint32_t* idx);

/* Replaces path i's graph-mode outcome / measured times (copied; NULL clears). */
GRAPE_API int grape_trace_set_graph(grape_trace_t* t, size_t i, const grape_trace_graph_t* g);
GRAPE_API int grape_trace_set_times(grape_trace_t* t, size_t i, const grape_trace_times_t* tm);

/* Replaces the timeline (copied; NULL clears). Every function index must be
 * in the trace already. @return 0, or -ENOMEM / -EINVAL (a bad record). */
GRAPE_API int grape_trace_set_timeline(grape_trace_t* t, const grape_trace_timeline_t* tl);

/* Replaces the NVTX ranges (copied; NULL clears). The trace must have its
 * timeline already, and every timeline record's range must be 0 or a range
 * of n. @return 0, or -ENOMEM / -EINVAL (a bad record or index). */
GRAPE_API int grape_trace_set_nvtx(grape_trace_t* t, const grape_trace_nvtx_t* n);

/* What a size-limited write left out. */
typedef struct grape_trace_save_stats_s {
  uint64_t bytes;              /* file size */
  uint64_t paths_written, paths_omitted;
  uint64_t images_written, images_omitted;
} grape_trace_save_stats_t;

/* Encodes t into a malloc'd buffer. With max_bytes > 0, paths that would make
 * the file larger are left out (most frequent first are kept; each left-out
 * path is counted in the header), and so are images no kept path needs; the
 * header, functions and allocations are always written. st may be NULL.
 * @return 0, or -ENOMEM / -EOVERFLOW. */
GRAPE_API int grape_trace_encode(const grape_trace_t* t, uint64_t max_bytes, uint8_t** buf,
                                 size_t* len, grape_trace_save_stats_t* st);

/* grape_trace_encode, then written to a temporary file beside path and renamed
 * over it, so path never holds half a trace. @return 0 or a negative errno
 * (err filled: what failed and why). */
GRAPE_API int grape_trace_save(const grape_trace_t* t, const char* path, uint64_t max_bytes,
                               grape_trace_save_stats_t* st, char* err, size_t errlen);

/* Expands a GRAPE_TRACE pattern: "%p" -> pid, "%r" -> rank, "%%" -> "%".
 * @return 0, or -ENAMETOOLONG when it does not fit in cap bytes. */
GRAPE_API int grape_trace_expand_path(const char* pattern, long pid, long rank, char* out,
                                      size_t cap);

/* ---- Offline replay ---- */

typedef struct grape_replay_opts_s {
  size_t sz;                   /* sizeof(grape_replay_opts_t) */
  const char* driver;          /* what to dlopen: "libcuda.so.1" or a path to one */
  int sim;                     /* the driver is the simulated device: find CPU bodies */
  const char* const* bodies;   /* extra objects holding CPU bodies (sim) */
  size_t nbodies;
  const uint64_t* paths;       /* fingerprints to replay; NULL = all */
  size_t npaths;
  long iters;                  /* timed launches per path (>= 1) */
  long warmup;                 /* untimed launches before them */
  int time;                    /* measure with events; results go into the trace's times */
  FILE* log;                   /* progress and per-path errors; NULL = silent */
  int sim_timed;               /* sim: a kernel without a CPU body runs timed, not computed
                                  (the caller has put "timed" in SIMCU_KERNELS) */
  /* Called with running 1 before each chosen path (path: how many of the
   * total chosen are done) and with running 0 after it, before its line in
   * log; NULL = not called. A caller built before these fields passes a
   * smaller sz: not called. */
  void (*progress)(void* arg, size_t path, size_t total, int running);
  void* progress_arg;
} grape_replay_opts_t;

typedef struct grape_replay_stats_s {
  size_t paths_replayed, paths_failed;
  uint64_t kernels_launched;   /* kernel nodes run: sum over paths of kernels x launches */
  char device[256];            /* name the driver reports */
} grape_replay_stats_t;

/* Replays t's paths on the device behind o->driver: loads the images,
 * allocates the recorded buffers (zero-filled), rewrites pointer words to
 * them, builds each path as a graph and launches it warmup + iters times.
 * With o->time, each path's graph time and each op's time are measured with
 * events and stored with grape_trace_set_times. A path that cannot be replayed
 * is skipped and counted; a missing driver, device or CPU body fails the whole
 * replay. @return 0 (some paths may have failed: see st) or a negative errno
 * with err filled. */
GRAPE_API int grape_replay_run(grape_trace_t* t, const grape_replay_opts_t* o,
                               grape_replay_stats_t* st, char* err, size_t errlen);

/* Writes the measured times of t (set by grape_replay_run) as CSV that
 * grape train and grape predict --csv read: one row per kernel op of each
 * timed path. device is the Device column. @return rows written, or -EIO. */
GRAPE_API long grape_replay_write_csv(const grape_trace_t* t, const char* device, FILE* out);

/* ---- Export ---- */

/* Duration of op j of path i in ms, or a negative value to leave it out. */
typedef double grape_trace_duration_fn(const grape_trace_t* t, size_t path, size_t op, void* arg);

/* Writes a Chrome trace-event JSON view of t's paths (chrome://tracing,
 * Perfetto): one track per path that has a slice, its ops as slices laid end
 * to end from 0 with durations from dur. label names where the durations come
 * from ("measured on ..."). *tracks (may be NULL): the tracks written.
 * @return slices written, or -EIO. */
GRAPE_API long grape_trace_export_chrome(const grape_trace_t* t, grape_trace_duration_fn* dur,
                                         void* arg, const char* label, FILE* out, size_t* tracks);

/* What grape_trace_export_timeline wrote. */
typedef struct grape_trace_export_stats_s {
  size_t processes, tracks;    /* tracks that hold at least one slice */
  size_t slices, flows;
  size_t clamped;              /* slices moved to start where the previous one on
                                  their track ended (device clock rounding) */
} grape_trace_export_stats_t;

/* Writes the timelines of n traces as one Chrome trace-event JSON file: per
 * trace a process, with a host row per thread (the program's calls; the
 * shim's submissions of held work on a row of their own), a row per stream
 * (device work where it ran) and flow arrows from each call to its device
 * work. Every trace must have a timeline. @return 0 or -EIO. */
GRAPE_API int grape_trace_export_timeline(const grape_trace_t* const* traces, size_t n, FILE* out,
                                          grape_trace_export_stats_t* st);

/* Checks one timeline record against trace t (kinds, indices, times).
 * @return NULL when it is good, else what is wrong. */
GRAPE_API const char* grape_trace_tl_op_check(const grape_trace_t* t, const grape_trace_tl_op_t* op);

/* Writes what t holds as one JSON object (grape inspect --json): header,
 * paths with their ops, kernels, images, allocations. @return 0 or -EIO. */
GRAPE_API long grape_trace_write_json(const grape_trace_t* t, FILE* out);

/* "kernel", "memset" or "memcpy"; "device", "host-pinned", ... ("?" unknown). */
GRAPE_API const char* grape_trace_op_kind_name(uint32_t kind);
GRAPE_API const char* grape_trace_alloc_kind_name(uint32_t kind);

/* A short display name of a kernel: demangled, without parameter list
 * ("void foo<int>(int*)" -> "foo<int>"), written into out. */
GRAPE_API const char* grape_trace_short_name(const char* mangled, char* out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif

/* The exit report.
 *
 * DESIGN: the report is built at exit from the counters and the path table, in
 * a growing heap buffer, then written in one go: to the log sink for 'stderr',
 * else to a temporary file renamed over the target, so a reader never sees half
 * a report. Route counts are kept per route, and every counted launch has exactly
 * one route, so launches_by_route adds up to launches by construction. With
 * GRAPE_PREDICT_GPU, predicted path times are computed here too, from a cache
 * of one prediction per distinct launch shape (never on the launch path). */
#include "report.h"

#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocmap.h"
#include "cublas.h"
#include "funcinfo.h"
#include "grape/grape.h"
#include "grape/predict.h"
#include "grape/report.h"
#include "state.h"
#include "log.h"
#include "capture.h"
#include "nvtx.h"
#include "real.h"
#include "graph.h"
#include "graphcache/cache.h"
#include "util/grow.h"
#include "util/json_str.h"
#include "bind.h"
#include "builder.h"
#include "util/write_all.h"
#include "outfile.h"
#include "trace.h"
#include "timeline.h"

/* The report's text, in a memory stream (open_memstream), so that the JSON
 * string writer of util/ writes into it as into any file. */
typedef struct buf_s {
  FILE* f;
  char* p;      /* the text, once buf_end has closed f */
  size_t len;
} buf_t;

static int buf_begin(buf_t* b) {
  b->p = NULL;
  b->len = 0;
  b->f = open_memstream(&b->p, &b->len);
  return b->f != NULL ? 0 : -ENOMEM;
}

/* Closes b. @return its text (malloc'd: the caller frees it), or NULL when
 * a write ran out of memory. */
static char* buf_end(buf_t* b) {
  int bad = ferror(b->f);
  if (fclose(b->f) != 0 || bad) {
    free(b->p);
    return NULL;
  }
  return b->p;
}

__attribute__((format(printf, 2, 3)))
static void put(buf_t* b, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(b->f, fmt, ap);
  va_end(ap);
}

#define ROUTE_NAME(r) #r,
static const char* const route_names[GRAPE_ROUTE_COUNT] = {GRAPE_REPORT_ROUTES(ROUTE_NAME)};
#define MODE_NAME(m) #m,
static const char* const mode_names[] = {GRAPE_REPORT_MODES(MODE_NAME)};

/* Why held ops went to the driver one by one, in graphcache's order. */
#define CAUSE_NAME(name, doc) #name,
static const char* const cause_names[] = {GRAPE_REPORT_FLUSH_CAUSES(CAUSE_NAME)};
_Static_assert(sizeof(cause_names) / sizeof(cause_names[0]) == GRAPE_GC_CAUSES,
               "grape/report.h lists every cause of graphcache/cache.h");

/* The report's counters, in GRAPE_REPORT_COUNTERS order. */
#define COUNTER_ENUM(name, doc) C_##name,
enum { GRAPE_REPORT_COUNTERS(COUNTER_ENUM) C_COUNT };

/* Kernel names by function id, for the ops of the top paths. */
typedef struct name_entry_s {
  uint64_t id;
  const char* name;
} name_entry_t;

typedef struct names_s {
  name_entry_t* v;
  size_t len, cap;
} names_t;

static void collect_name(const grape_func_t* f, void* arg) {
  names_t* n = arg;
  if (f->name == NULL)
    return;
  name_entry_t* v = grape__grow(n->v, &n->cap, n->len + 1, sizeof(*n->v), 256);
  if (v == NULL)
    return;
  n->v = v;
  /* Demangled here, at exit, and only for kernels that were launched. */
  const char* name = f->resolved ? grape__func_display_name((grape_func_t*)f) : f->name;
  n->v[n->len++] = (name_entry_t){f->id, name};
}

static int name_cmp(const void* a, const void* b) {
  const name_entry_t* x = a;
  const name_entry_t* y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

static const char* name_of(const names_t* n, uint64_t id) {
  name_entry_t key = {id, NULL};
  const name_entry_t* e = n->len ? bsearch(&key, n->v, n->len, sizeof(key), name_cmp) : NULL;
  return e ? e->name : NULL;
}

/* ---- Per kernel: calls over every path, predicted time ----
 * The report's "kernels" table (the shim's side of a kernel summary such as
 * nsys's cuda_gpu_kern_sum): every recorded path's kernels, weighted by how
 * often the path ran. Sorted by function id while built, then by calls. */

typedef struct ksum_s {
  uint64_t id;
  unsigned long long calls;
  double pred_ms;   /* count-weighted predicted time (GRAPE_PREDICT_GPU) */
} ksum_t;

typedef struct ksums_s {
  ksum_t* v;
  size_t len, cap;
  int oom;
} ksums_t;

static void ksum_take_path(const grape_gc_path_t* p, void* arg) {
  ksums_t* k = arg;
  for (uint32_t i = 0; i < p->nops; i++) {
    if (p->keys[i].kind != GRAPE_OP_KERNEL)
      continue;
    ksum_t* v = grape__grow(k->v, &k->cap, k->len + 1, sizeof(*k->v), 64);
    if (v == NULL) {
      k->oom = 1;
      return;
    }
    k->v = v;
    k->v[k->len++] = (ksum_t){p->keys[i].func, p->count, 0};
  }
}

static int ksum_cmp_id(const void* a, const void* b) {
  const ksum_t* x = a;
  const ksum_t* y = b;
  return x->id < y->id ? -1 : x->id > y->id;
}

static int ksum_cmp_calls(const void* a, const void* b) {
  const ksum_t* x = a;
  const ksum_t* y = b;
  return x->calls > y->calls ? -1 : x->calls < y->calls ? 1 : ksum_cmp_id(a, b);
}

/* Every kernel of every path of c, one entry per function, sorted by id. */
static void ksums_build(ksums_t* k, grape_gc_t* c) {
  if (c != NULL)
    grape_gc_each_path(c, ksum_take_path, k);
  if (k->len == 0)
    return;
  qsort(k->v, k->len, sizeof(*k->v), ksum_cmp_id);
  size_t n = 0;
  for (size_t i = 0; i < k->len; i++) {
    if (n > 0 && k->v[n - 1].id == k->v[i].id)
      k->v[n - 1].calls += k->v[i].calls;
    else
      k->v[n++] = k->v[i];
  }
  k->len = n;
}

static ksum_t* ksum_find(ksums_t* k, uint64_t id) {
  ksum_t key = {id, 0, 0};
  return k && k->len ? bsearch(&key, k->v, k->len, sizeof(key), ksum_cmp_id) : NULL;
}

/* A JSON string of the op: the kernel's short name (demangled, without the
 * parameter list and template arguments), "memset", "memcpy" or "?". */
static void put_op_name(buf_t* b, const names_t* n, const grape_op_key_t* k) {
  const char* name = k->kind == GRAPE_OP_MEMSET   ? "memset"
                     : k->kind == GRAPE_OP_MEMCPY ? "memcpy"
                                                  : name_of(n, k->func);
  if (name == NULL)
    name = "?";
  size_t len = strcspn(name, "(<");
  put(b, "\"");
  for (size_t i = 0; i < len && i < 120; i++)
    if (name[i] != '"' && name[i] != '\\' && (unsigned char)name[i] >= 0x20)
      put(b, "%c", name[i]);
  put(b, "\"");
}


/* ---- Predicted times (GRAPE_PREDICT_GPU) ----
 * Done here, at exit, never per launch: each distinct kernel launch (function,
 * grid, block, dynamic shared memory) is prepared and predicted once, with its
 * interval; a path's times are those of its kernels combined with the model's
 * launch gaps (grape_path_combine). */

typedef struct kpred_s {
  const grape_op_key_t* key;    /* the first op seen with this launch; NULL = free slot */
  const grape_op_dims_t* dims;
  grape_prediction_t pr;
} kpred_t;

typedef struct predictor_s {
  const grape_model_t* model;
  const grape_gpu_spec_t* gpu;
  const names_t* names;
  kpred_t* v;
  size_t cap, len;
} predictor_t;

static int same_launch(const kpred_t* a, const grape_op_key_t* k, const grape_op_dims_t* d) {
  return a->key->func == k->func && memcmp(a->dims, d, sizeof(*d)) == 0;
}

static size_t launch_hash(const grape_op_key_t* k, const grape_op_dims_t* d) {
  uint64_t h = k->func * 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 3; i++)
    h = (h ^ d->grid[i] ^ ((uint64_t)d->block[i] << 32)) * 0x100000001b3ull;
  return (size_t)((h ^ d->shmem) >> 17);
}

static void kernel_desc(const predictor_t* p, const grape_op_key_t* key, const grape_op_dims_t* d,
                        grape_kernel_desc_t* k) {
  memset(k, 0, sizeof(*k));
  k->name = name_of(p->names, key->func);
  memcpy(k->grid, d->grid, sizeof(k->grid));
  memcpy(k->block, d->block, sizeof(k->block));
  k->dyn_smem = d->shmem;
  k->regs = -1;
  k->op = GRAPE_OP_UNKNOWN;
}

static int cache_grow(predictor_t* p) {
  size_t ncap = p->cap ? p->cap * 2 : 256;
  kpred_t* nv = calloc(ncap, sizeof(*nv));
  if (nv == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < p->cap; i++) {
    if (p->v[i].key == NULL)
      continue;
    size_t j = launch_hash(p->v[i].key, p->v[i].dims) & (ncap - 1);
    while (nv[j].key != NULL)
      j = (j + 1) & (ncap - 1);
    nv[j] = p->v[i];
  }
  free(p->v);
  p->v = nv;
  p->cap = ncap;
  return 0;
}

/* Prediction of one kernel op, or NULL when out of memory. */
static const grape_prediction_t* kernel_pred(predictor_t* p, const grape_op_key_t* key,
                                             const grape_op_dims_t* d) {
  if (p->len * 2 >= p->cap && cache_grow(p) != 0)
    return NULL;
  size_t j = launch_hash(key, d) & (p->cap - 1);
  for (; p->v[j].key != NULL; j = (j + 1) & (p->cap - 1))
    if (same_launch(&p->v[j], key, d))
      return &p->v[j].pr;
  grape_kernel_desc_t k;
  grape_kernel_prep_t prep;
  kernel_desc(p, key, d, &k);
  grape_kernel_prepare(&k, &prep);
  p->v[j].key = key;
  p->v[j].dims = d;
  grape_predict_prepared(p->model, p->gpu, &prep, &p->v[j].pr);
  p->len++;
  return &p->v[j].pr;
}

/* A path's kernel predictions into out[0..*n) (kernels only: memsets and
 * copies are not modelled). @return 0, or -ENOMEM. */
static int path_kernels(predictor_t* p, const grape_gc_path_t* path, grape_prediction_t* out,
                        size_t* n) {
  *n = 0;
  for (uint32_t i = 0; i < path->nops; i++) {
    if (path->keys[i].kind != GRAPE_OP_KERNEL)
      continue;
    const grape_prediction_t* k = kernel_pred(p, &path->keys[i], &path->dims[i]);
    if (k == NULL)
      return -ENOMEM;
    out[(*n)++] = *k;
  }
  return 0;
}

/* A bound as JSON: null when there is none (infinite). */
static void put_bound(buf_t* b, const char* name, double v) {
  if (isfinite(v))
    put(b, ",\"%s\":%.17g", name, v);
  else
    put(b, ",\"%s\":null", name);
}

/* "api_times": each hooked symbol's calls and the host time of those timed
 * (one in GRAPE_API_SAMPLE, one in GRAPE_API_SAMPLE_LATE after a symbol's
 * first GRAPE_API_SAMPLE_EARLY calls on a thread, or every one: apitimes.h),
 * on the run's clock. */
static void put_api_times(buf_t* b, const grape_counters_t* cnt) {
  put(b,
      "\"api_times\":{\"sampled_every\":%d,\"sampled_every_later\":%d,"
      "\"later_from_call\":%d,\"clock\":\"%s\",\"calls\":{",
      __atomic_load_n(&grape__api_sample_mask, __ATOMIC_RELAXED) + 1,
      __atomic_load_n(&grape__api_sample_mask_late, __ATOMIC_RELAXED) + 1,
      GRAPE_API_SAMPLE_EARLY, grape__clock_simulated() ? "simulated" : "monotonic");
  int first = 1;
  for (int h = 0; h < GRAPE_HOOK_COUNT; h++) {
    if (cnt->api_seen[h] == 0)
      continue;
    put(b, "%s\"%s\":{\"calls\":%ld,\"timed\":%ld,\"ns\":%ld", first ? "" : ",",
        grape__hooks[h].name, cnt->api_seen[h], cnt->api_timed[h], cnt->api_ns[h]);
    if (cnt->api_timed[h] > 0)
      put(b, ",\"min_ns\":%ld,\"max_ns\":%ld", cnt->api_min_ns[h], cnt->api_max_ns[h]);
    put(b, "}");
    first = 0;
  }
  put(b, "}},");
}

/* "device_times": what the device measured, kept in the report so that a
 * report read again later still has its times. The simulated device's
 * statistics (simcu_private.h) as it gives them; null on a GPU. */
static void put_device_times(buf_t* b) {
  char* sim = grape__sim_stats_json();
  if (sim == NULL || sim[0] != '{') {
    put(b, "\"device_times\":null,");
    free(sim);
    return;
  }
  put(b, "\"device_times\":{\"source\":\"simulated\",%s,", sim + 1);
  free(sim);
}

/* "measured": the copies and memsets the timeline (GRAPE_TIMELINE) measured
 * with events, on any device, as the sim's table names them: the memory
 * table of a run on a GPU, where "device_times" is null. */
static void put_measured(buf_t* b) {
  static const char* const dirs[] = {"unknown", "HtoD", "DtoH", "DtoD", "HtoH"};
  grape_tl_mstat_t m[2][GRAPE_TRACE_DIR_HTOH + 1];
  if (!grape__timeline_memops(m))
    return;
  put(b, "\"measured\":{\"source\":\"timeline\",\"memops\":[");
  int first = 1;
  for (int kind = 0; kind < 2; kind++)
    for (int d = 0; d <= GRAPE_TRACE_DIR_HTOH; d++) {
      if (m[kind][d].count == 0)
        continue;
      put(b, "%s{\"kind\":\"%s\",\"dir\":\"%s\",\"count\":%llu,\"bytes\":%llu,\"ns\":%llu}",
          first ? "" : ",", kind ? "memset" : "memcpy", kind ? "device" : dirs[d],
          (unsigned long long)m[kind][d].count, (unsigned long long)m[kind][d].bytes,
          (unsigned long long)m[kind][d].ns);
      first = 0;
    }
  put(b, "]},");
}

/* The GPU GRAPE_PREDICT_GPU names, or NULL (unset, or unknown: warned once). */
static const grape_gpu_spec_t* predict_gpu(void) {
  const char* name = grape__option_str(grape_option_predict_gpu);
  if (name == NULL || *name == '\0')
    return NULL;
  const grape_gpu_spec_t* g = grape_gpu_find(name);
  if (g == NULL) {
    buf_t known;
    char* list = NULL;
    if (buf_begin(&known) == 0) {
      for (size_t i = 0; i < grape_gpu_count(); i++)
        put(&known, "%s%s", i ? ", " : "", grape_gpu_at(i)->name);
      list = buf_end(&known);
    }
    grape_log_warn("GRAPE_PREDICT_GPU names an unknown GPU '%s' (known: %s); no predicted times",
                   name, list ? list : "?");
    free(list);
  }
  return g;
}

/* Writes "predicted":{...} for paths all[0..n) (sorted, most frequent first;
 * the first ntop are the report's top paths) and their times into eager/graph;
 * "predicted":null when it cannot. */
static void put_predicted(buf_t* b, const grape_gpu_spec_t* g, const names_t* names,
                          const grape_gc_path_t* all, size_t n, size_t ntop, double* eager,
                          double* graph, ksums_t* ks) {
  grape_model_t* m = NULL;
  predictor_t p = {0};
  int rc = grape_model_load_default(&m);
  p.model = m;
  p.gpu = g;
  p.names = names;
  grape_path_prediction_t tot = {0}, *top = calloc(ntop < n ? ntop : n, sizeof(*top));
  /* Every path's kernels at once: the run's bounds combine their errors
   * (grape_run_combine), which summing the paths' bounds would not. */
  size_t nk = 0;
  for (size_t i = 0; i < n; i++)
    nk += all[i].nops;
  grape_prediction_t* kv = malloc((nk + 1) * sizeof(*kv));
  grape_run_path_t* rp = calloc(n + 1, sizeof(*rp));
  if (rc == 0 && ((top == NULL && n > 0) || kv == NULL || rp == NULL))
    rc = -ENOMEM;
  nk = 0;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    grape_path_prediction_t pp;
    rp[i].k = &kv[nk];
    rp[i].count = (double)all[i].count;
    if ((rc = path_kernels(&p, &all[i], &kv[nk], &rp[i].n)) != 0 ||
        (rc = grape_path_combine(m, rp[i].k, rp[i].n, &pp)) != 0)
      break;
    nk += rp[i].n;
    if (i < ntop)
      top[i] = pp;
    eager[i] = pp.eager_ms;
    graph[i] = pp.graph_ms;
    double c = (double)all[i].count;
    for (uint32_t j = 0; j < all[i].nops; j++) {
      ksum_t* e = all[i].keys[j].kind == GRAPE_OP_KERNEL ? ksum_find(ks, all[i].keys[j].func) : NULL;
      const grape_prediction_t* kp = e ? kernel_pred(&p, &all[i].keys[j], &all[i].dims[j]) : NULL;
      if (kp != NULL)
        e->pred_ms += c * kp->ms;
    }
  }
  if (rc == 0)
    rc = grape_run_combine(m, rp, n, &tot);
  if (rc != 0) {
    grape_log_warn("cannot predict path times for %s (%s); the report says predicted: null",
                   g->name, strerror(-rc));
    put(b, "\"predicted\":null,");
    goto done;
  }
  put(b, "\"predicted\":{\"gpu\":");
  grape__json_put_str(b->f, g->name);
  put(b, ",\"model\":\"grape\",\"paths_predicted\":%zu,\"level\":%.17g,"
      "\"kernels_known_regime\":%zu,\"kernels\":%zu,\"total_eager_ms\":%.17g",
      n, tot.level, tot.known, tot.kernels, tot.eager_ms);
  put_bound(b, "total_eager_lo_ms", tot.eager_lo_ms);
  put_bound(b, "total_eager_hi_ms", tot.eager_hi_ms);
  put(b, ",\"total_graph_ms\":%.17g", tot.graph_ms);
  put_bound(b, "total_graph_lo_ms", tot.graph_lo_ms);
  put_bound(b, "total_graph_hi_ms", tot.graph_hi_ms);
  put(b, ",\"paths\":[");
  for (size_t i = 0; i < ntop && i < n; i++) {
    char hex[17];
    grape__fp_hex(all[i].fp, hex);
    put(b, "%s{\"fingerprint\":\"%s\",\"count\":%llu,\"eager_ms\":%.17g", i ? "," : "", hex,
        (unsigned long long)all[i].count, top[i].eager_ms);
    put_bound(b, "eager_lo_ms", top[i].eager_lo_ms);
    put_bound(b, "eager_hi_ms", top[i].eager_hi_ms);
    put(b, ",\"graph_ms\":%.17g", top[i].graph_ms);
    put_bound(b, "graph_lo_ms", top[i].graph_lo_ms);
    put_bound(b, "graph_hi_ms", top[i].graph_hi_ms);
    put(b, ",\"kernels\":[");
    int first = 1;
    for (uint32_t j = 0; j < all[i].nops; j++) {
      const grape_op_key_t* key = &all[i].keys[j];
      const grape_op_dims_t* s = &all[i].dims[j];
      if (key->kind != GRAPE_OP_KERNEL)
        continue;
      const grape_prediction_t* k = kernel_pred(&p, key, s);   /* cached: no allocation */
      put(b, "%s{\"name\":", first ? "" : ",");
      const char* name = name_of(names, key->func);
      if (name)
        grape__json_put_str(b->f, name);
      else
        put(b, "null");
      put(b, ",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],\"smem\":%u,\"ms\":%.17g", s->grid[0],
          s->grid[1], s->grid[2], s->block[0], s->block[1], s->block[2], s->shmem,
          k ? k->ms : 0.0);
      put_bound(b, "lo_ms", k && k->has_interval ? k->lo_ms : INFINITY);
      put_bound(b, "hi_ms", k && k->has_interval ? k->hi_ms : INFINITY);
      put(b, ",\"regime\":\"%s\"}", grape_regime_name(k ? k->regime : GRAPE_REGIME_TRANSFER));
      first = 0;
    }
    put(b, "]}");
  }
  put(b, "]},");
done:
  free(top);
  free(kv);
  free(rp);
  free(p.v);
  grape_model_free(m);
}

/* ---- Concurrency (GRAPE_CONCURRENCY; docs/concurrency.md) ---- */

static const char* const why_names[GRAPE_WHY_COUNT] = {
  [GRAPE_WHY_EXACT] = "footprinted", [GRAPE_WHY_KERNEL] = "kernel_outside_library_call",
  [GRAPE_WHY_CALL] = "library_call_not_bounded", [GRAPE_WHY_COOPERATIVE] = "cooperative",
  [GRAPE_WHY_COLLECTIVE] = "collective_or_spin",
};

/* "concurrency":{...}, the run's plans and measured device times. */
static void put_concurrency(buf_t* b, const grape_gc_stats_t* st) {
  static const char* const modes[] = {"off", "observe", "safe", "go"};
  long m = grape__option_get(grape_option_concurrency);
  uint64_t targets = 0, checks = 0, valued = 0;
  double max_rel = 0;
  grape__cublas_go_stats(&targets, &checks, &valued, &max_rel);
  put(b, "\"concurrency\":{\"mode\":\"%s\",\"plans_built\":%llu,\"plans_kept\":%llu,"
      "\"plans_reverted\":%llu,\"plan_launches\":%llu,\"plan_fallbacks\":%llu,"
      "\"device_ns_chain\":%llu,\"timed_chain\":%llu,\"device_ns_plan\":%llu,\"timed_plan\":%llu,"
      "\"gain_ns\":%.0f,\"timed_gain\":%llu,",
      modes[m >= 0 && m <= 3 ? m : 1], (unsigned long long)st->conc_planned,
      (unsigned long long)st->conc_kept, (unsigned long long)st->conc_reverted,
      (unsigned long long)st->conc_launches, (unsigned long long)st->conc_fallbacks,
      (unsigned long long)st->dev_chain_ns, (unsigned long long)st->dev_chain_n,
      (unsigned long long)st->dev_plan_ns, (unsigned long long)st->dev_plan_n, st->conc_gain_ns,
      (unsigned long long)st->conc_gain_n);
  put(b, "\"plans_dropped_host\":%llu,\"plans_skipped_host\":%llu,\"plan_host_ns\":%.0f,\"plan_host_launches\":%llu,"
      "\"target_host_ns\":%.0f,\"targets_costed\":%llu,"
      "\"go_plans_built\":%llu,\"go_plans_kept\":%llu,\"go_plans_reverted\":%llu,"
      "\"go_launches\":%llu,\"go_gain_ns\":%.0f,\"go_timed_gain\":%llu,"
      "\"targets_applied\":%llu,\"numerics_checks\":%llu,\"numerics_checks_valued\":%llu,"
      "\"numerics_max_rel_diff\":%.9g},",
      (unsigned long long)st->conc_host_dropped, (unsigned long long)st->conc_host_skipped, st->plan_host_ns,
      (unsigned long long)st->plan_host_n, st->hint_host_ns, (unsigned long long)st->hint_host_n,
      (unsigned long long)st->go_planned, (unsigned long long)st->go_kept,
      (unsigned long long)st->go_reverted, (unsigned long long)st->go_launches, st->go_gain_ns,
      (unsigned long long)st->go_gain_n, (unsigned long long)targets, (unsigned long long)checks,
      (unsigned long long)valued, max_rel);
}

/* "verdicts": every path grouped by how its key ran and why (the words of
 * graphcache/views.c), with how many paths and sightings each has: graph
 * mode's decisions for the whole run, not only the top paths'. */
typedef struct verdict_s {
  int graph;
  const char* why;
  unsigned long long paths, count, hits;
} verdict_t;
typedef struct verdicts_s {
  verdict_t v[32];
  size_t n;
} verdicts_t;

static void verdict_add(const grape_gc_path_t* p, void* arg) {
  verdicts_t* vs = arg;
  const char* why = p->why ? p->why : "";
  int graph = p->way == GRAPE_GC_WAY_GRAPH;
  size_t i = 0;
  while (i < vs->n && !(vs->v[i].graph == graph && strcmp(vs->v[i].why, why) == 0))
    i++;
  if (i == vs->n) {
    if (vs->n == sizeof(vs->v) / sizeof(vs->v[0]))
      return;   /* the reasons are a short fixed list: never reached */
    vs->v[vs->n++] = (verdict_t){graph, why, 0, 0, 0};
  }
  vs->v[i].paths++;
  vs->v[i].count += p->count;
  vs->v[i].hits += p->hits;
}

static int verdict_order(const void* a, const void* b) {
  const verdict_t* x = a;
  const verdict_t* y = b;
  if (x->count != y->count)
    return x->count > y->count ? -1 : 1;
  return strcmp(x->why, y->why);
}

static void put_verdicts(buf_t* b, grape_gc_t* cache) {
  verdicts_t vs;
  vs.n = 0;
  if (cache != NULL)
    grape_gc_each_path(cache, verdict_add, &vs);
  qsort(vs.v, vs.n, sizeof(vs.v[0]), verdict_order);
  put(b, "\"verdicts\":[");
  for (size_t i = 0; i < vs.n; i++) {
    put(b, "%s{\"ran_as\":\"%s\",\"why\":", i ? "," : "", vs.v[i].graph ? "graph" : "eager");
    grape__json_put_str(b->f, vs.v[i].why);
    put(b, ",\"paths\":%llu,\"count\":%llu,\"hits\":%llu}", vs.v[i].paths, vs.v[i].count,
        vs.v[i].hits);
  }
  put(b, "],");
}

/* A top path's "dag":{...}: its dependence DAG when first seen (predicted
 * with nominal rates), why ops were barriers, and its key's plan. */
static void put_path_dag(buf_t* b, const grape_gc_path_t* p) {
  const grape_dag_summary_t* d = p->conc;
  if (d == NULL)
    return;
  put(b, ",\"dag\":{\"gemms\":%u,\"width\":%u,\"predicted_chain_ns\":%.0f,"
      "\"predicted_critical_path_ns\":%.0f,\"ops\":{", d->gemms, d->width, d->chain_ns, d->crit_ns);
  for (int w = 0; w < GRAPE_WHY_COUNT; w++)
    put(b, "%s\"%s\":%u", w ? "," : "", why_names[w], d->barriers[w]);
  put(b, "},\"plan\":");
  if (p->plan != NULL)
    grape__json_put_str(b->f, p->plan);
  else
    put(b, "null");
  put(b, "}");
}

/* The program's short name (its argv[0] as the kernel knows it). */
static void command_name(char* out, size_t cap) {
  int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, out, cap - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n <= 0)
    n = 0;
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == '\0'))
    n--;
  out[n] = '\0';
}

char* grape__report_json(int sig) {
  buf_t b;
  if (buf_begin(&b) != 0)
    return NULL;
  char comm[64];
  command_name(comm, sizeof(comm));
  long rank = grape__process_rank();
  put(&b, "{\"grape_version\":\"%u.%u.%u\",\"report_format\":%d,\"pid\":%ld,\"ppid\":%ld,\"rank\":",
      grape_version() / 10000, grape_version() / 100 % 100, grape_version() % 100,
      GRAPE_REPORT_FORMAT, (long)getpid(), (long)getppid());
  if (rank >= 0)
    put(&b, "%ld", rank);
  else
    put(&b, "null");
  put(&b, ",\"command\":");
  grape__json_put_str(b.f, comm);
  put(&b, ",\"signal\":");
  if (sig > 0)
    put(&b, "\"SIG%s\"", sigabbrev_np(sig) ? sigabbrev_np(sig) : "?");
  else
    put(&b, "null");
  put(&b, ",\"trace_file\":");
  if (grape__trace_written() != NULL)
    grape__json_put_str(b.f, grape__trace_written());
  else
    put(&b, "null");
  put(&b, ",\"mode\":\"%s\",", mode_names[grape__mode]);
  /* Libraries that would have bound past the shim (bind.c). */
  grape_bind_stats_t bs;
  grape__bind_stats(&bs);
  put(&b, "\"deep_bound\":{\"objects\":%ld,\"references\":%ld,\"bypasses\":%ld},",
      bs.objects, bs.slots, bs.bypasses);
  put(&b, "\"holding_stopped\":");
  if (grape__graphs_stopped() != NULL)
    grape__json_put_str(b.f, grape__graphs_stopped());
  else
    put(&b, "null");
  put(&b, ",");
  long want = grape__option_get(grape_option_top_paths);
  size_t ntop = want > 0 ? (size_t)want : 0;
  grape_gc_t* cache = grape__gc_peek();
  grape_gc_stats_t st;
  memset(&st, 0, sizeof(st));
  if (cache != NULL)
    grape_gc_stats(cache, &st);
  /* Predicting needs every path (the totals); the top ones come first. */
  const grape_gpu_spec_t* gpu = predict_gpu();
  int predict_on = grape__option_str(grape_option_predict_gpu) != NULL &&
                   *grape__option_str(grape_option_predict_gpu) != '\0';
  size_t nall = ntop;
  if (gpu != NULL && st.paths > nall)
    nall = (size_t)st.paths;
  grape_gc_path_t* top = nall && cache ? calloc(nall, sizeof(*top)) : NULL;
  size_t got = top ? grape_gc_top(cache, top, nall) : 0;
  size_t k = got < ntop ? got : ntop;
  double* pred = gpu != NULL && got ? calloc(2 * got, sizeof(*pred)) : NULL;
  grape_counters_t cnt;
  grape__counters_sum(&cnt);
  uint64_t c[C_COUNT] = {0};
  for (int r = 0; r < GRAPE_ROUTE_COUNT; r++)
    c[C_launches] += (uint64_t)cnt.launches[r];
  c[C_launches_captured] = (uint64_t)cnt.captured;
  c[C_launches_without_layout] = (uint64_t)cnt.param_unknown;
  c[C_regions] = st.regions;
  c[C_paths] = st.paths;
  c[C_ops] = st.ops;
  c[C_fingerprint_collisions] = st.collisions;
  c[C_allocations_live] = grape__alloc_count();
  c[C_graph_keys] = st.graph_keys;
  c[C_graph_hits] = st.graph_hits;
  c[C_graph_misses] = st.graph_misses;
  c[C_graphs_built] = st.graphs_built;
  c[C_graphs_evicted] = st.graphs_evicted;
  c[C_graph_build_failures] = st.build_failures;
  c[C_node_updates] = st.node_updates;
  c[C_graph_launches] = st.graph_launches;
  c[C_eager_ops] = st.eager_ops;
  c[C_submission_calls] = (uint64_t)cnt.submissions + st.submissions;
  c[C_est_graph_bytes] = st.graph_bytes_peak;
#define PUT_COUNTER(name, doc) put(&b, "\"" #name "\":%llu,", (unsigned long long)c[C_##name]);
  GRAPE_REPORT_COUNTERS(PUT_COUNTER)
  put(&b, "\"held_ops_flushed_eager\":{");
  for (int i = 0; i < GRAPE_GC_CAUSES; i++)
    put(&b, "%s\"%s\":%llu", i ? "," : "", cause_names[i], (unsigned long long)st.flushed[i]);
  put(&b, "},");
  put_concurrency(&b, &st);
  put_verdicts(&b, cache);
  /* The costs graph mode weighed: measured in this run where sampled. */
  static const char* const cost_names[GRAPE_GC_COST__COUNT] = {"launch", "graph_launch", "update",
                                                               "build_node", "shim_op"};
  put(&b, "\"builder\":{\"where\":");
  grape__json_put_str(b.f, grape__builder_why());
  put(&b, ",\"built_on_thread\":%llu,\"waits\":%llu,\"deferred\":%llu,\"stalls_program\":%s,"
      "\"for_recurring_sets\":%llu,\"exit_wait_ns\":%llu},",
      (unsigned long long)st.builds_async, (unsigned long long)st.build_waits,
      (unsigned long long)st.deferred, st.builds_stall ? "true" : "false",
      (unsigned long long)st.set_graphs, (unsigned long long)st.exit_wait_ns);
  put(&b, "\"costs\":{");
  for (int k = 0; k < GRAPE_GC_COST__COUNT; k++)
    put(&b, "%s\"%s\":{\"ns\":%.0f,\"samples\":%llu}", k ? "," : "", cost_names[k],
        st.cost_ns[k], (unsigned long long)st.cost_samples[k]);
  put(&b, "},");
  /* Whether replays paid for the shim's own work (graphcache/ledger.c). */
  put(&b, "\"ledger\":{\"saved_ns\":%.0f,\"cost_ns\":%.0f,\"windows\":%llu,\"losing\":%llu,"
          "\"pauses\":%llu,\"paused_ns\":%.0f,\"stood_down_at_op\":%llu,\"stood_down\":",
      st.ledger_saved_ns, st.ledger_cost_ns, (unsigned long long)st.ledger_windows,
      (unsigned long long)st.ledger_losing, (unsigned long long)st.pauses, st.paused_ns,
      (unsigned long long)st.stood_down_at_op);
  if (grape__stood_down() != NULL)
    grape__json_put_str(b.f, grape__stood_down());
  else
    put(&b, "null");
  put(&b, "},");
  put(&b, "\"launches_by_route\":{");
  for (int r = 0; r < GRAPE_ROUTE_COUNT; r++)
    put(&b, "%s\"%s\":%ld", r ? "," : "", route_names[r], cnt.launches[r]);
  put(&b, "},\"api_calls\":{");
  int first = 1;
  for (int h = 0; h < GRAPE_HOOK_COUNT; h++) {
    if (cnt.api_calls[h] == 0)
      continue;
    put(&b, "%s\"%s\":%ld", first ? "" : ",", grape__hooks[h].name, cnt.api_calls[h]);
    first = 0;
  }
  put(&b, "},");
  put_api_times(&b, &cnt);
  put_device_times(&b);
  put_measured(&b);
  grape__nvtx_report(b.f);
  long ranges_opened;
  if (grape__capture_ranges(&ranges_opened))   /* the tables then cover the ranges only */
    put(&b, "\"capture\":{\"range\":\"cudaProfilerApi\",\"opened\":%ld},", ranges_opened);
  names_t names = {NULL, 0, 0};
  if (got > 0 || (cache != NULL && st.ops > 0)) {
    grape__func_each(collect_name, &names);
    if (names.len)
      qsort(names.v, names.len, sizeof(*names.v), name_cmp);
  }
  /* "predicted" goes before top_paths, which then carry each path's times. */
  ksums_t ks = {NULL, 0, 0, 0};
  ksums_build(&ks, cache);
  if (gpu != NULL && (pred != NULL || got == 0))
    put_predicted(&b, gpu, &names, top, got, k, pred, pred ? pred + got : NULL, &ks);
  else if (predict_on)
    put(&b, "\"predicted\":null,");
  put(&b, "\"top_paths\":[");
  for (size_t i = 0; i < k; i++) {
    char hex[17];
    grape__fp_hex(top[i].fp, hex);
    char khex[17];
    grape__fp_hex(top[i].keyfp, khex);
    put(&b, "%s{\"fingerprint\":\"%s\",\"graph_key\":\"%s\",\"ops\":%u,\"count\":%llu,"
        "\"hits\":%llu,\"graph_hits\":%llu,\"ran_as\":\"%s\",\"why\":",
        i ? "," : "", hex, khex, top[i].nops, (unsigned long long)top[i].count,
        (unsigned long long)top[i].hits, (unsigned long long)top[i].key_hits, top[i].way == GRAPE_GC_WAY_GRAPH ? "graph" : "eager");
    grape__json_put_str(b.f, top[i].why);
    put(&b, ",\"kernels\":[");
    /* The first 16 ops name the path; longer ones end with "...". */
    for (uint32_t j = 0; j < top[i].nops && j < 16; j++) {
      if (j)
        put(&b, ",");
      put_op_name(&b, &names, &top[i].keys[j]);
    }
    if (top[i].nops > 16)
      put(&b, ",\"...\"");
    put(&b, "]");
    if (pred != NULL)
      put(&b, ",\"predicted_eager_ms\":%.17g,\"predicted_graph_ms\":%.17g", pred[i], pred[got + i]);
    put_path_dag(&b, &top[i]);
    put(&b, "}");
  }
  put(&b, "],\"kernels\":[");
  if (ks.len > 0)
    qsort(ks.v, ks.len, sizeof(*ks.v), ksum_cmp_calls);
  for (size_t i = 0; i < ks.len; i++) {
    const char* name = name_of(&names, ks.v[i].id);
    put(&b, "%s{\"name\":", i ? "," : "");
    grape__json_put_str(b.f, name ? name : "?");
    put(&b, ",\"calls\":%llu", ks.v[i].calls);
    if (pred != NULL)
      put(&b, ",\"predicted_ms\":%.17g", ks.v[i].pred_ms);
    put(&b, "}");
  }
  put(&b, "]}\n");
  free(ks.v);
  free(pred);
  free(names.v);
  free(top);
  return buf_end(&b);
}

/* ---- Writing ---- */

/* Writes len bytes of text to path through a temporary file beside it, put
 * in place by outfile.c (never replacing a file unless GRAPE_OVERWRITE) when
 * place is set, else renamed over path (grape run's private copy). The name
 * used goes to used. @return 0 or a negative errno, with a warning naming
 * path. */
static int write_file(const char* path, const char* text, size_t len, int place, char* used,
                      size_t cap) {
  char tmp[4200];
  snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
  int rc = 0, fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = -errno;
    grape_log_warn("cannot write the exit report %s: %s", path, strerror(errno));
    return rc;
  }
  rc = grape__write_all(fd, text, len, NULL);
  if (close(fd) != 0 && rc == 0)
    rc = -errno;
  if (rc == 0) {
    if (place)
      rc = grape__outfile_place("GRAPE_REPORT", tmp, path, used, cap);
    else if (rename(tmp, path) != 0)
      rc = -errno;
    else
      snprintf(used, cap, "%s", path);
  }
  if (rc != 0) {
    unlink(tmp);
    grape_log_warn("cannot write the exit report %s: %s", path, strerror(-rc));
  }
  return rc;
}

/* grape run's copy of this process's report, in its run folder. */
static int run_copy_path(char* path, size_t cap, const char* suffix) {
  const char* dir = grape__run_dir();
  if (dir == NULL)
    return -ENOENT;
  int n = snprintf(path, cap, "%s/report.%ld.json%s", dir, (long)getpid(), suffix);
  return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

void grape__report_mark_forked(void) {
  char mark[4200];
  if (run_copy_path(mark, sizeof(mark), ".forked") != 0)
    return;
  int fd = open(mark, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd >= 0)
    close(fd);
}

/* 1 when the process made CUDA launches (its own or captured). */
static int did_launch(void) {
  grape_counters_t cnt;
  grape__counters_sum(&cnt);
  long n = cnt.captured;
  for (int r = 0; r < GRAPE_ROUTE_COUNT; r++)
    n += cnt.launches[r];
  return n > 0;
}

int grape__report_write(int sig) {
  const char* target = grape__option_str(grape_option_report);
  int to_user = target != NULL && *target != '\0';
  /* A name with %r asks for one report per rank: a process without a rank
   * that launched nothing (torchrun, mpirun themselves) writes none there,
   * rather than take rank 0's name. */
  if (to_user && strstr(target, "%r") != NULL && grape__process_rank() < 0 && !did_launch())
    to_user = 0;
  char run_copy[4200];
  int to_run = run_copy_path(run_copy, sizeof(run_copy), "") == 0;
  if (!to_user && !to_run)
    return 0;
  char* json = grape__report_json(sig);
  if (json == NULL) {
    grape_log_warn("out of memory: no exit report");
    return -ENOMEM;
  }
  int rc = 0;
  char used[4200] = "";
  if (to_user && strcmp(target, "stderr") == 0) {
    grape__output(json);
  } else if (to_user) {
    char path[4096];
    if (grape__option_path(target, path, sizeof(path)) != 0) {
      rc = -ENAMETOOLONG;
      grape_log_warn("GRAPE_REPORT=%s: the name is too long; no exit report", target);
    } else {
      rc = write_file(path, json, strlen(json), 1, used, sizeof(used));
    }
  }
  if (to_run) {
    /* The copy names the user's file: the report with one more member. */
    size_t len = strlen(json);
    while (len > 0 && json[len - 1] != '}')
      len--;
    buf_t b;
    char* copy = NULL;
    if (len > 0 && buf_begin(&b) == 0) {
      put(&b, "%.*s,\"report_file\":", (int)(len - 1), json);
      if (used[0])
        grape__json_put_str(b.f, used);
      else
        put(&b, "%s", to_user && strcmp(target, "stderr") == 0 ? "\"stderr\"" : "null");
      put(&b, "}\n");
      copy = buf_end(&b);
    }
    char ignored[4200];
    int rc2 = copy ? write_file(run_copy, copy, strlen(copy), 0, ignored, sizeof(ignored)) : -ENOMEM;
    if (rc2 == 0 && run_copy_path(ignored, sizeof(ignored), ".forked") == 0)
      unlink(ignored);   /* a fork child's mark, when this process is one */
    if (rc == 0)
      rc = rc2;
    free(copy);
  }
  free(json);
  return rc;
}

/* The statistics tables of a run's reports beside the kernel table
 * (summary.c), as `nsys stats` gives them: the CUDA API calls with their host
 * time, the memory operations by kind and direction, and the paths. Each as
 * text or CSV. `grape report` prints them; `grape run --stats` too.
 *
 * DESIGN: every number comes from the reports themselves (the shim's
 * "api_times", its "device_times" or, for a process whose report lacks
 * them, its SIMCU_REPORT; "top_paths"), so a report read again later gives
 * the same tables. API host times are sampled by the shim by default (one
 * call in api_times.sampled_every per symbol and thread): a total is each
 * process's mean timed call times its calls, and the table says so; with
 * GRAPE_API_TIMES=every (grape run --stats, GRAPE_TIMELINE) every call is
 * timed and the totals are exact. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/csv_str.h"
#include "util/grow.h"

static double num(const grape_json_t* o, const char* key) {
  return grape__json_num(grape__json_get(o, key), 0);
}

/* ---- The CUDA API table ---- */

typedef struct arow_s {
  const char* name;      /* in a report's tree: valid while the summary is */
  double calls, timed, est_ns, min_ns, max_ns;
} arow_t;

typedef struct rows_s {
  arow_t* v;
  size_t n, cap;
} rows_t;

static arow_t* arow(rows_t* t, const char* name) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->v[i].name, name) == 0)
      return &t->v[i];
  arow_t* v = grape__grow(t->v, &t->cap, t->n + 1, sizeof(*t->v), 32);
  if (v == NULL)
    return NULL;
  t->v = v;
  memset(&t->v[t->n], 0, sizeof(t->v[0]));
  t->v[t->n].name = name;
  return &t->v[t->n++];
}

static int arow_by_time(const void* a, const void* b) {
  const arow_t* x = a;
  const arow_t* y = b;
  if (x->est_ns != y->est_ns)
    return x->est_ns > y->est_ns ? -1 : 1;
  return strcmp(x->name, y->name);
}

/* Every report's api_times added up, most host time first. @return the
 * clock's name ("simulated", "monotonic"; NULL when no report has times). */
static const char* api_build(const summary_t* s, rows_t* t, double* every, double* later,
                             double* from) {
  memset(t, 0, sizeof(*t));
  const char* clock = NULL;
  *every = *later = *from = 0;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* at = grape__json_get(s->rep[i], "api_times");
    const grape_json_t* calls = grape__json_get(at, "calls");
    if (calls == NULL || calls->kind != GRAPE_JSON_OBJ)
      continue;
    clock = grape__json_str(grape__json_get(at, "clock"));
    if (num(at, "sampled_every") > *every)   /* one sampled report makes the table sampled */
      *every = num(at, "sampled_every");
    if (num(at, "sampled_every_later") > *later) {   /* reports before it have none */
      *later = num(at, "sampled_every_later");
      *from = num(at, "later_from_call");
    }
    for (const grape_json_t* c = calls->child; c; c = c->next) {
      arow_t* r = arow(t, c->key);
      if (r == NULL)
        continue;
      double n = num(c, "calls"), timed = num(c, "timed");
      if (timed > 0) {
        double lo = num(c, "min_ns"), hi = num(c, "max_ns");
        r->min_ns = r->timed == 0 || lo < r->min_ns ? lo : r->min_ns;
        r->max_ns = r->timed == 0 || hi > r->max_ns ? hi : r->max_ns;
        r->est_ns += num(c, "ns") / timed * n;
      }
      r->calls += n;
      r->timed += timed;
    }
  }
  if (t->n > 1)
    qsort(t->v, t->n, sizeof(*t->v), arow_by_time);
  return clock ? clock : "unknown";
}

static void api_print(const summary_t* s, FILE* to, const char* prefix) {
  rows_t t;
  double every, later, from;
  const char* clock = api_build(s, &t, &every, &later, &from);
  if (t.n > 0) {
    double total = 0;
    for (size_t i = 0; i < t.n; i++)
      total += t.v[i].est_ns;
    if (every <= 1)
      fprintf(to, "%sCUDA API calls (%s host time, the shim's work included; every call timed):\n",
              prefix, clock);
    else if (later > every && from > 0)
      fprintf(to, "%sCUDA API calls (%s host time, the shim's work included; 1 call in %.0f timed, "
                  "1 in %.0f after a symbol's first %.0f on a thread, totals estimated from them: "
                  "GRAPE_API_TIMES=every times all):\n", prefix, clock, every, later, from);
    else
      fprintf(to, "%sCUDA API calls (%s host time, the shim's work included; 1 call in %.0f timed, "
                  "totals estimated from them: GRAPE_API_TIMES=every times all):\n", prefix, clock,
              every);
    fprintf(to, "%s  %7s %11s %9s %10s %10s %10s  name\n", prefix, "time(%)", "total(ms)", "calls",
            "avg(us)", "min(us)", "max(us)");
    for (size_t i = 0; i < t.n; i++) {
      const arow_t* r = &t.v[i];
      fprintf(to, "%s  %7.1f %11.3f %9.0f", prefix, total > 0 ? 100 * r->est_ns / total : 0.0,
              r->est_ns / 1e6, r->calls);
      if (r->timed > 0)
        fprintf(to, " %10.2f %10.2f %10.2f", r->est_ns / r->calls / 1e3, r->min_ns / 1e3,
                r->max_ns / 1e3);
      else
        fprintf(to, " %10s %10s %10s", "-", "-", "-");
      fprintf(to, "  %s\n", r->name);
    }
  }
  free(t.v);
}

static int api_csv(const summary_t* s, FILE* to) {
  rows_t t;
  double every, later, from;
  const char* clock = api_build(s, &t, &every, &later, &from);
  fprintf(to, "name,calls,timed,total_ms,avg_us,min_us,max_us,clock\n");
  for (size_t i = 0; i < t.n; i++) {
    const arow_t* r = &t.v[i];
    grape__csv_put_str(to, r->name);
    fprintf(to, ",%.0f,%.0f,", r->calls, r->timed);
    if (r->timed > 0)
      fprintf(to, "%.6f,%.3f,%.3f,%.3f", r->est_ns / 1e6, r->est_ns / r->calls / 1e3,
              r->min_ns / 1e3, r->max_ns / 1e3);
    else
      fprintf(to, ",,,");
    fprintf(to, ",%s\n", clock);
  }
  free(t.v);
  return ferror(to) ? -1 : 0;
}

/* ---- The memory-operation table ---- */

typedef struct mrow_s {
  const char* kind;
  const char* dir;
  double count, bytes, ns;
} mrow_t;

/* Whether a SIMCU_REPORT's process has a report that keeps its times. */
static int covered(const summary_t* s, const grape_json_t* sim) {
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* d = grape__json_get(s->rep[i], "device_times");
    if (num(s->rep[i], "pid") == num(sim, "pid") && d != NULL && d->kind == GRAPE_JSON_OBJ)
      return 1;
  }
  return 0;
}

/* Whether a report's process has a SIMCU_REPORT (whose table then stands for it). */
static int has_sim(const summary_t* s, const grape_json_t* rep) {
  for (size_t i = 0; i < s->nsim; i++)
    if (num(s->sim[i], "pid") == num(rep, "pid"))
      return 1;
  return 0;
}

static void mem_add(mrow_t* v, size_t* n, size_t cap, const grape_json_t* from) {
  const grape_json_t* ms = grape__json_get(from, "memops");
  for (const grape_json_t* m = ms ? ms->child : NULL; m; m = m->next) {
    const char* kind = grape__json_str(grape__json_get(m, "kind"));
    const char* dir = grape__json_str(grape__json_get(m, "dir"));
    if (kind == NULL || dir == NULL)
      continue;
    size_t i = 0;
    while (i < *n && !(strcmp(v[i].kind, kind) == 0 && strcmp(v[i].dir, dir) == 0))
      i++;
    if (i == *n) {
      if (*n == cap)
        continue;
      v[(*n)++] = (mrow_t){kind, dir, 0, 0, 0};
    }
    v[i].count += num(m, "count");
    v[i].bytes += num(m, "bytes");
    v[i].ns += num(m, "ns");
  }
}

static int mrow_by_time(const void* a, const void* b) {
  const mrow_t* x = a;
  const mrow_t* y = b;
  if (x->ns != y->ns)
    return x->ns > y->ns ? -1 : 1;
  int c = strcmp(x->kind, y->kind);
  return c ? c : strcmp(x->dir, y->dir);
}

/* @return rows in v (cap 16: two kinds, five directions). *measured: set
 * when some rows come from a report's timeline ("measured": a GPU's, whose
 * report has no "device_times") rather than the simulated device. */
static size_t mem_build(const summary_t* s, mrow_t* v, size_t cap, int* measured) {
  size_t n = 0;
  *measured = 0;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* d = grape__json_get(s->rep[i], "device_times");
    const grape_json_t* m = grape__json_get(s->rep[i], "measured");
    if (d != NULL && d->kind == GRAPE_JSON_OBJ) {
      mem_add(v, &n, cap, d);
    } else if (m != NULL && m->kind == GRAPE_JSON_OBJ && !has_sim(s, s->rep[i])) {
      mem_add(v, &n, cap, m);
      *measured = 1;
    }
  }
  for (size_t i = 0; i < s->nsim; i++)
    if (!covered(s, s->sim[i]))
      mem_add(v, &n, cap, s->sim[i]);
  if (n > 1)
    qsort(v, n, sizeof(*v), mrow_by_time);
  return n;
}

static void mem_print(const summary_t* s, FILE* to, const char* prefix) {
  mrow_t v[16];
  int measured;
  size_t n = mem_build(s, v, 16, &measured);
  if (n == 0)
    return;
  double total = 0;
  for (size_t i = 0; i < n; i++)
    total += v[i].ns;
  fprintf(to, "%smemory operations (%s device time):\n", prefix,
          measured ? "measured (GRAPE_TIMELINE's events; not inside graph launches)" : "simulated");
  fprintf(to, "%s  %7s %11s %9s %12s %10s  operation\n", prefix, "time(%)", "total(ms)", "count",
          "total(MB)", "avg(us)");
  for (size_t i = 0; i < n; i++)
    fprintf(to, "%s  %7.1f %11.3f %9.0f %12.3f %10.2f  %s %s\n", prefix,
            total > 0 ? 100 * v[i].ns / total : 0.0, v[i].ns / 1e6, v[i].count, v[i].bytes / 1e6,
            v[i].count > 0 ? v[i].ns / v[i].count / 1e3 : 0.0, v[i].kind, v[i].dir);
}

static int mem_csv(const summary_t* s, FILE* to) {
  mrow_t v[16];
  int measured;
  size_t n = mem_build(s, v, 16, &measured);
  fprintf(to, "kind,dir,count,bytes,total_ms,avg_us\n");
  for (size_t i = 0; i < n; i++)
    fprintf(to, "%s,%s,%.0f,%.0f,%.6f,%.3f\n", v[i].kind, v[i].dir, v[i].count, v[i].bytes,
            v[i].ns / 1e6, v[i].count > 0 ? v[i].ns / v[i].count / 1e3 : 0.0);
  return ferror(to) ? -1 : 0;
}

/* ---- The path table ---- */

/* One path's first kernels, joined by spaces, into out. */
static void path_kernels(const grape_json_t* p, char* out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  const grape_json_t* k = grape__json_get(p, "kernels");
  for (const grape_json_t* e = k ? k->child : NULL; e && n + 1 < cap; e = e->next) {
    const char* name = grape__json_str(e);
    if (name != NULL)
      n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? " " : "", name);
  }
  if (n >= cap)
    out[cap - 1] = '\0';
}

static double opt_num(const grape_json_t* o, const char* key) {
  const grape_json_t* v = grape__json_get(o, key);
  return v != NULL && v->kind == GRAPE_JSON_NUM ? v->num : -1;
}

static void paths_print(const summary_t* s, FILE* to, const char* prefix) {
  int header = 0;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* top = grape__json_get(s->rep[i], "top_paths");
    for (const grape_json_t* p = top ? top->child : NULL; p; p = p->next) {
      if (!header) {
        fprintf(to, "%spaths (each process's most frequent; GRAPE_TOP_PATHS):\n", prefix);
        fprintf(to, "%s  %8s %16s %8s %6s %-5s %8s %12s %12s  kernels\n", prefix, "pid",
                "fingerprint", "count", "ops", "ran", "replayed", "pred eager", "pred graph");
        header = 1;
      }
      const char* fp = grape__json_str(grape__json_get(p, "fingerprint"));
      const char* way = grape__json_str(grape__json_get(p, "ran_as"));
      char kernels[96];
      path_kernels(p, kernels, sizeof(kernels));
      fprintf(to, "%s  %8.0f %16s %8.0f %6.0f %-5s", prefix, num(s->rep[i], "pid"), fp ? fp : "?",
              num(p, "count"), num(p, "ops"), way ? way : "-");
      double hits = opt_num(p, "hits");   /* the path's own replays (older reports: none) */
      if (hits >= 0)
        fprintf(to, " %8.0f", hits);
      else
        fprintf(to, " %8s", "-");
      double e = opt_num(p, "predicted_eager_ms"), g = opt_num(p, "predicted_graph_ms");
      if (e >= 0 && g >= 0)
        fprintf(to, " %9.2f us %9.2f us", e * 1e3, g * 1e3);
      else
        fprintf(to, " %12s %12s", "-", "-");
      fprintf(to, "  %s\n", kernels[0] ? kernels : "-");
    }
  }
}

static int paths_csv(const summary_t* s, FILE* to) {
  fprintf(to, "pid,fingerprint,graph_key,count,ops,ran_as,why,hits,key_graph_hits,"
              "predicted_eager_ms,predicted_graph_ms,kernels\n");
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* top = grape__json_get(s->rep[i], "top_paths");
    for (const grape_json_t* p = top ? top->child : NULL; p; p = p->next) {
      const char* fp = grape__json_str(grape__json_get(p, "fingerprint"));
      const char* key = grape__json_str(grape__json_get(p, "graph_key"));
      const char* way = grape__json_str(grape__json_get(p, "ran_as"));
      const char* why = grape__json_str(grape__json_get(p, "why"));
      char kernels[4096];
      path_kernels(p, kernels, sizeof(kernels));
      fprintf(to, "%.0f,%s,%s,%.0f,%.0f,%s,", num(s->rep[i], "pid"), fp ? fp : "", key ? key : "",
              num(p, "count"), num(p, "ops"), way ? way : "");
      grape__csv_put_str(to, why ? why : "");
      double hits = opt_num(p, "hits");
      if (hits >= 0)
        fprintf(to, ",%.0f", hits);
      else
        fprintf(to, ",");
      fprintf(to, ",%.0f,", num(p, "graph_hits"));
      double e = opt_num(p, "predicted_eager_ms"), g = opt_num(p, "predicted_graph_ms");
      if (e >= 0 && g >= 0)
        fprintf(to, "%.6f,%.6f,", e, g);
      else
        fprintf(to, ",,");
      grape__csv_put_str(to, kernels);
      fputc('\n', to);
    }
  }
  return ferror(to) ? -1 : 0;
}

/* ---- Entry points ---- */

int stats_table_parse(const char* name, stats_table_t* out) {
  static const char* const names[] = {"kernels", "api", "memops", "paths", "nvtx", "nvtx-kernels"};
  for (int i = 0; i < 6; i++)
    if (strcasecmp(name, names[i]) == 0) {
      *out = (stats_table_t)i;
      return 0;
    }
  return -1;
}

void stats_print(const summary_t* s, FILE* to, const char* prefix) {
  api_print(s, to, prefix);
  mem_print(s, to, prefix);
  stats_nvtx_print(s, to, prefix);
  paths_print(s, to, prefix);
}

int stats_csv(const summary_t* s, FILE* to, stats_table_t table, summary_sort_t sort) {
  switch (table) {
  case STATS_KERNELS: return summary_kernels_csv(s, to, sort);
  case STATS_API: return api_csv(s, to);
  case STATS_MEMOPS: return mem_csv(s, to);
  case STATS_PATHS: return paths_csv(s, to);
  case STATS_NVTX: return stats_nvtx_csv(s, to, 0);
  case STATS_NVTX_KERNELS: return stats_nvtx_csv(s, to, 1);
  }
  return -1;
}

/* The NVTX tables of a run's reports, as nsys gives them: each range's
 * instances and host time (nsys's nvtx_sum), and the kernels launched inside
 * each range (its nvtx_kern_sum: under every push/pop range open at the
 * launch, so nested ranges' rows overlap). Text or CSV;
 * `grape report` and `grape run --stats` print them, `--table nvtx` and
 * `--table nvtx-kernels` write them as CSV.
 *
 * DESIGN: every number comes from the reports' "nvtx" objects (the shim
 * keeps them per process), added up over the processes: counts and totals
 * sum, minima and maxima are taken over them. A kernel's device time by
 * range is known only where the timeline measured it (GRAPE_TIMELINE: its
 * eager launches); "timed" says of how many launches, and the average is
 * over those. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

#include "util/csv_str.h"
#include "util/grow.h"

static double num(const grape_json_t* o, const char* key) {
  return grape__json_num(grape__json_get(o, key), 0);
}

typedef struct nrow_s {
  const char* a;           /* range name (in a report's tree) */
  const char* b;           /* style, or the kernel */
  double count, timed, ns, min_ns, max_ns;
} nrow_t;

typedef struct nrows_s {
  nrow_t* v;
  size_t n, cap;
} nrows_t;

static nrow_t* nrow(nrows_t* t, const char* a, const char* b) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->v[i].a, a) == 0 && strcmp(t->v[i].b, b) == 0)
      return &t->v[i];
  nrow_t* v = grape__grow(t->v, &t->cap, t->n + 1, sizeof(*t->v), 32);
  if (v == NULL)
    return NULL;
  t->v = v;
  memset(&t->v[t->n], 0, sizeof(t->v[0]));
  t->v[t->n].a = a;
  t->v[t->n].b = b;
  return &t->v[t->n++];
}

static int by_time(const void* x, const void* y) {
  const nrow_t* p = x;
  const nrow_t* q = y;
  if (p->ns != q->ns)
    return p->ns > q->ns ? -1 : 1;
  if (p->count != q->count)
    return p->count > q->count ? -1 : 1;
  int c = strcmp(p->a, q->a);
  return c ? c : strcmp(p->b, q->b);
}

/* Adds one report entry's time fields (timed: how many were timed). */
static void merge(nrow_t* r, double count, double timed, const grape_json_t* e) {
  if (timed > 0) {
    double lo = num(e, "min_ns"), hi = num(e, "max_ns");
    r->min_ns = r->timed == 0 || lo < r->min_ns ? lo : r->min_ns;
    r->max_ns = r->timed == 0 || hi > r->max_ns ? hi : r->max_ns;
    r->ns += num(e, "ns");
  }
  r->count += count;
  r->timed += timed;
}

/* kernels = 0: the ranges (a = name, b = style); 1: the kernels by range.
 * @return the clock's name of the first report with NVTX ranges. */
static const char* build(const summary_t* s, nrows_t* t, int kernels) {
  memset(t, 0, sizeof(*t));
  const char* clock = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* nv = grape__json_get(s->rep[i], "nvtx");
    if (nv == NULL || nv->kind != GRAPE_JSON_OBJ)
      continue;
    if (clock == NULL)
      clock = grape__json_str(grape__json_get(nv, "clock"));
    const grape_json_t* list = grape__json_get(nv, kernels ? "kernels" : "ranges");
    for (const grape_json_t* e = list ? list->child : NULL; e; e = e->next) {
      const char* a = grape__json_str(grape__json_get(e, kernels ? "range" : "name"));
      const char* b = grape__json_str(grape__json_get(e, kernels ? "kernel" : "style"));
      nrow_t* r = a && b ? nrow(t, a, b) : NULL;
      if (r == NULL)
        continue;
      if (kernels)
        merge(r, num(e, "calls"), num(e, "timed"), e);
      else
        merge(r, num(e, "count"), num(e, "count"), e);
    }
  }
  if (t->n > 1)
    qsort(t->v, t->n, sizeof(*t->v), by_time);
  return clock ? clock : "unknown";
}

void stats_nvtx_print(const summary_t* s, FILE* to, const char* prefix) {
  nrows_t t;
  const char* clock = build(s, &t, 0);
  if (t.n > 0) {
    double total = 0;
    for (size_t i = 0; i < t.n; i++)
      total += t.v[i].ns;
    fprintf(to, "%sNVTX ranges (%s host time from push to pop, or start to end):\n", prefix, clock);
    fprintf(to, "%s  %7s %11s %9s %10s %10s %10s  %-8s  range\n", prefix, "time(%)", "total(ms)",
            "count", "avg(us)", "min(us)", "max(us)", "style");
    for (size_t i = 0; i < t.n; i++) {
      const nrow_t* r = &t.v[i];
      fprintf(to, "%s  %7.1f %11.3f %9.0f %10.2f %10.2f %10.2f  %-8s  %s\n", prefix,
              total > 0 ? 100 * r->ns / total : 0.0, r->ns / 1e6, r->count,
              r->count > 0 ? r->ns / r->count / 1e3 : 0.0, r->min_ns / 1e3, r->max_ns / 1e3, r->b,
              r->a);
    }
  }
  free(t.v);
  build(s, &t, 1);
  if (t.n > 0) {
    fprintf(to, "%skernels by NVTX range (every push/pop range open at the launch, as nsys "
                "counts them: nested rows overlap; device time where GRAPE_TIMELINE measured "
                "it):\n", prefix);
    fprintf(to, "%s  %9s %9s %11s %10s %10s %10s  %-16s  kernel\n", prefix, "calls", "timed",
            "total(ms)", "avg(us)", "min(us)", "max(us)", "range");
    for (size_t i = 0; i < t.n; i++) {
      const nrow_t* r = &t.v[i];
      fprintf(to, "%s  %9.0f %9.0f", prefix, r->count, r->timed);
      if (r->timed > 0)
        fprintf(to, " %11.3f %10.2f %10.2f %10.2f", r->ns / 1e6, r->ns / r->timed / 1e3,
                r->min_ns / 1e3, r->max_ns / 1e3);
      else
        fprintf(to, " %11s %10s %10s %10s", "-", "-", "-", "-");
      fprintf(to, "  %-16s  %s\n", r->a, r->b);
    }
  }
  free(t.v);
}

int stats_nvtx_csv(const summary_t* s, FILE* to, int kernels) {
  nrows_t t;
  const char* clock = build(s, &t, kernels);
  if (kernels)
    fprintf(to, "range,kernel,calls,timed,total_ms,avg_us,min_us,max_us\n");
  else
    fprintf(to, "range,style,count,total_ms,avg_us,min_us,max_us,clock\n");
  for (size_t i = 0; i < t.n; i++) {
    const nrow_t* r = &t.v[i];
    grape__csv_put_str(to, r->a);
    fputc(',', to);
    grape__csv_put_str(to, r->b);
    if (kernels) {
      fprintf(to, ",%.0f,%.0f,", r->count, r->timed);
      if (r->timed > 0)
        fprintf(to, "%.6f,%.3f,%.3f,%.3f\n", r->ns / 1e6, r->ns / r->timed / 1e3, r->min_ns / 1e3,
                r->max_ns / 1e3);
      else
        fprintf(to, ",,,\n");
    } else {
      fprintf(to, ",%.0f,%.6f,%.3f,%.3f,%.3f,%s\n", r->count, r->ns / 1e6,
              r->count > 0 ? r->ns / r->count / 1e3 : 0.0, r->min_ns / 1e3, r->max_ns / 1e3,
              clock);
    }
  }
  free(t.v);
  return ferror(to) ? -1 : 0;
}

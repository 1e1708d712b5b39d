/* The summary of a run's reports: `grape run` prints it for the processes of
 * its command, `grape report` for report files a job left behind.
 *
 * DESIGN: reports are read through grape/report.h's member names, never by
 * scraping text. Every process that loaded the shim writes one report (a
 * launcher such as `timeout`, `torchrun` or `mpirun` runs the CUDA work in
 * children), so counters are added up, each process that did CUDA work gets
 * a line, and ranks (the report's "rank") get a line each when there are
 * several. The kernel table joins, by kernel name, the calls the shim
 * recorded (with predicted time under GRAPE_PREDICT_GPU) and what the
 * simulated device measured in simulated time (its SIMCU_REPORT, paired with
 * the shim's report by pid; names demangled as the shim demangles them). Its
 * time column is the simulated time where there is one, else the predicted
 * time, so that a table is never silently a mix of the two. */
#include "summary.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "grape/cubin.h"
#include "grape/report.h"
#include "util/csv_str.h"
#include "util/grow.h"

/* ---- Reading ---- */

static char* read_text(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  size_t cap = 0, len = 0;
  char* buf = NULL;
  for (;;) {
    char* nb = grape__grow(buf, &cap, len + 2, 1, 4096);   /* a byte to read, and the NUL */
    if (nb == NULL) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = nb;
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (n == 0)
      break;
  }
  fclose(f);
  if (buf != NULL)
    buf[len] = '\0';
  return buf;
}

static int push(grape_json_t*** v, size_t* n, size_t* cap, grape_json_t* j) {
  grape_json_t** nv = grape__grow(*v, cap, *n + 1, sizeof(**v), 8);
  if (nv == NULL)
    return -1;
  *v = nv;
  (*v)[(*n)++] = j;
  return 0;
}

int summary_add_file(summary_t* s, const char* path) {
  char* text = read_text(path);
  if (text == NULL) {
    fprintf(stderr, "grape: cannot read the report %s\n", path);
    return -1;
  }
  char err[256];
  grape_json_t* j = grape__json_parse(text, err, sizeof(err));
  free(text);
  if (j == NULL || j->kind != GRAPE_JSON_OBJ) {
    fprintf(stderr, "grape: ignoring a damaged report %s: %s\n", path, j ? "not an object" : err);
    grape__json_free(j);
    return -1;
  }
  int rc;
  if (grape__json_get(j, "report_format") != NULL)
    rc = push(&s->rep, &s->n, &s->cap, j);
  else if (grape__json_get(j, "kernels_executed") != NULL)
    rc = push(&s->sim, &s->nsim, &s->capsim, j);
  else {
    fprintf(stderr, "grape: %s is neither a grape report nor a SIMCU_REPORT\n", path);
    rc = -1;
  }
  if (rc != 0)
    grape__json_free(j);
  return rc;
}

/* ---- Measured times (grape replay --time) ---- */

typedef struct summary_meas_s {
  char* name;
  double ms, n;     /* summed per-launch times, and how many */
} meas_t;

/* The next CSV field of *p (quoted or not) into out; *p moves past it and its
 * comma. @return 1 when the field ended the line. */
static int csv_next(const char** p, char* out, size_t cap) {
  const char* s = *p;
  size_t n = 0;
  if (*s == '"') {
    for (s++; *s && !(*s == '"' && s[1] != '"'); s++) {
      if (*s == '"')
        s++;
      if (n + 1 < cap)
        out[n++] = *s;
    }
    if (*s == '"')
      s++;
  } else {
    for (; *s && *s != ',' && *s != '\n' && *s != '\r'; s++)
      if (n + 1 < cap)
        out[n++] = *s;
  }
  out[n] = '\0';
  int end = *s != ',';
  *p = *s == ',' ? s + 1 : s;
  return end;
}

long summary_add_timings(summary_t* s, const char* path) {
  char* text = read_text(path);
  if (text == NULL) {
    fprintf(stderr, "grape: cannot read the timings %s\n", path);
    return -1;
  }
  const char* p = text;
  char field[1024];
  int kcol = -1, tcol = -1, col = 0;
  for (int end = 0; !end && *p; col++) {
    end = csv_next(&p, field, sizeof(field));
    if (strcmp(field, "kernel") == 0)
      kcol = col;
    else if (strcmp(field, "time_ms") == 0)
      tcol = col;
  }
  if (kcol < 0 || tcol < 0) {
    fprintf(stderr, "grape: %s: not a timings CSV of grape replay --time (no kernel and time_ms "
                    "columns)\n", path);
    free(text);
    return -1;
  }
  long rows = 0, line = 1;
  while (*p) {
    while (*p == '\n' || *p == '\r')
      line += *p++ == '\n';
    if (*p == '\0')
      break;
    char name[1024] = "";
    double ms = -1;
    col = 0;
    for (int end = 0; !end && *p; col++) {
      end = csv_next(&p, field, sizeof(field));
      if (col == kcol)
        snprintf(name, sizeof(name), "%s", field);
      else if (col == tcol) {
        char* e;
        ms = strtod(field, &e);
        if (*e != '\0' || e == field)
          ms = -1;
      }
    }
    if (name[0] == '\0' || !(ms >= 0)) {
      fprintf(stderr, "grape: %s: line %ld has no kernel name or time; skipped\n", path, line);
      continue;
    }
    size_t i = 0;
    while (i < s->nmeas && strcmp(s->meas[i].name, name) != 0)
      i++;
    if (i == s->nmeas) {
      meas_t* v = grape__grow(s->meas, &s->capmeas, s->nmeas + 1, sizeof(*s->meas), 16);
      char* copy = strdup(name);
      if (v == NULL || copy == NULL) {
        s->meas = v ? v : s->meas;
        free(copy);
        break;
      }
      s->meas = v;
      s->meas[s->nmeas++] = (meas_t){copy, 0, 0};
    }
    s->meas[i].ms += ms;
    s->meas[i].n += 1;
    rows++;
  }
  free(text);
  return rows;
}

void summary_free(summary_t* s) {
  for (size_t i = 0; i < s->nmeas; i++)
    free(s->meas[i].name);
  free(s->meas);
  for (size_t i = 0; i < s->n; i++)
    grape__json_free(s->rep[i]);
  for (size_t i = 0; i < s->nsim; i++)
    grape__json_free(s->sim[i]);
  free(s->rep);
  free(s->sim);
}

static double num(const grape_json_t* o, const char* key) {
  return grape__json_num(grape__json_get(o, key), 0);
}

/* The sim's report of the process of report rep, or NULL. */
static const grape_json_t* sim_of(const summary_t* s, const grape_json_t* rep) {
  double pid = num(rep, "pid");
  for (size_t i = 0; i < s->nsim; i++)
    if (num(s->sim[i], "pid") == pid)
      return s->sim[i];
  return NULL;
}

/* The device's times a report keeps itself ("device_times"), or NULL. */
static const grape_json_t* dev_times(const grape_json_t* rep) {
  const grape_json_t* d = grape__json_get(rep, "device_times");
  return d != NULL && d->kind == GRAPE_JSON_OBJ ? d : NULL;
}

/* Whether a SIMCU_REPORT's process has a grape report that keeps the same
 * times itself: they are then counted once, from the grape report. */
static int sim_covered(const summary_t* s, const grape_json_t* sim) {
  double pid = num(sim, "pid");
  for (size_t i = 0; i < s->n; i++)
    if (num(s->rep[i], "pid") == pid && dev_times(s->rep[i]) != NULL)
      return 1;
  return 0;
}

/* The simulated end of the process of report rep (ms), or -1: from its own
 * device_times, else from its SIMCU_REPORT. */
static double sim_end_ms(const summary_t* s, const grape_json_t* rep) {
  const grape_json_t* d = dev_times(rep);
  if (d != NULL)
    return num(d, "end_ns") / 1e6;
  const grape_json_t* sim = sim_of(s, rep);
  return sim != NULL ? num(sim, "sim_end_ns") / 1e6 : -1;
}

#define COUNTER_ENUM(name, doc) K_##name,
enum { GRAPE_REPORT_COUNTERS(COUNTER_ENUM) K_COUNT };
#define COUNTER_NAME(name, doc) #name,
static const char* const counter_names[K_COUNT] = {GRAPE_REPORT_COUNTERS(COUNTER_NAME)};
#define ROUTE_NAME(r) #r,
static const char* const route_names[] = {GRAPE_REPORT_ROUTES(ROUTE_NAME)};
#define NROUTES (sizeof(route_names) / sizeof(route_names[0]))

static int did_cuda(const grape_json_t* rep) {
  return num(rep, "launches") > 0 || num(rep, "launches_captured") > 0;
}

static int has_rank(const grape_json_t* rep) {
  const grape_json_t* r = grape__json_get(rep, "rank");
  return r != NULL && r->kind == GRAPE_JSON_NUM;
}

/* ---- The kernel table ---- */

typedef struct krow_s {
  char* name;
  double calls;          /* recorded by the shim */
  double pred_ms;        /* predicted (GRAPE_PREDICT_GPU), count-weighted */
  double sim_calls, sim_graph_calls, sim_ns;   /* executed on the simulated device */
  /* The spread of the simulated times, where the device gave it: */
  double stat_calls;     /* calls with min/max/median/sum of squares */
  double min_ns, max_ns, sumsq, med_x_calls;   /* med_x_calls: each source's median
                                                   times its calls (merged: their mean) */
  double meas_ms;        /* measured per launch (grape replay --time), -1: none */
} krow_t;

typedef struct ktable_s {
  krow_t* v;
  size_t n, cap;
  int have_pred, have_sim, have_meas, have_stats;
  int ranged;            /* a report covers capture ranges: the device's calls count */
} ktable_t;

static krow_t* krow(ktable_t* t, const char* name) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->v[i].name, name) == 0)
      return &t->v[i];
  krow_t* v = grape__grow(t->v, &t->cap, t->n + 1, sizeof(*t->v), 32);
  char* copy = strdup(name);
  if (v == NULL || copy == NULL) {
    t->v = v ? v : t->v;
    free(copy);
    return NULL;
  }
  t->v = v;
  memset(&t->v[t->n], 0, sizeof(t->v[0]));
  t->v[t->n].name = copy;
  t->v[t->n].meas_ms = -1;
  return &t->v[t->n++];
}

/* The "kernels" of the simulated device's statistics (a SIMCU_REPORT, or a
 * report's device_times): mangled names, demangled as the shim names them. */
static void ktable_add_sim(ktable_t* t, const grape_json_t* from) {
  const grape_json_t* ks = grape__json_get(from, "kernels");
  for (const grape_json_t* k = ks ? ks->child : NULL; k; k = k->next) {
    const char* mangled = grape__json_str(grape__json_get(k, "name"));
    if (mangled == NULL)
      continue;
    char* name = grape_demangle(mangled);
    krow_t* r = krow(t, name ? name : mangled);
    free(name);
    if (r == NULL)
      continue;
    double calls = num(k, "calls");
    r->sim_calls += calls;
    r->sim_graph_calls += num(k, "graph_calls");
    r->sim_ns += num(k, "ns");
    t->have_sim = 1;
    const grape_json_t* med = grape__json_get(k, "med_ns");
    if (med == NULL || med->kind != GRAPE_JSON_NUM || calls <= 0)
      continue;
    double lo = num(k, "min_ns"), hi = num(k, "max_ns");
    r->min_ns = r->stat_calls == 0 || lo < r->min_ns ? lo : r->min_ns;
    r->max_ns = r->stat_calls == 0 || hi > r->max_ns ? hi : r->max_ns;
    r->sumsq += num(k, "sumsq_ns2");
    r->med_x_calls += med->num * calls;
    r->stat_calls += calls;
    t->have_stats = 1;
  }
}

/* A row's standard deviation (ns) from its sums, 0 without them. */
static double row_stddev_ns(const krow_t* r) {
  if (r->stat_calls < 2)
    return 0;
  double mean = r->sim_ns / r->sim_calls;
  double var = r->sumsq / r->stat_calls - mean * mean;
  return var > 0 ? sqrt(var * r->stat_calls / (r->stat_calls - 1)) : 0;
}

static void ktable_build(const summary_t* s, ktable_t* t) {
  memset(t, 0, sizeof(*t));
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* ks = grape__json_get(s->rep[i], "kernels");
    /* Under capture ranges (GRAPE_CAPTURE) the paths still count the whole
     * run; the device's statistics count the ranges: its calls stand. */
    int ranged = grape__json_get(s->rep[i], "capture") != NULL && dev_times(s->rep[i]) != NULL;
    t->ranged |= ranged;
    for (const grape_json_t* k = ks ? ks->child : NULL; k; k = k->next) {
      const char* name = grape__json_str(grape__json_get(k, "name"));
      krow_t* r = name ? krow(t, name) : NULL;
      if (r == NULL)
        continue;
      if (!ranged)
        r->calls += num(k, "calls");
      const grape_json_t* p = grape__json_get(k, "predicted_ms");
      if (p != NULL && p->kind == GRAPE_JSON_NUM) {
        r->pred_ms += p->num;
        t->have_pred = 1;
      }
    }
  }
  /* Simulated times: those a report keeps itself, and SIMCU_REPORT files of
   * processes whose report does not (an older shim, or the sim's report
   * given alone). */
  for (size_t i = 0; i < s->n; i++)
    if (dev_times(s->rep[i]) != NULL)
      ktable_add_sim(t, dev_times(s->rep[i]));
  for (size_t i = 0; i < s->nsim; i++)
    if (!sim_covered(s, s->sim[i]))
      ktable_add_sim(t, s->sim[i]);
  /* Measured times are per launch: they join kernels the reports name (a
   * timings file alone also makes rows). */
  for (size_t i = 0; i < s->nmeas; i++) {
    krow_t* r = krow(t, s->meas[i].name);
    if (r != NULL && s->meas[i].n > 0) {
      r->meas_ms = s->meas[i].ms / s->meas[i].n;
      t->have_meas = 1;
    }
  }
}

static void ktable_free(ktable_t* t) {
  for (size_t i = 0; i < t->n; i++)
    free(t->v[i].name);
  free(t->v);
}

/* The time column: simulated where the sim measured, else predicted, else
 * the measured time per launch times the calls. */
static double row_ms(const ktable_t* t, const krow_t* r) {
  if (t->have_sim)
    return r->sim_ns / 1e6;
  if (t->have_pred)
    return r->pred_ms;
  return r->meas_ms >= 0 ? r->meas_ms * r->calls : 0;
}

static double row_calls(const ktable_t* t, const krow_t* r) {
  return t->have_sim && r->sim_calls > r->calls ? r->sim_calls : r->calls;
}

static const ktable_t* sort_table;
static summary_sort_t sort_key;

static int krow_cmp(const void* a, const void* b) {
  const krow_t* x = a;
  const krow_t* y = b;
  double dx = 0, dy = 0;
  switch (sort_key) {
  case SORT_TIME: dx = row_ms(sort_table, x), dy = row_ms(sort_table, y); break;
  case SORT_CALLS: dx = row_calls(sort_table, x), dy = row_calls(sort_table, y); break;
  case SORT_PREDICTED: dx = x->pred_ms, dy = y->pred_ms; break;
  case SORT_NAME: return strcmp(x->name, y->name);
  }
  if (dx != dy)
    return dx > dy ? -1 : 1;
  return strcmp(x->name, y->name);
}

static void ktable_sort(ktable_t* t, summary_sort_t key) {
  sort_table = t;
  sort_key = key;
  if (t->n > 1)
    qsort(t->v, t->n, sizeof(*t->v), krow_cmp);
}

int summary_sort_parse(const char* s, summary_sort_t* out) {
  static const char* const names[] = {"time", "calls", "name", "predicted"};
  for (int i = 0; i < 4; i++)
    if (strcasecmp(s, names[i]) == 0) {
      *out = (summary_sort_t)i;
      return 0;
    }
  return -1;
}

static void ktable_print(const summary_t* s, const summary_opts_t* o) {
  ktable_t t;
  ktable_build(s, &t);
  if (t.n == 0) {
    ktable_free(&t);
    return;
  }
  ktable_sort(&t, o->sort);
  double total = 0;
  for (size_t i = 0; i < t.n; i++)
    total += row_ms(&t, &t.v[i]);
  const char* what = t.have_sim    ? "simulated device time"
                     : t.have_pred ? "predicted time"
                     : t.have_meas ? "measured time per launch (grape replay --time) x calls"
                                   : "calls only: no simulated, predicted or measured times";
  fprintf(o->to, "%skernels (%s):\n", o->prefix, what);
  fprintf(o->to, "%s  %7s %11s %9s %10s", o->prefix, "time(%)", "total(ms)", "calls", "avg(us)");
  if (t.have_stats)
    fprintf(o->to, " %10s %10s %10s %10s", "med(us)", "min(us)", "max(us)", "stddev(us)");
  fprintf(o->to, " %7s", "graph%");
  if (t.have_sim && t.have_pred)
    fprintf(o->to, " %9s", "pred(ms)");
  if (t.have_meas)
    fprintf(o->to, " %9s", "meas(us)");
  fprintf(o->to, "  name\n");
  size_t rows = o->kernel_rows < 0 ? t.n : (size_t)o->kernel_rows;
  for (size_t i = 0; i < t.n && i < rows; i++) {
    const krow_t* r = &t.v[i];
    double ms = row_ms(&t, r), calls = row_calls(&t, r);
    fprintf(o->to, "%s  %7.1f %11.3f %9.0f %10.2f", o->prefix, total > 0 ? 100 * ms / total : 0.0,
            ms, calls, calls > 0 ? 1000 * ms / calls : 0.0);
    if (t.have_stats && r->stat_calls > 0)
      fprintf(o->to, " %10.2f %10.2f %10.2f %10.2f", r->med_x_calls / r->stat_calls / 1e3,
              r->min_ns / 1e3, r->max_ns / 1e3, row_stddev_ns(r) / 1e3);
    else if (t.have_stats)
      fprintf(o->to, " %10s %10s %10s %10s", "-", "-", "-", "-");
    if (t.have_sim && r->sim_calls > 0)
      fprintf(o->to, " %7.1f", 100 * r->sim_graph_calls / r->sim_calls);
    else
      fprintf(o->to, " %7s", "-");
    if (t.have_sim && t.have_pred)
      fprintf(o->to, " %9.3f", r->pred_ms);
    if (t.have_meas && r->meas_ms >= 0)
      fprintf(o->to, " %9.3f", r->meas_ms * 1000);
    else if (t.have_meas)
      fprintf(o->to, " %9s", "-");
    fprintf(o->to, "  %.100s\n", r->name);
  }
  if (t.n > rows)
    fprintf(o->to, "%s  ... %zu more kernels ('grape report --top -1' or --csv lists all)\n", o->prefix,
            t.n - rows);
  ktable_free(&t);
}

int summary_kernels_csv(const summary_t* s, FILE* to, summary_sort_t sort) {
  ktable_t t;
  ktable_build(s, &t);
  ktable_sort(&t, sort);
  fprintf(to, "name,calls,sim_calls,sim_graph_calls,sim_total_ms,sim_avg_us,predicted_total_ms,"
              "measured_avg_us,sim_med_us,sim_min_us,sim_max_us,sim_stddev_us\n");
  for (size_t i = 0; i < t.n; i++) {
    const krow_t* r = &t.v[i];
    grape__csv_put_str(to, r->name);
    fprintf(to, ",%.0f,", t.ranged ? r->sim_calls : r->calls);
    if (t.have_sim)
      fprintf(to, "%.0f,%.0f,%.6f,%.3f", r->sim_calls, r->sim_graph_calls, r->sim_ns / 1e6,
              r->sim_calls > 0 ? r->sim_ns / 1e3 / r->sim_calls : 0.0);
    else
      fprintf(to, ",,,");
    if (t.have_pred)
      fprintf(to, ",%.6f", r->pred_ms);
    else
      fprintf(to, ",");
    if (r->meas_ms >= 0)
      fprintf(to, ",%.3f", r->meas_ms * 1000);
    else
      fprintf(to, ",");
    if (r->stat_calls > 0)
      fprintf(to, ",%.3f,%.3f,%.3f,%.3f\n", r->med_x_calls / r->stat_calls / 1e3, r->min_ns / 1e3,
              r->max_ns / 1e3, row_stddev_ns(r) / 1e3);
    else
      fprintf(to, ",,,,\n");
  }
  ktable_free(&t);
  return ferror(to) ? -1 : 0;
}

/* ---- The text ---- */

/* The top paths and predicted times of one report. */
static void print_paths(const grape_json_t* rep, const summary_opts_t* o) {
  FILE* to = o->to;
  const grape_json_t* top = grape__json_get(rep, "top_paths");
  int shown = 0;
  for (const grape_json_t* t = top ? top->child : NULL; t && shown < 8; t = t->next, shown++) {
    if (shown == 0)
      fprintf(to, "%smost frequent paths (fingerprint, times seen, ops):\n", o->prefix);
    const char* fp = grape__json_str(grape__json_get(t, "fingerprint"));
    fprintf(to, "%s  %s %6.0fx  %.0f ops:", o->prefix, fp ? fp : "?", num(t, "count"), num(t, "ops"));
    const grape_json_t* k = grape__json_get(t, "kernels");
    int width = 0;
    for (const grape_json_t* e = k ? k->child : NULL; e && width < 90; e = e->next) {
      const char* name = grape__json_str(e);
      if (name != NULL)
        width += fprintf(to, " %s", name);
    }
    if (width == 0)
      fputs(" -", to);
    const char* way = grape__json_str(grape__json_get(t, "ran_as"));
    if (way != NULL) {
      const char* why = grape__json_str(grape__json_get(t, "why"));
      const grape_json_t* hits = grape__json_get(t, "hits");   /* the path's own (format 2 adds it) */
      if (hits != NULL && hits->kind == GRAPE_JSON_NUM)
        fprintf(to, "  [%s%s%s; %.0f of its %.0f runs replayed]", way, why ? ": " : "",
                why ? why : "", hits->num, num(t, "count"));
      else
        fprintf(to, "  [%s%s%s; its graph key: %.0f hits]", way, why ? ": " : "", why ? why : "",
                num(t, "graph_hits"));
    }
    fputc('\n', to);
  }
}

/* The predicted totals of every report (GRAPE_PREDICT_GPU), added up. */
static void print_predicted(const summary_t* s, const summary_opts_t* o) {
  double e = 0, g = 0, elo = 0, ehi = 0, glo = 0, ghi = 0, level = 0;
  int any = 0, unknown = 0, bounded = 1;
  const char* gpu = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* pred = grape__json_get(s->rep[i], "predicted");
    if (pred != NULL && pred->kind == GRAPE_JSON_NULL && did_cuda(s->rep[i]))
      unknown = 1;
    if (pred == NULL || pred->kind != GRAPE_JSON_OBJ)
      continue;
    any = 1;
    gpu = grape__json_str(grape__json_get(pred, "gpu"));
    e += num(pred, "total_eager_ms");
    g += num(pred, "total_graph_ms");
    const grape_json_t* hi = grape__json_get(pred, "total_eager_hi_ms");
    bounded &= hi != NULL && hi->kind == GRAPE_JSON_NUM;
    elo += num(pred, "total_eager_lo_ms");
    ehi += grape__json_num(hi, 0);
    glo += num(pred, "total_graph_lo_ms");
    ghi += num(pred, "total_graph_hi_ms");
    level = num(pred, "level");
  }
  if (!any) {
    if (unknown)
      fprintf(o->to, "%spredicted: none (unknown GPU)\n", o->prefix);
    return;
  }
  fprintf(o->to, "%spredicted on %s: %.3f ms eager, %.3f ms as graphs (%.1f%% less)", o->prefix,
          gpu ? gpu : "?", e, g, e > 0 ? 100 * (e - g) / e : 0.0);
  if (bounded)
    fprintf(o->to, "; %.0f%% intervals: eager %.3f-%.3f ms, graphs %.3f-%.3f ms", 100 * level, elo,
            ehi, glo, ghi);
  fputc('\n', o->to);
}

/* Graph mode's verdicts over every path of every process (the reports'
 * "verdicts"): how many paths ran as graphs and how many eagerly, and why. */
static void print_verdicts(const summary_t* s, const summary_opts_t* o) {
  struct {
    int graph;
    const char* why;
    double paths, count, hits;
  } v[32];
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* vs = grape__json_get(s->rep[i], "verdicts");
    for (const grape_json_t* e = vs ? vs->child : NULL; e; e = e->next) {
      const char* way = grape__json_str(grape__json_get(e, "ran_as"));
      const char* why = grape__json_str(grape__json_get(e, "why"));
      if (way == NULL || why == NULL)
        continue;
      int graph = strcmp(way, "graph") == 0;
      size_t k = 0;
      while (k < n && !(v[k].graph == graph && strcmp(v[k].why, why) == 0))
        k++;
      if (k == n) {
        if (n == sizeof(v) / sizeof(v[0]))
          continue;
        v[n].graph = graph, v[n].why = why, v[n].paths = v[n].count = v[n].hits = 0;
        n++;
      }
      v[k].paths += num(e, "paths");
      v[k].count += num(e, "count");
      v[k].hits += num(e, "hits");
    }
  }
  if (n == 0)
    return;
  fprintf(o->to, "%sgraph mode's verdicts:", o->prefix);
  int said = 0;   /* verdicts printed so far: each after the first follows a ';' */
  for (int graph = 1; graph >= 0; graph--)
    for (size_t k = 0; k < n; k++)
      if (v[k].graph == graph)
        fprintf(o->to, "%s %.0f path%s %s (%.0f runs, %.0f replayed): %s", said++ ? ";" : "",
                v[k].paths, v[k].paths == 1 ? "" : "s", graph ? "kept as graphs" : "eager",
                v[k].count, v[k].hits, v[k].why);
  fputc('\n', o->to);
}

/* The device time plans of one kind gained against their chains (ms): what
 * their timed launches gained (gain_key over n_key timed), scaled to all
 * launches_key of them; the timed count is added to *timed. */
static double scaled_gain_ms(const grape_json_t* c, const char* gain_key, const char* n_key,
                             const char* launches_key, double* timed) {
  double n = num(c, n_key);
  if (n <= 0)
    return 0;
  *timed += n;
  return num(c, gain_key) / n * num(c, launches_key) / 1e6;
}

/* Concurrency plans (GRAPE_CONCURRENCY=safe), added up over the processes:
 * built, kept, reverted, launched, and the device time they gained or lost
 * against the chain: each timed plan launch against its own segment's
 * measured chain time ("gain_ns"), scaled to every plan launch. */
static void print_concurrency(const summary_t* s, const summary_opts_t* o) {
  double built = 0, kept = 0, reverted = 0, launches = 0, fallbacks = 0, gain_ms = 0, timed = 0;
  double go_built = 0, go_kept = 0, go_reverted = 0, go_launches = 0, go_gain_ms = 0, go_timed = 0;
  double dropped = 0, skipped = 0, host_ns = 0, host_n = 0, checks = 0, valued = 0, max_rel = 0;
  const char* mode = NULL;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* c = grape__json_get(s->rep[i], "concurrency");
    if (c == NULL || c->kind != GRAPE_JSON_OBJ)
      continue;
    const char* m = grape__json_str(grape__json_get(c, "mode"));
    if (m != NULL && (strcmp(m, "safe") == 0 || strcmp(m, "go") == 0))
      mode = m;
    built += num(c, "plans_built");
    kept += num(c, "plans_kept");
    reverted += num(c, "plans_reverted");
    launches += num(c, "plan_launches");
    fallbacks += num(c, "plan_fallbacks");
    gain_ms += scaled_gain_ms(c, "gain_ns", "timed_gain", "plan_launches", &timed);
    go_built += num(c, "go_plans_built");
    go_kept += num(c, "go_plans_kept");
    go_reverted += num(c, "go_plans_reverted");
    go_launches += num(c, "go_launches");
    go_gain_ms += scaled_gain_ms(c, "go_gain_ns", "go_timed_gain", "go_launches", &go_timed);
    dropped += num(c, "plans_dropped_host");
    skipped += num(c, "plans_skipped_host");
    host_ns += num(c, "plan_host_ns");
    host_n += num(c, "plan_host_launches");
    checks += num(c, "numerics_checks");
    valued += num(c, "numerics_checks_valued");
    if (num(c, "numerics_max_rel_diff") > max_rel)
      max_rel = num(c, "numerics_max_rel_diff");
  }
  if (mode == NULL && built == 0)
    return;
  fprintf(o->to, "%sconcurrency%s%s%s: %.0f plans built, %.0f kept, %.0f reverted; %.0f plan launches "
                 "(%.0f fell back to the chain)", o->prefix, mode ? " (" : "", mode ? mode : "",
          mode ? ")" : "", built, kept, reverted, launches, fallbacks);
  if (timed > 0)
    fprintf(o->to, "; against their segments' chains the plans %s about %.3f ms of device time "
                   "(%.0f launches timed)", gain_ms >= 0 ? "gained" : "lost",
            gain_ms >= 0 ? gain_ms : -gain_ms, timed);
  else
    fprintf(o->to, "; no plan launch was timed: nothing measured against the chain");
  fprintf(o->to, "; host cost %.3f ms (%.2f us a plan launch), %.0f dropped for it", host_ns / 1e6,
          host_n > 0 ? host_ns / host_n / 1e3 : 0.0, dropped);
  if (skipped > 0)
    fprintf(o->to, " and %.0f not made for it", skipped);
  fputc('\n', o->to);
  if (mode != NULL && strcmp(mode, "go") == 0) {
    fprintf(o->to, "%sconcurrency (go): %.0f SM-target plans built, %.0f kept, %.0f reverted; %.0f "
                   "launches", o->prefix, go_built, go_kept, go_reverted, go_launches);
    if (go_timed > 0)
      fprintf(o->to, "; against their segments' safe plans they %s about %.3f ms of device time "
                     "(%.0f launches timed)", go_gain_ms >= 0 ? "gained" : "lost",
              go_gain_ms >= 0 ? go_gain_ms : -go_gain_ms, go_timed);
    fprintf(o->to, "; numerics: %.0f sampled checks (%.0f with values), largest relative "
                   "difference %.3g\n", checks, valued, max_rel);
  }
}

/* One process's line. */
static void print_process(const summary_t* s, const grape_json_t* rep, const summary_opts_t* o) {
  const char* cmd = grape__json_str(grape__json_get(rep, "command"));
  fprintf(o->to, "%s  pid %.0f", o->prefix, num(rep, "pid"));
  if (has_rank(rep))
    fprintf(o->to, " (rank %.0f)", num(rep, "rank"));
  fprintf(o->to, " %s: %.0f launches, %.0f regions", cmd ? cmd : "?", num(rep, "launches"),
          num(rep, "regions"));
  if (num(rep, "graph_hits") > 0)
    fprintf(o->to, ", %.0f graph hits", num(rep, "graph_hits"));
  double end = sim_end_ms(s, rep);
  if (end >= 0)
    fprintf(o->to, ", %.3f ms simulated", end);
  const char* sig = grape__json_str(grape__json_get(rep, "signal"));
  if (sig != NULL)
    fprintf(o->to, "; interrupted by %s", sig);
  fputc('\n', o->to);
}

/* One line per rank (the processes of a rank added up), when there are
 * several ranks. */
static void print_ranks(const summary_t* s, const summary_opts_t* o) {
  double seen[4096];
  size_t nseen = 0;
  for (size_t i = 0; i < s->n; i++) {
    if (!has_rank(s->rep[i]) || !did_cuda(s->rep[i]))
      continue;
    double r = num(s->rep[i], "rank");
    size_t k = 0;
    while (k < nseen && seen[k] != r)
      k++;
    if (k == nseen && nseen < sizeof(seen) / sizeof(seen[0]))
      seen[nseen++] = r;
  }
  if (nseen < 2)
    return;
  for (size_t a = 1; a < nseen; a++)   /* ranks in order */
    for (size_t b = a; b > 0 && seen[b - 1] > seen[b]; b--) {
      double t = seen[b];
      seen[b] = seen[b - 1];
      seen[b - 1] = t;
    }
  fprintf(o->to, "%sper rank:\n", o->prefix);
  for (size_t k = 0; k < nseen; k++) {
    double launches = 0, regions = 0, hits = 0, sim_ms = 0;
    int procs = 0, with_sim = 0;
    for (size_t i = 0; i < s->n; i++) {
      const grape_json_t* rep = s->rep[i];
      if (!has_rank(rep) || num(rep, "rank") != seen[k] || !did_cuda(rep))
        continue;
      procs++;
      launches += num(rep, "launches");
      regions += num(rep, "regions");
      hits += num(rep, "graph_hits");
      double ms = sim_end_ms(s, rep);
      if (ms >= 0) {
        sim_ms = ms > sim_ms ? ms : sim_ms;
        with_sim = 1;
      }
    }
    fprintf(o->to, "%s  rank %.0f: %.0f launches, %.0f regions, %.0f graph hits", o->prefix, seen[k],
            launches, regions, hits);
    if (procs > 1)
      fprintf(o->to, " (%d processes)", procs);
    if (with_sim)
      fprintf(o->to, ", %.3f ms simulated", sim_ms);
    fputc('\n', o->to);
  }
}

void summary_print(const summary_t* s, const summary_opts_t* o) {
  FILE* to = o->to;
  double tot[K_COUNT] = {0}, routes[NROUTES] = {0};
  const grape_json_t* busiest = NULL;
  size_t cuda_procs = 0, interrupted = 0;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* rep = s->rep[i];
    for (int k = 0; k < K_COUNT; k++)
      tot[k] += num(rep, counter_names[k]);
    const grape_json_t* br = grape__json_get(rep, "launches_by_route");
    for (size_t k = 0; k < NROUTES; k++)
      routes[k] += num(br, route_names[k]);
    cuda_procs += did_cuda(rep);
    interrupted += grape__json_str(grape__json_get(rep, "signal")) != NULL;
    if (busiest == NULL || num(rep, "launches") > num(busiest, "launches"))
      busiest = rep;
  }
  if (s->interrupted != NULL)
    fprintf(to, "%sthe command was interrupted by %s (passed on by grape run); what follows is what "
                "ran until then\n", o->prefix, s->interrupted);
  const char* mode = busiest ? grape__json_str(grape__json_get(busiest, "mode")) : NULL;
  fprintf(to, "%smode %s: %.0f kernel launches (", o->prefix, mode ? mode : "?", tot[K_launches]);
  for (size_t k = 0; k < NROUTES; k++)
    fprintf(to, "%s%s %.0f", k ? ", " : "", route_names[k], routes[k]);
  fprintf(to, ")");
  if (s->n > 1)
    fprintf(to, " in %zu processes", s->n);
  fputc('\n', to);
  if (s->n > 1 || interrupted > 0) {
    for (size_t i = 0; i < s->n; i++)
      if (did_cuda(s->rep[i]) || grape__json_str(grape__json_get(s->rep[i], "signal")) != NULL)
        print_process(s, s->rep[i], o);
    if (s->n > cuda_procs)
      fprintf(to, "%s  %zu other process%s did no CUDA work\n", o->prefix, s->n - cuda_procs,
              s->n - cuda_procs == 1 ? "" : "es");
  }
  print_ranks(s, o);
  if (s->forked_silent)
    fprintf(to, "%s%d forked process%s exited without a report (through _exit, or by exec of a "
                "program the shim is not in): CUDA work there is not counted\n",
            o->prefix, s->forked_silent, s->forked_silent == 1 ? "" : "es");
  fprintf(to, "%s%.0f regions, %.0f distinct paths, %.0f ops recorded\n", o->prefix, tot[K_regions],
          tot[K_paths], tot[K_ops]);
  if (mode != NULL && strcmp(mode, "graph") == 0)
    fprintf(to, "%sgraph replay: %.0f hits, %.0f eager regions of built keys, %.0f graphs built, "
                "%.0f node updates; %.0f driver submissions (ops submitted one by one, graph "
                "launches and node updates) for %.0f ops\n",
            o->prefix, tot[K_graph_hits], tot[K_graph_misses], tot[K_graphs_built],
            tot[K_node_updates], tot[K_submission_calls], tot[K_ops]);
  if (mode != NULL && strcmp(mode, "graph") == 0)
    print_verdicts(s, o);
  print_concurrency(s, o);
  for (size_t i = 0; i < s->n && mode != NULL && strcmp(mode, "graph") == 0; i++) {
    const grape_json_t* b = grape__json_get(s->rep[i], "builder");
    const grape_json_t* where = b != NULL ? grape__json_get(b, "where") : NULL;
    if (where == NULL || where->kind != GRAPE_JSON_STR || !did_cuda(s->rep[i]))
      continue;
    const grape_json_t* st = grape__json_get(b, "stalls_program");
    fprintf(to, "%sgraphs built %s%s\n", o->prefix, where->str,
            st != NULL && st->kind == GRAPE_JSON_BOOL && st->num != 0
                ? "; its builds were measured stalling the program's thread, so graphs were "
                  "built only once eager runs had earned them"
                : "");
    double wait = num(b, "exit_wait_ns");
    if (wait >= 1000)
      fprintf(to, "%sthe exit waited %.3f ms for the graph builds in progress (a build cannot be "
                  "stopped halfway)\n", o->prefix, wait / 1e6);
    break;   /* one line: the first process that did CUDA work */
  }
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* why = grape__json_get(s->rep[i], "holding_stopped");
    if (why != NULL && why->kind == GRAPE_JSON_STR)
      fprintf(to, "%spid %.0f: graph mode stopped holding work: %s\n", o->prefix,
              num(s->rep[i], "pid"), why->str);
    const grape_json_t* led = grape__json_get(s->rep[i], "ledger");
    const grape_json_t* down = led != NULL ? grape__json_get(led, "stood_down") : NULL;
    if (down != NULL && down->kind == GRAPE_JSON_STR)
      fprintf(to, "%spid %.0f: graph mode stood down at op %.0f (%s); the ops after it went "
                  "straight to the driver\n",
              o->prefix, num(s->rep[i], "pid"), num(led, "stood_down_at_op"), down->str);
    if (led != NULL && num(led, "pauses") > 0)
      fprintf(to, "%spid %.0f: graph mode paused %.0f time%s, %.3f ms in all: what it had cost "
                  "the program (its own work per op, less what replays saved) passed its budget, "
                  "GRAPE_BUDGET_PCT of the run; meanwhile ops went "
                  "straight to the driver\n",
              o->prefix, num(s->rep[i], "pid"), num(led, "pauses"),
              num(led, "pauses") == 1 ? "" : "s", num(led, "paused_ns") / 1e6);
  }
  double sim_end = 0, sim_host = 0;
  int any_sim = 0;
  for (size_t i = 0; i < s->n; i++) {
    const grape_json_t* d = dev_times(s->rep[i]);
    if (d == NULL)
      continue;
    any_sim = 1;
    sim_end = num(d, "end_ns") > sim_end ? num(d, "end_ns") : sim_end;
    sim_host += num(d, "host_ns");
  }
  for (size_t i = 0; i < s->nsim; i++) {
    if (sim_covered(s, s->sim[i]))
      continue;
    any_sim = 1;
    double e = num(s->sim[i], "sim_end_ns");
    sim_end = e > sim_end ? e : sim_end;
    sim_host += num(s->sim[i], "sim_host_ns");
  }
  if (any_sim)
    fprintf(to, "%ssimulated time: %.3f ms end to end (the longest process), %.3f ms of host time "
                "in API calls\n", o->prefix, sim_end / 1e6, sim_host / 1e6);
  if (busiest != NULL && did_cuda(busiest)) {
    if (cuda_procs > 1)
      fprintf(to, "%spaths of pid %.0f, the busiest:\n", o->prefix, num(busiest, "pid"));
    print_paths(busiest, o);
  }
  print_predicted(s, o);
  if (o->kernel_rows != 0)
    ktable_print(s, o);
  /* The sim's own count decides (grape counts nothing in off mode). */
  double sim_kernels = 0;
  for (size_t i = 0; i < s->nsim; i++)
    sim_kernels += num(s->sim[i], "kernels_executed");
  if (o->on_sim && !o->command_failed && tot[K_launches] == 0 && tot[K_launches_captured] == 0 &&
      sim_kernels == 0)
    fprintf(to, "%sthe command ran no kernels on the simulated device, which runs programs "
                "built against it (nvcc -cudart shared, with CPU bodies for their kernels: "
                "sim/README.md); kernels without a CPU body, such as PyTorch's, run timed (not "
                "computed) with --sim-kernels timed, and a program that loads NVIDIA's CUDA "
                "runtime itself finds no device here\n",
            o->prefix);
}

/* kstats.c: simulated device time per kernel name, for SIMCU_REPORT's
 * "kernels" table (what `nsys stats`'s GPU kernel summary gives on a GPU),
 * with each kernel's shortest, longest and median time and its spread; and
 * per kind and direction of memory operation (nsys's memory-operation
 * summaries). The shim copies both into its exit report (stats_json,
 * simcu_private.h), so the times survive with the report.
 *
 * DESIGN: keyed by the kernel's mangled name, not by its CUfunction: a
 * function object is handed out again after its module is unloaded, and a
 * kernel loaded twice is one kernel to the reader. An open-addressing table
 * under its own mutex, updated once per executed kernel by the stream
 * workers (the sim favours plain semantics over speed); names are copied in.
 * When the table is full, further names are counted in one "(other)" row, so
 * that the totals still add up to kernels_executed. The median comes from a
 * histogram of 16 buckets per power of two (bounded memory: 2 KiB per name,
 * made at its first run), so it is within 1/16 of the true value; the
 * spread from the sum of squares. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_str.h"

#define KSTATS_CAP 4096   /* distinct kernel names kept, a power of two */

#define HIST_SUB 16                     /* buckets per power of two */
#define HIST_BUCKETS (HIST_SUB * 61)    /* exact below 16 ns, then up to 2^64 */

typedef struct kstat_s {
  char* name;               /* NULL: free slot */
  unsigned long long calls, graph_calls, ns, min_ns, max_ns;
  double sumsq;             /* sum of ns^2 */
  uint32_t* hist;           /* HIST_BUCKETS counts, NULL until made (or out of memory) */
} kstat_t;

static kstat_t table[KSTATS_CAP];
static kstat_t other = {"(other)", 0, 0, 0, 0, 0, 0, NULL};
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t name_hash(const char* s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* ns's bucket: exact below HIST_SUB, else the top bits (log-linear). */
static size_t bucket_of(uint64_t ns) {
  if (ns < HIST_SUB)
    return (size_t)ns;
  int p = 63 - __builtin_clzll(ns);                  /* >= 4 */
  size_t mant = (size_t)(ns >> (p - 4)) & (HIST_SUB - 1);
  size_t b = HIST_SUB + (size_t)(p - 4) * HIST_SUB + mant;
  return b < HIST_BUCKETS ? b : HIST_BUCKETS - 1;
}

static void bucket_range(size_t b, unsigned long long* lo, unsigned long long* width) {
  if (b < HIST_SUB) {
    *lo = b;
    *width = 1;
    return;
  }
  int p = (int)((b - HIST_SUB) / HIST_SUB) + 4;
  unsigned long long mant = (b - HIST_SUB) % HIST_SUB;
  *width = 1ull << (p - 4);
  *lo = (HIST_SUB + mant) << (p - 4);
}

void grape__sim_kstat_add(const char* name, uint64_t ns, int from_graph) {
  if (name == NULL)
    name = "(unnamed)";
  pthread_mutex_lock(&lock);
  kstat_t* k = NULL;
  for (size_t i = name_hash(name) & (KSTATS_CAP - 1), n = 0; n < KSTATS_CAP;
       i = (i + 1) & (KSTATS_CAP - 1), n++) {
    if (table[i].name == NULL) {
      if (used + 1 < KSTATS_CAP && (table[i].name = strdup(name)) != NULL) {
        used++;
        k = &table[i];
      }
      break;
    }
    if (strcmp(table[i].name, name) == 0) {
      k = &table[i];
      break;
    }
  }
  if (k == NULL)
    k = &other;
  if (k->calls == 0 || ns < k->min_ns)
    k->min_ns = ns;
  if (k->calls == 0 || ns > k->max_ns)
    k->max_ns = ns;
  k->calls++;
  k->graph_calls += from_graph != 0;
  k->ns += ns;
  k->sumsq += (double)ns * (double)ns;
  if (k->hist == NULL)
    k->hist = calloc(HIST_BUCKETS, sizeof(*k->hist));
  if (k->hist != NULL)
    k->hist[bucket_of(ns)]++;
  pthread_mutex_unlock(&lock);
}

/* The median of k's times: the middle call's bucket, its midpoint, within
 * the shortest and the longest. */
static unsigned long long median_ns(const kstat_t* k) {
  if (k->hist == NULL || k->calls == 0)
    return k->calls ? k->ns / k->calls : 0;
  unsigned long long want = (k->calls + 1) / 2, seen = 0;
  size_t b = 0;
  for (; b < HIST_BUCKETS - 1; b++) {
    seen += k->hist[b];
    if (seen >= want)
      break;
  }
  unsigned long long lo, width;
  bucket_range(b, &lo, &width);
  unsigned long long m = lo + width / 2;
  return m < k->min_ns ? k->min_ns : m > k->max_ns ? k->max_ns : m;
}

void grape__sim_kstat_write(FILE* f) {
  pthread_mutex_lock(&lock);
  fputs("[", f);
  int first = 1;
  for (size_t i = 0; i <= KSTATS_CAP; i++) {
    const kstat_t* k = i < KSTATS_CAP ? &table[i] : &other;
    if (k->name == NULL || k->calls == 0)
      continue;
    fprintf(f, "%s{\"name\":", first ? "" : ",");
    grape__json_put_str(f, k->name);
    fprintf(f, ",\"calls\":%llu,\"graph_calls\":%llu,\"ns\":%llu,\"min_ns\":%llu,"
               "\"max_ns\":%llu,\"med_ns\":%llu,\"sumsq_ns2\":%.17g}",
            k->calls, k->graph_calls, k->ns, k->min_ns, k->max_ns, median_ns(k), k->sumsq);
    first = 0;
  }
  fputs("]", f);
  pthread_mutex_unlock(&lock);
}

/* ---- Memory operations, by kind and direction ---- */

static const char* const dir_names[] = {"device", "HtoD", "DtoH", "DtoD", "HtoH"};
#define NDIRS (sizeof(dir_names) / sizeof(dir_names[0]))
typedef struct mstat_s {
  unsigned long long count, bytes, ns;
} mstat_t;
static mstat_t mstats[2][NDIRS];   /* [memset][dir]; a memset's dir is "device" */

void grape__sim_mstat_add(int is_memset, int dir, uint64_t bytes, uint64_t ns) {
  if (dir < 0 || (size_t)dir >= NDIRS)
    dir = 0;
  pthread_mutex_lock(&lock);
  mstat_t* m = &mstats[is_memset != 0][dir];
  m->count++;
  m->bytes += bytes;
  m->ns += ns;
  pthread_mutex_unlock(&lock);
}

void grape__sim_mstat_write(FILE* f) {
  pthread_mutex_lock(&lock);
  fputs("[", f);
  int first = 1;
  for (int kind = 0; kind < 2; kind++)
    for (size_t d = 0; d < NDIRS; d++) {
      const mstat_t* m = &mstats[kind][d];
      if (m->count == 0)
        continue;
      fprintf(f, "%s{\"kind\":\"%s\",\"dir\":\"%s\",\"count\":%llu,\"bytes\":%llu,\"ns\":%llu}",
              first ? "" : ",", kind ? "memset" : "memcpy", dir_names[d], m->count, m->bytes, m->ns);
      first = 0;
    }
  fputs("]", f);
  pthread_mutex_unlock(&lock);
}

/* Capture ranges: the epoch advances once, at the first gate call, so that
 * work submitted before any range opened drops out even when it runs later. */
static _Atomic uint32_t stats_epoch;
static _Atomic int stats_off;

void grape__sim_stats_gate(int on) {
  uint32_t zero = 0;
  atomic_compare_exchange_strong(&stats_epoch, &zero, 1);
  atomic_store(&stats_off, !on);
  if (on && zero == 0) {   /* the first range: what ran before it is forgotten */
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < KSTATS_CAP; i++)
      if (table[i].name != NULL) {
        uint32_t* h = table[i].hist;
        char* name = table[i].name;
        if (h != NULL)
          memset(h, 0, HIST_BUCKETS * sizeof(*h));
        table[i] = (kstat_t){name, 0, 0, 0, 0, 0, 0, h};
      }
    other = (kstat_t){"(other)", 0, 0, 0, 0, 0, 0, NULL};
    memset(mstats, 0, sizeof(mstats));
    pthread_mutex_unlock(&lock);
  }
}

void grape__sim_stats_stamp(sim_work_t* w) {
  w->stats_epoch = atomic_load(&stats_epoch);
  w->stats_off = atomic_load(&stats_off);
}

int grape__sim_stats_counts(const sim_work_t* w) {
  return !w->stats_off && w->stats_epoch == atomic_load(&stats_epoch);
}

void grape__sim_kstat_atfork_child(void) {
  pthread_mutex_init(&lock, NULL);
}

/* kstats.c: simulated device time per kernel name, for SIMCU_REPORT's
 * "kernels" table (what `nsys stats`'s GPU kernel summary gives on a GPU).
 *
 * DESIGN: keyed by the kernel's mangled name, not by its CUfunction: a
 * function object is handed out again after its module is unloaded, and a
 * kernel loaded twice is one kernel to the reader. An open-addressing table
 * under its own mutex, updated once per executed kernel by the stream
 * workers (the sim favours plain semantics over speed); names are copied in.
 * When the table is full, further names are counted in one "(other)" row, so
 * that the totals still add up to kernels_executed. */
#include "internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json_str.h"

#define KSTATS_CAP 4096   /* distinct kernel names kept, a power of two */

typedef struct kstat_s {
  char* name;               /* NULL: free slot */
  unsigned long long calls, graph_calls, ns;
} kstat_t;

static kstat_t table[KSTATS_CAP];
static kstat_t other = {"(other)", 0, 0, 0};
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t name_hash(const char* s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
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
  k->calls++;
  k->graph_calls += from_graph != 0;
  k->ns += ns;
  pthread_mutex_unlock(&lock);
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
    fprintf(f, ",\"calls\":%llu,\"graph_calls\":%llu,\"ns\":%llu}", k->calls, k->graph_calls, k->ns);
    first = 0;
  }
  fputs("]", f);
  pthread_mutex_unlock(&lock);
}

void grape__sim_kstat_atfork_child(void) {
  pthread_mutex_init(&lock, NULL);
}

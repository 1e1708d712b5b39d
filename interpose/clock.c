/* The run's clock and the sim's private entries (see clock.h for the design). */
#include "clock.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "real.h"
#include "state.h"

static uint64_t (*sim_host_ns)(void);
static char* (*sim_stats_json)(void);   /* the sim's statistics, for the exit report */
int grape__api_clock_on;
static void (*sim_handoff)(uint64_t);
void (*grape__sim_work)(int);

static uint64_t monotonic_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int grape__clock_simulated(void) {
  return __atomic_load_n(&sim_host_ns, __ATOMIC_RELAXED) != NULL;
}

char* grape__sim_stats_json(void) {
  char* (*f)(void) = __atomic_load_n(&sim_stats_json, __ATOMIC_RELAXED);
  return f != NULL ? f() : NULL;
}

uint64_t grape__clock_ns(void) {
  uint64_t (*f)(void) = __atomic_load_n(&sim_host_ns, __ATOMIC_RELAXED);
  return f != NULL ? f() : monotonic_ns();
}

/* How long the process has run: on the sim, its clock (which starts with
 * the process); else the boot clock less the process's start time
 * (/proc/self/stat), 0 when that cannot be read. */
uint64_t grape__clock_age_ns(void) {
  if (grape__clock_simulated())
    return grape__clock_ns();
  FILE* f = fopen("/proc/self/stat", "r");
  if (f == NULL)
    return 0;
  char buf[1024];
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  const char* p = strrchr(buf, ')');   /* the command's name may hold spaces */
  unsigned long long start = 0;
  /* Fields 3 to 22 after the name: the 20th is the start, in clock ticks
   * since boot. */
  if (p == NULL || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
                                 "%*d %*d %*d %*d %llu", &start) != 1)
    return 0;
  long hz = sysconf(_SC_CLK_TCK);
  struct timespec ts;
  if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
    return 0;
  uint64_t boot = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  uint64_t began = (uint64_t)start * (1000000000u / (uint64_t)hz);
  return boot > began ? boot - began : 0;
}

/* The sim's private table, looked up once the driver is loaded. A GPU's
 * driver does not know the id (and one not yet initialised answers an
 * error): the clock is then the monotonic one. */
static const simcu_private_t* sim_table;
static pthread_mutex_t clock_lock = PTHREAD_MUTEX_INITIALIZER;

int grape__api_clock_ready(void) {
  typedef CUresult (*get_table_t)(const void**, const CUuuid*);
  int on;
  pthread_mutex_lock(&clock_lock);
  on = __atomic_load_n(&grape__api_clock_on, __ATOMIC_RELAXED);
  get_table_t get_table = NULL;
  if (!on)
    GRAPE_NO_REENTRY(get_table = (get_table_t)grape__real_driver("cuGetExportTable"));
  if (get_table != NULL) {
    static const CUuuid id = {SIMCU_PRIVATE_UUID};
    const void* table = NULL;
    CUresult r;
    GRAPE_NO_REENTRY(r = get_table(&table, &id));
    if (r == CUDA_SUCCESS && table != NULL) {
      const simcu_private_t* t = table;
      sim_table = t;
      if (t->size >= offsetof(simcu_private_t, host_ns) + sizeof(t->host_ns))
        __atomic_store_n(&sim_host_ns, t->host_ns, __ATOMIC_RELAXED);
      if (t->size >= offsetof(simcu_private_t, stats_json) + sizeof(t->stats_json))
        __atomic_store_n(&sim_stats_json, t->stats_json, __ATOMIC_RELAXED);
    }
    __atomic_store_n(&grape__api_clock_on, 1, __ATOMIC_RELEASE);
    on = 1;
  }
  pthread_mutex_unlock(&clock_lock);
  return on;
}

void grape__clock_init(int graphs) {
  grape__api_clock_ready();
  const simcu_private_t* t = sim_table;
  if (!graphs || t == NULL)
    return;
  if (t->size >= offsetof(simcu_private_t, host_handoff) + sizeof(t->host_handoff))
    sim_handoff = t->host_handoff;
  __atomic_store_n(&grape__sim_work, t->host_work, __ATOMIC_RELAXED);
}

void grape__charge_work(int kind, uint32_t n) {
  void (*w)(int) = __atomic_load_n(&grape__sim_work, __ATOMIC_RELAXED);
  for (uint32_t i = 0; w != NULL && i < n; i++)
    w(kind);
}

void grape__sim_handoff(uint64_t t) {
  if (sim_handoff != NULL)
    sim_handoff(t);
}

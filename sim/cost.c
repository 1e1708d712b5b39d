/* cost.c: the cost table and the per-thread host clocks of the simulated
 * driver (see cost.h for the model); the private export table
 * (export_table.c) charges through them.
 *
 * DESIGN: every entry point's class is found once from its name (launch,
 * graph launch, sync, ...), so an entry point added to api.def is costed
 * without a new table row; the cost file may set a class row or one entry
 * point's own cost. grape__sim_enter() (SIM_COUNT) charges the entry cost on
 * the calling thread's clock; costs that depend on the call's arguments (per
 * graph node, an event's timing flag) are charged by the entry point itself.
 * A thread's clock starts, at its first call, at the largest host clock the
 * process has reached: a new thread cannot act before the thread that made it
 * did. Totals are atomics: sim_host_ns sums every charge of every thread, and
 * the largest clock is what sim_end_ns starts from.
 *
 * Charges are per thread: what a second thread does (a background graph
 * builder instantiating) advances its own clock only, while the device's
 * streams are shared by all. A helper thread declares itself through the
 * private table (host_handoff): its clock then resumes at the moment work was
 * handed to it, and is kept out of the start of new threads (helper_max
 * instead of host_max). What crosses threads is ordered where the sim can see
 * it: an executable graph exists from the end of its instantiation on the
 * instantiating thread's clock, and a thread that uses it earlier in
 * simulated time waits until then (grape__sim_host_not_before).
 */
#include "internal.h"
#include "cost.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t grape__sim_costs[COST__COUNT];
static uint64_t entry_cost[SYM__COUNT];   /* each entry point's cost, from its class or its own row */
static _Atomic int costs_ready;

static const char* const row_names[COST__COUNT] = {
#define SIM_COST_NAME(id, name, dflt) name,
  SIM_COST_ROWS(SIM_COST_NAME)
#undef SIM_COST_NAME
};
static const uint64_t row_defaults[COST__COUNT] = {
#define SIM_COST_DFLT(id, name, dflt) dflt,
  SIM_COST_ROWS(SIM_COST_DFLT)
#undef SIM_COST_DFLT
};

static unsigned char sym_class[SYM__COUNT];   /* enum sim_cost_row_e of each entry point */
static unsigned char sym_own[SYM__COUNT];     /* the cost file set this entry point's own cost */
static uint64_t host_op_ns;                   /* SIMCU_HOST_NS */
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static _Thread_local uint64_t tls_host;
static _Thread_local uint64_t tls_call_start;   /* tls_host when the current entry point began */
static _Thread_local int tls_started;
static _Thread_local int tls_helper;  /* host_handoff was called on this thread */
static _Atomic uint64_t host_total;   /* every charge, all threads */
static _Atomic uint64_t shim_ops;     /* SIMCU_WORK_SHIM_OP reports, all threads */
static _Atomic uint64_t host_max;     /* the largest host clock reached (helpers apart) */
static _Atomic uint64_t helper_max;   /* the largest helper clock reached */

/* ---- Classes of entry points ---- */

static int starts(const char* s, const char* prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int starts_any(const char* s, const char* const* prefixes) {
  for (; *prefixes != NULL; prefixes++)
    if (starts(s, *prefixes))
      return 1;
  return 0;
}

/* Event records are costed by the event's timing flag, in the entry point. */
static int is_event_record(const char* n) {
  return starts(n, "cuEventRecord");
}

static int class_of(const char* n) {
  /* Each queues one command on a stream, as a kernel launch does (a batch of
   * stream memory operations is one submission). */
  static const char* const launch[] = {"cuLaunchKernel", "cuLaunchCooperativeKernel",
                                       "cuLaunchHostFunc", "cuStreamAddCallback",
                                       "cuStreamWaitValue", "cuStreamWriteValue",
                                       "cuStreamBatchMemOp", NULL};
  static const char* const sync[] = {"cuStreamSynchronize", "cuCtxSynchronize",
                                     "cuEventSynchronize", NULL};
  static const char* const query[] = {"cuStreamQuery", "cuEventQuery", NULL};
  static const char* const async_alloc[] = {"cuMemAllocAsync", "cuMemAllocFromPoolAsync",
                                            "cuMemFreeAsync", NULL};
  static const char* const alloc[] = {"cuMemAlloc", "cuMemHostAlloc", "cuMemHostRegister",
                                      "cuMemCreate", "cuMemMap", "cuMemAddressReserve",
                                      "cuMemPoolCreate", NULL};
  static const char* const release[] = {"cuMemFree", "cuMemHostUnregister", "cuMemRelease",
                                        "cuMemUnmap", "cuMemAddressFree", "cuMemPoolDestroy",
                                        NULL};
  static const char* const build[] = {"cuStreamBeginCapture", "cuStreamEndCapture", NULL};
  if (starts_any(n, launch))
    return COST_LAUNCH;
  if (starts(n, "cuGraphLaunch"))
    return COST_GRAPH_LAUNCH;
  if (starts(n, "cuGraphExec") && strstr(n, "SetParams") != NULL)
    return COST_GRAPH_EXEC_SET_PARAMS;
  if (starts(n, "cuGraphExecUpdate"))
    return COST_GRAPH_EXEC_UPDATE;
  if (starts(n, "cuGraphInstantiate"))
    return COST_INSTANTIATE;
  if (starts_any(n, sync))
    return COST_SYNC;
  if (starts_any(n, query))
    return COST_QUERY;
  if (is_event_record(n))
    return COST_EVENT_RECORD;
  if (starts(n, "cuStreamWaitEvent"))
    return COST_WAIT_EVENT;
  if (starts(n, "cuMemcpy"))
    return COST_MEMCPY;
  if (starts(n, "cuMemset"))
    return COST_MEMSET;
  if (starts_any(n, async_alloc))
    return COST_ALLOC_ASYNC;
  if (starts_any(n, alloc))
    return COST_ALLOC;
  if (starts_any(n, release))
    return COST_FREE;
  if ((starts(n, "cuGraph") && strstr(n, "Get") == NULL) || starts_any(n, build))
    return COST_GRAPH_BUILD;
  return COST_CALL;
}

/* ---- The cost file ---- */

static int row_index(const char* name) {
  for (int i = 0; i < COST__COUNT; i++)
    if (strcmp(row_names[i], name) == 0)
      return i;
  return -1;
}

static int sym_index(const char* name) {
  for (int i = 0; i < SYM__COUNT; i++)
    if (strcmp(grape__sim_sym_names[i], name) == 0)
      return i;
  return -1;
}

static int parse_ns(const char* s, uint64_t* out) {
  if (*s < '0' || *s > '9')
    return -EINVAL;
  char* end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0 || *end != '\0' || v > (1ULL << 53))
    return -EINVAL;
  *out = v;
  return 0;
}

static int is_divisor_row(int row) {
  return row == COST_DEVICE_THREADS_PER_NS || row == COST_DEVICE_COPY_BYTES_PER_NS ||
         row == COST_DEVICE_MEMSET_BYTES_PER_NS;
}

/* Reads "name ns" lines into rows[] / own[] (own[i] = UINT64_MAX: not set).
 * Prints one message per bad line; returns the number of bad lines, or -1
 * when the file cannot be read. */
static int read_cost_file(const char* path, uint64_t* rows, uint64_t* own) {
  FILE* f = fopen(path, "r");
  if (f == NULL) {
    grape__sim_logf("SIMCU_COSTS=%s: cannot open: %s (a cost file, or a profile of sim/costs/: "
                    "default, fair, pessimistic)", path, strerror(errno));
    return -1;
  }
  char line[512];
  int lineno = 0, bad = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    lineno++;
    size_t len = strlen(line);
    if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
      grape__sim_logf("SIMCU_COSTS=%s:%d: line too long", path, lineno);
      bad++;
      int c;
      while ((c = fgetc(f)) != EOF && c != '\n')
        ;
      continue;
    }
    char* hash = strchr(line, '#');
    if (hash != NULL)
      *hash = '\0';
    char name[128], value[64], extra[8];
    int n = sscanf(line, "%127s %63s %7s", name, value, extra);
    if (n <= 0)
      continue;   /* blank or comment */
    line[strcspn(line, "\n")] = '\0';
    if (n != 2) {
      grape__sim_logf("SIMCU_COSTS=%s:%d: want \"name ns\", got \"%s\"", path, lineno, line);
      bad++;
      continue;
    }
    uint64_t v;
    int row = row_index(name), sym = row < 0 ? sym_index(name) : -1;
    if (row < 0 && sym < 0) {
      grape__sim_logf("SIMCU_COSTS=%s:%d: unknown cost \"%s\" (a row of sim/README.md's "
                      "cost table or a driver entry point)", path, lineno, name);
      bad++;
    } else if (parse_ns(value, &v) != 0) {
      grape__sim_logf("SIMCU_COSTS=%s:%d: \"%s\" is not a whole number of ns", path, lineno,
                      value);
      bad++;
    } else if (row >= 0 && is_divisor_row(row) && v == 0) {
      grape__sim_logf("SIMCU_COSTS=%s:%d: %s must be at least 1", path, lineno, name);
      bad++;
    } else if (row >= 0) {
      rows[row] = v;
    } else {
      own[sym] = v;
    }
  }
  fclose(f);
  return bad;
}

/* A profile's name (no '/'): the file costs/NAME.costs beside the sim's
 * libcuda.so.1, where the build and `meson install` put sim/costs/. */
static const char* profile_path(const char* name, char* buf, size_t cap) {
  if (strchr(name, '/') != NULL)
    return name;
  Dl_info info;
  if (dladdr((void*)&grape__sim_costs_load, &info) == 0 || info.dli_fname == NULL)
    return name;
  const char* slash = strrchr(info.dli_fname, '/');
  int dir = slash != NULL ? (int)(slash - info.dli_fname) : 1;
  const char* base = slash != NULL ? info.dli_fname : ".";
  if (snprintf(buf, cap, "%.*s/costs/%s.costs", dir, base, name) >= (int)cap)
    return name;
  return buf;
}

static void load(void) {
  static uint64_t rows[COST__COUNT], own[SYM__COUNT];
  memcpy(rows, row_defaults, sizeof(rows));
  for (int i = 0; i < SYM__COUNT; i++)
    own[i] = UINT64_MAX;
  const char* path = getenv("SIMCU_COSTS");
  char named[4096];
  if (path != NULL && path[0] != '\0')
    path = profile_path(path, named, sizeof(named));
  if (path != NULL && path[0] != '\0') {
    int bad = read_cost_file(path, rows, own);
    if (bad != 0) {
      if (bad > 0)
        grape__sim_logf("SIMCU_COSTS=%s ignored (%d bad line%s): the default costs apply", path,
                        bad, bad == 1 ? "" : "s");
      memcpy(rows, row_defaults, sizeof(rows));
      for (int i = 0; i < SYM__COUNT; i++)
        own[i] = UINT64_MAX;
    }
  }
  memcpy(grape__sim_costs, rows, sizeof(rows));
  for (int i = 0; i < SYM__COUNT; i++) {
    const char* n = grape__sim_sym_names[i];
    sym_class[i] = (unsigned char)class_of(n);
    sym_own[i] = own[i] != UINT64_MAX;
    if (sym_own[i])
      entry_cost[i] = own[i];
    else
      entry_cost[i] = is_event_record(n) ? 0 : rows[sym_class[i]];
  }
  const char* h = getenv("SIMCU_HOST_NS");
  if (h != NULL && h[0] != '\0' && parse_ns(h, &host_op_ns) != 0) {
    grape__sim_logf("SIMCU_HOST_NS=%s is not a whole number of ns: 0 applies", h);
    host_op_ns = 0;
  }
  atomic_store_explicit(&costs_ready, 1, memory_order_release);
}

void grape__sim_costs_load(void) {
  pthread_once(&load_once, load);
}

/* ---- Host clocks ---- */

static void thread_start(void) {
  if (!tls_started) {
    tls_host = atomic_load_explicit(&host_max, memory_order_relaxed);
    tls_started = 1;
  }
}

static void raise_max(uint64_t t) {
  _Atomic uint64_t* m = tls_helper ? &helper_max : &host_max;
  uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);
  while (cur < t &&
         !atomic_compare_exchange_weak_explicit(m, &cur, t, memory_order_relaxed,
                                                memory_order_relaxed))
    ;
}

void grape__sim_host_charge(uint64_t ns) {
  thread_start();
  if (ns == 0)
    return;
  tls_host += ns;
  atomic_fetch_add_explicit(&host_total, ns, memory_order_relaxed);
  raise_max(tls_host);
}

/* The driver lock (row instantiate_lock): while one thread instantiates a
 * graph, another thread's driver call waits until the instantiation ends. The
 * latest instantiation's interval is kept (builds run one at a time). */
static pthread_mutex_t lock_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int lock_used;                 /* an interval was ever recorded */
static uint64_t lock_from, lock_until;        /* under lock_mu */
static const void* lock_holder;               /* the instantiating thread (a TLS address) */

void grape__sim_lock_held(uint64_t from, uint64_t until) {
  if (grape__sim_costs[COST_INSTANTIATE_LOCK] == 0 || until <= from)
    return;
  pthread_mutex_lock(&lock_mu);
  lock_from = from;
  lock_until = until;
  lock_holder = &tls_started;
  pthread_mutex_unlock(&lock_mu);
  atomic_store_explicit(&lock_used, 1, memory_order_release);
}

static void wait_for_lock(void) {
  pthread_mutex_lock(&lock_mu);
  uint64_t from = lock_from, until = lock_until;
  int other = lock_holder != (const void*)&tls_started;
  pthread_mutex_unlock(&lock_mu);
  if (other && tls_call_start >= from && tls_call_start < until)
    grape__sim_host_not_before(until);
}

void grape__sim_host_enter(uint64_t ns) {
  thread_start();
  tls_call_start = tls_host;
  if (atomic_load_explicit(&lock_used, memory_order_acquire))
    wait_for_lock();
  grape__sim_host_charge(ns);
}

void grape__sim_enter(int sym) {
  atomic_fetch_add_explicit(&grape__sim.calls[sym], 1, memory_order_relaxed);
  if (!atomic_load_explicit(&costs_ready, memory_order_acquire))
    grape__sim_costs_load();
  grape__sim_host_enter(entry_cost[sym]);
}

uint64_t grape__sim_host_call_start(void) {
  thread_start();
  return tls_call_start;
}

uint64_t grape__sim_host_now(void) {
  thread_start();
  return tls_host;
}

uint64_t grape__sim_submit_time(void) {
  return grape__sim_host_now() + grape__sim_costs[COST_SUBMIT_LATENCY];
}

/* The calling thread waited for device work that finished at t_done: it
 * resumes a wake-up ("sync") later, or keeps its clock if already past that. */
void grape__sim_host_wait(uint64_t t_done) {
  thread_start();
  uint64_t t = t_done + grape__sim_costs[COST_SYNC];
  if (t > tls_host) {
    tls_host = t;
    raise_max(t);
  }
}

/* The current entry point uses something that exists only from host time t
 * on (made by another thread): the call begins no earlier than t. */
void grape__sim_host_not_before(uint64_t t) {
  thread_start();
  if (t <= tls_call_start)
    return;
  tls_host += t - tls_call_start;
  tls_call_start = t;
  raise_max(tls_host);
}

void grape__sim_charge_event_record(int sym, int timing) {
  if (!sym_own[sym])
    grape__sim_host_charge(grape__sim_costs[timing ? COST_EVENT_RECORD : COST_EVENT_RECORD_NOTIMING]);
}

uint64_t grape__sim_host_total(void) {
  return atomic_load(&host_total);
}

uint64_t grape__sim_shim_ops(void) {
  return atomic_load(&shim_ops);
}

uint64_t grape__sim_helper_end_ns(void) {
  return atomic_load(&helper_max);
}

uint64_t grape__sim_host_end_ns(void) {
  uint64_t h = atomic_load(&host_max), hh = atomic_load(&helper_max);
  return hh > h ? hh : h;
}

/* ---- Host work reported through the private export table ---- */

/* Charges host work of a kind the sim's runtime, libsimblas or the shim
 * reports (simcu_private.h's SIMCU_WORK_*); returns the ns charged. */
uint64_t grape__sim_host_work(int kind) {
  grape__sim_costs_load();
  uint64_t ns = 0;
  if (kind == SIMCU_WORK_OP)
    ns = host_op_ns;
  else if (kind == SIMCU_WORK_RUNTIME)
    ns = grape__sim_costs[COST_RUNTIME];
  else if (kind == SIMCU_WORK_SHIM_OP) {
    ns = grape__sim_costs[COST_SHIM_OP];
    atomic_fetch_add_explicit(&shim_ops, 1, memory_order_relaxed);
  }
  else if (kind == SIMCU_WORK_SHIM_CHECK)
    ns = grape__sim_costs[COST_SHIM_CHECK];
  else if (kind == SIMCU_WORK_SHIM_TARGET)
    ns = grape__sim_costs[COST_SHIM_TARGET];
  else if (kind == SIMCU_WORK_SHIM_REQUERY)
    ns = grape__sim_costs[COST_SHIM_REQUERY];
  else
    return 0;
  grape__sim_host_charge(ns);
  return ns;
}

void grape__sim_host_handoff(uint64_t t) {
  if (!tls_started) {
    tls_host = t;
    tls_started = 1;
  } else if (t > tls_host) {
    tls_host = t;
  }
  tls_helper = 1;
  raise_max(tls_host);
}

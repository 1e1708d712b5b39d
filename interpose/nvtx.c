/* NVTX ranges: names, statistics, records (see nvtx.h for the design;
 * NVTX's callbacks into them are nvtx_inject.c's). */
#include "nvtx.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "capture.h"
#include "funcinfo.h"
#include "clock.h"
#include "state.h"
#include "launch.h"
#include "log.h"
#include "timeline.h"
#include "util/json_str.h"

int grape__nvtx_on;

/* ---- Names ---- */

#define NAMES_CAP 4096u             /* distinct names; later ones count as "(other)" */
#define NAME_LEN 240                /* longer names are cut */
static char* names[NAMES_CAP];
static uint32_t nnames;
static uint32_t name_slots[2 * NAMES_CAP];   /* open addressing: 1 + name index, 0 free */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* names, statistics, start/end */

static uint32_t name_hash(const char* s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

/* The name's index (lock held); the last index stands for every name past
 * the table's size. */
static uint32_t intern_locked(const char* s) {
  for (uint32_t i = name_hash(s) % (2 * NAMES_CAP);; i = (i + 1) % (2 * NAMES_CAP)) {
    uint32_t k = name_slots[i];
    if (k != 0 && strcmp(names[k - 1], s) == 0)
      return k - 1;
    if (k != 0)
      continue;
    char* copy = nnames + 1 < NAMES_CAP ? strdup(s) : NULL;
    if (copy == NULL) {
      if (names[NAMES_CAP - 1] == NULL)
        names[NAMES_CAP - 1] = "(other)";
      return NAMES_CAP - 1;
    }
    names[nnames] = copy;
    name_slots[i] = ++nnames;
    return nnames - 1;
  }
}

/* A message as text: ASCII as given, wide characters outside ASCII as '?',
 * a registered string as the name it was registered with. */
static const char* message_text(int type, const void* msg, char* buf, size_t cap) {
  if (msg == NULL)
    return "(unnamed)";
  if (type == GRAPE_NVTX_MSG_ASCII || type == GRAPE_NVTX_MSG_REGISTERED)
    return msg;
  if (type != GRAPE_NVTX_MSG_UNICODE)
    return "(unnamed)";
  const wchar_t* w = msg;
  size_t n = 0;
  for (; w[n] != 0 && n + 1 < cap; n++)
    buf[n] = w[n] > 0 && w[n] < 128 ? (char)w[n] : '?';
  buf[n] = '\0';
  return buf;
}

uint32_t grape__nvtx_name(int type, const void* msg) {
  char wide[NAME_LEN + 1], cut[NAME_LEN + 1];
  const char* s = message_text(type, msg, wide, sizeof(wide));
  if (strlen(s) > NAME_LEN) {
    memcpy(cut, s, NAME_LEN);
    cut[NAME_LEN] = '\0';
    s = cut;
  }
  pthread_mutex_lock(&lock);
  uint32_t id = intern_locked(s);
  pthread_mutex_unlock(&lock);
  return id;
}

const char* grape__nvtx_name_text(uint32_t name) {
  pthread_mutex_lock(&lock);
  const char* s = names[name];
  pthread_mutex_unlock(&lock);
  return s;
}

/* ---- Statistics: per name and style (push/pop, start/end), and kernels by range ---- */

typedef struct stat_s {
  uint64_t count, ns, min_ns, max_ns;
} stat_t;
static stat_t stats[2][NAMES_CAP];   /* [0] push/pop, [1] start/end */

static void stat_add(int style, uint32_t name, uint64_t ns) {
  pthread_mutex_lock(&lock);
  stat_t* s = &stats[style][name];
  if (s->count == 0 || ns < s->min_ns)
    s->min_ns = ns;
  if (ns > s->max_ns)
    s->max_ns = ns;
  s->count++;
  s->ns += ns;
  pthread_mutex_unlock(&lock);
}

#define KROWS_CAP 8192u   /* (range, kernel) pairs; a power of two */
typedef struct krow_s {
  uint32_t name1;          /* 1 + the range's name, 0: free */
  const grape_func_t* func;   /* NULL: not known */
  uint64_t calls, timed, ns, min_ns, max_ns;
} krow_t;
static krow_t krows[KROWS_CAP];
static uint64_t krows_dropped;

static krow_t* krow_locked(uint32_t name, const grape_func_t* func) {
  uintptr_t h = ((uintptr_t)func >> 4) * 0x9e3779b97f4a7c15ull ^ name * 0x85ebca6bu;
  for (uint32_t i = 0; i < KROWS_CAP; i++) {
    krow_t* r = &krows[(h + i) & (KROWS_CAP - 1)];
    if (r->name1 == name + 1 && r->func == func)
      return r;
    if (r->name1 == 0) {
      r->name1 = name + 1;
      r->func = func;
      return r;
    }
  }
  return NULL;
}

/* ---- The timeline's records (GRAPE_TIMELINE) ---- */

#define RANGES_CAP (1u << 20)
static grape_trace_range_t* ranges;   /* calloc'd at the first record: pages touched as used */
static uint32_t nranges;              /* claimed */
static uint64_t ranges_dropped;
static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

static void ranges_alloc(void) {
  ranges = calloc(RANGES_CAP, sizeof(*ranges));
}

/* A new record at time t of the timeline's clock on thread: 1 + its index,
 * or 0 when the timeline is off, outside its window, or full. */
static uint32_t record(uint32_t kind, uint32_t name, uint32_t parent, uint64_t t, uint32_t thread) {
  pthread_once(&ranges_once, ranges_alloc);
  uint32_t i = __atomic_fetch_add(&nranges, 1, __ATOMIC_RELAXED);
  if (ranges == NULL || i >= RANGES_CAP) {
    __atomic_fetch_add(&ranges_dropped, 1, __ATOMIC_RELAXED);
    return 0;
  }
  /* A range's end is unknown until it ends (at exit: the end of the run). */
  ranges[i] = (grape_trace_range_t){kind, name, thread, parent, t,
                                    kind == GRAPE_TRACE_NVTX_MARK ? t : GRAPE_TRACE_TL_UNKNOWN};
  return i + 1;
}

/* Record rec (1 + index) ends at t (now()'s value: 1 + the timeline's time). */
static void range_ends(uint32_t rec, uint64_t t) {
  grape_trace_range_t* r = &ranges[rec - 1];
  r->end = t - 1 >= r->start ? t - 1 : r->start;
}

/* ---- Per thread: the open push/pop ranges ---- */

#define DEPTH_CAP 64   /* deeper pushes are counted, not recorded */
typedef struct frame_s {
  uint32_t name;
  uint32_t rec;            /* 1 + its timeline record, 0 none */
  uint64_t t0;             /* the run's clock at the push; 0: not timed */
  int counted;             /* inside a capture range when pushed */
} frame_t;
static __thread uint32_t depth;
static __thread frame_t stack[DEPTH_CAP];

/* Now on the clock the statistics use (the timeline's, ns after its origin,
 * when it is on; else the run's API clock), 0 when no clock is known yet;
 * *rec_ok says whether the timeline records at this moment. */
static uint64_t now(int* rec_ok, uint32_t* thread) {
  *rec_ok = 0;
  *thread = 0;
  if (grape__timeline_on) {
    uint64_t t;
    if (grape__tl_now(&t, thread, rec_ok))
      return t + 1;   /* +1: a time of 0 at the origin still counts as timed */
  }
  if (!__atomic_load_n(&grape__api_clock_on, __ATOMIC_ACQUIRE) && !grape__api_clock_ready())
    return 0;
  return grape__clock_ns();
}

int grape__nvtx_push(uint32_t name) {
  if (!grape__on())
    return (int)depth - 1;
  uint32_t d = depth++;
  if (d >= DEPTH_CAP)
    return (int)d;
  frame_t* f = &stack[d];
  f->name = name;
  f->rec = 0;
  f->counted = !__atomic_load_n(&grape__capture_closed, __ATOMIC_RELAXED);
  int rec_ok;
  uint32_t thread;
  f->t0 = f->counted ? now(&rec_ok, &thread) : 0;
  if (f->counted && rec_ok)
    f->rec = record(GRAPE_TRACE_NVTX_PUSH, name, d > 0 ? stack[d - 1].rec : 0, f->t0 - 1, thread);
  return (int)d;
}

int grape__nvtx_pop(void) {
  if (depth == 0)
    return -1;   /* a pop without a push: NVTX answers -1, grape ignores it */
  uint32_t d = --depth;
  if (d >= DEPTH_CAP)
    return (int)d;
  frame_t* f = &stack[d];
  if (!f->counted || f->t0 == 0)
    return (int)d;
  int rec_ok;
  uint32_t thread;
  uint64_t t = now(&rec_ok, &thread);
  if (t == 0)
    return (int)d;
  stat_add(0, f->name, t >= f->t0 ? t - f->t0 : 0);
  if (f->rec != 0)
    range_ends(f->rec, t);
  return (int)d;
}

uint32_t grape__nvtx_innermost(void) {
  if (!grape__nvtx_on)
    return 0;
  uint32_t d = depth < DEPTH_CAP ? depth : DEPTH_CAP;
  return d > 0 ? stack[d - 1].rec : 0;
}

/* As nsys's nvtx_kern_sum: a kernel counts under every push/pop range open
 * on its thread at the launch, not only the innermost, so a range's row
 * holds all the kernels launched inside it (a name nested in itself counts
 * the kernel once per open instance, as nsys's join does). */
void grape__nvtx_launch(const grape_launch_t* l) {
  uint32_t d = depth < DEPTH_CAP ? depth : DEPTH_CAP;
  if (d == 0)
    return;
  const grape_func_t* fn = grape__func_get(l->fn, (grape_handle_kind_t)l->kind);
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < d; i++) {
    if (!stack[i].counted)
      continue;
    krow_t* r = krow_locked(stack[i].name, fn);
    if (r != NULL)
      r->calls++;
    else
      krows_dropped++;
  }
  pthread_mutex_unlock(&lock);
}

/* A timeline kernel inside range (1 + its record) ran on the device for ns:
 * the time goes to the innermost range's record and every push/pop record
 * it was pushed inside (its parents), as the calls do. */
static void kernel_time(uint32_t range, const grape_func_t* func, uint64_t ns) {
  if (ranges == NULL)
    return;
  pthread_mutex_lock(&lock);
  for (uint32_t rec = range; rec != 0 && rec <= RANGES_CAP; rec = ranges[rec - 1].parent) {
    krow_t* r = krow_locked(ranges[rec - 1].name, func);
    if (r == NULL)
      continue;
    if (r->timed == 0 || ns < r->min_ns)
      r->min_ns = ns;
    if (ns > r->max_ns)
      r->max_ns = ns;
    r->timed++;
    r->ns += ns;
  }
  pthread_mutex_unlock(&lock);
}

/* ---- Start/end ranges: any thread may end one ---- */

#define OPEN_CAP 1024u   /* start/end ranges open at once; more are not timed */
typedef struct open_s {
  uint64_t id;             /* 0: free */
  uint32_t name, rec;
  uint64_t t0;
} open_t;
static open_t open_ranges[OPEN_CAP];
static uint64_t next_id;

uint64_t grape__nvtx_start(uint32_t name) {
  if (!grape__on())
    return 0;
  uint64_t id = __atomic_add_fetch(&next_id, 1, __ATOMIC_RELAXED);
  if (__atomic_load_n(&grape__capture_closed, __ATOMIC_RELAXED))
    return id;
  int rec_ok;
  uint32_t thread;
  uint64_t t = now(&rec_ok, &thread);
  if (t == 0)
    return id;
  uint32_t rec = rec_ok ? record(GRAPE_TRACE_NVTX_START, name, 0, t - 1, thread) : 0;
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < OPEN_CAP; i++) {
    open_t* o = &open_ranges[(id + i) % OPEN_CAP];
    if (o->id == 0) {
      *o = (open_t){id, name, rec, t};
      break;
    }
  }
  pthread_mutex_unlock(&lock);
  return id;
}

void grape__nvtx_end(uint64_t id) {
  if (id == 0 || !grape__on())
    return;
  int rec_ok;
  uint32_t thread;
  uint64_t t = now(&rec_ok, &thread);
  open_t o = {0, 0, 0, 0};
  pthread_mutex_lock(&lock);
  for (uint32_t i = 0; i < OPEN_CAP; i++)
    if (open_ranges[(id + i) % OPEN_CAP].id == id) {
      o = open_ranges[(id + i) % OPEN_CAP];
      open_ranges[(id + i) % OPEN_CAP].id = 0;
      break;
    }
  pthread_mutex_unlock(&lock);
  if (o.id == 0 || t == 0)
    return;
  stat_add(1, o.name, t >= o.t0 ? t - o.t0 : 0);
  if (o.rec != 0)
    range_ends(o.rec, t);
}

void grape__nvtx_mark(uint32_t name) {
  if (!grape__on() || __atomic_load_n(&grape__capture_closed, __ATOMIC_RELAXED))
    return;
  int rec_ok;
  uint32_t thread;
  uint64_t t = now(&rec_ok, &thread);
  if (rec_ok)
    record(GRAPE_TRACE_NVTX_MARK, name, grape__nvtx_innermost(), t - 1, thread);
}

/* ---- At exit ---- */

static void kernel_time_of(const grape_trace_tl_op_t* op, const grape_func_t* f, void* arg) {
  (void)arg;
  if (op->kind == GRAPE_TRACE_OP_KERNEL && op->range != 0 && op->dev_start != GRAPE_TRACE_TL_UNKNOWN)
    kernel_time(op->range, f, op->dev_end - op->dev_start);
}

static int kernel_times_taken;

void grape__nvtx_report(FILE* f) {
  if (!__atomic_load_n(&grape__nvtx_on, __ATOMIC_ACQUIRE))
    return;
  /* The kernels' device times are known once the timeline is closed. */
  if (!__atomic_exchange_n(&kernel_times_taken, 1, __ATOMIC_ACQ_REL)) {
    grape__timeline_close();
    grape__timeline_each(kernel_time_of, NULL);
  }
  pthread_mutex_lock(&lock);
  fprintf(f, "\"nvtx\":{\"clock\":\"%s\",\"ranges\":[",
          grape__clock_simulated() ? "simulated" : "monotonic");
  int first = 1;
  for (int style = 0; style < 2; style++)
    for (uint32_t i = 0; i < NAMES_CAP; i++) {
      const stat_t* s = &stats[style][i];
      if (s->count == 0)
        continue;
      fprintf(f, "%s{\"name\":", first ? "" : ",");
      grape__json_put_str(f, names[i]);
      fprintf(f, ",\"style\":\"%s\",\"count\":%llu,\"ns\":%llu,\"min_ns\":%llu,\"max_ns\":%llu}",
              style ? "StartEnd" : "PushPop", (unsigned long long)s->count,
              (unsigned long long)s->ns, (unsigned long long)s->min_ns,
              (unsigned long long)s->max_ns);
      first = 0;
    }
  fprintf(f, "],\"kernels\":[");
  first = 1;
  for (uint32_t i = 0; i < KROWS_CAP; i++) {
    const krow_t* r = &krows[i];
    if (r->name1 == 0 || r->calls == 0)
      continue;
    grape_func_t* fn = (grape_func_t*)r->func;
    const char* kname = fn == NULL || fn->name == NULL ? "(unknown)"
                        : fn->resolved ? grape__func_display_name(fn) : fn->name;
    fprintf(f, "%s{\"range\":", first ? "" : ",");
    grape__json_put_str(f, names[r->name1 - 1]);
    fprintf(f, ",\"kernel\":");
    grape__json_put_str(f, kname != NULL ? kname : "(unknown)");
    fprintf(f, ",\"calls\":%llu,\"timed\":%llu", (unsigned long long)r->calls,
            (unsigned long long)r->timed);
    if (r->timed > 0)
      fprintf(f, ",\"ns\":%llu,\"min_ns\":%llu,\"max_ns\":%llu", (unsigned long long)r->ns,
              (unsigned long long)r->min_ns, (unsigned long long)r->max_ns);
    fprintf(f, "}");
    first = 0;
  }
  fprintf(f, "],\"kernels_left_out\":%llu,\"records_left_out\":%llu},",
          (unsigned long long)krows_dropped,
          (unsigned long long)__atomic_load_n(&ranges_dropped, __ATOMIC_RELAXED));
  pthread_mutex_unlock(&lock);
}

int grape__nvtx_trace(grape_trace_nvtx_t* out) {
  uint32_t n = __atomic_load_n(&nranges, __ATOMIC_RELAXED);
  if (ranges == NULL || n == 0)
    return 0;
  if (n > RANGES_CAP)
    n = RANGES_CAP;
  uint64_t t;
  uint32_t thread;
  int rec_ok;
  uint64_t end = grape__tl_now(&t, &thread, &rec_ok) ? t : 0;
  for (uint32_t i = 0; i < n; i++)   /* still open at exit: they end now */
    if (ranges[i].end == GRAPE_TRACE_TL_UNKNOWN)
      ranges[i].end = end > ranges[i].start ? end : ranges[i].start;
  out->nnames = nnames;
  if (names[NAMES_CAP - 1] != NULL)
    out->nnames = NAMES_CAP;
  for (uint32_t i = nnames; i < out->nnames; i++)   /* a gap up to "(other)" */
    if (names[i] == NULL)
      names[i] = "(other)";
  out->names = (const char* const*)names;
  out->count = n;
  out->ranges = ranges;
  out->dropped = __atomic_load_n(&ranges_dropped, __ATOMIC_RELAXED);
  return 1;
}

void grape__nvtx_reset_child(void) {
  depth = 0;   /* the forking thread's open ranges were the parent's */
  pthread_mutex_init(&lock, NULL);
  ranges = NULL;   /* the parent's records and statistics stay the parent's */
  nranges = 0;
  memset(stats, 0, sizeof(stats));
  memset(krows, 0, sizeof(krows));
  memset(open_ranges, 0, sizeof(open_ranges));
  krows_dropped = ranges_dropped = 0;
  kernel_times_taken = 0;
}

void grape__nvtx_turn_on(void) {
  grape__timeline_range_source(grape__nvtx_innermost);
  __atomic_store_n(&grape__nvtx_on, 1, __ATOMIC_RELEASE);
}

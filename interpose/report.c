/* The exit report.
 *
 * DESIGN: the report is built at exit from the counters and the path table, in
 * a growing heap buffer, then written in one go: to the log sink for 'stderr',
 * else to a temporary file renamed over the target, so a reader never sees half
 * a report. Route counts are kept per route, and every counted launch has exactly
 * one route, so launches_by_route adds up to launches by construction. */
#include "report.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocmap.h"
#include "funcinfo.h"
#include "grape/grape.h"
#include "internal.h"
#include "log.h"
#include "recorder.h"

typedef struct buf_s {
  char* p;
  size_t len, cap;
  int oom;
} buf_t;

__attribute__((format(printf, 2, 3)))
static void put(buf_t* b, const char* fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      b->oom = 1;
      return;
    }
    if ((size_t)n < b->cap - b->len) {
      b->len += (size_t)n;
      return;
    }
    size_t ncap = b->cap * 2 + (size_t)n;
    char* np = realloc(b->p, ncap);
    if (np == NULL) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = ncap;
  }
}

static const char* const route_names[GRAPE_ROUTE_COUNT] = {
  "runtime", "driver", "dlsym", "getprocaddress", "entrypoint",
};

static const char* mode_name(void) {
  switch (grape__mode) {
  case GRAPE_MODE_OFF: return "off";
  case GRAPE_MODE_GRAPH: return "graph";
  default: return "observe";
  }
}

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
  if (n->len == n->cap) {
    size_t cap = n->cap ? n->cap * 2 : 256;
    name_entry_t* v = realloc(n->v, cap * sizeof(*v));
    if (v == NULL)
      return;
    n->v = v;
    n->cap = cap;
  }
  n->v[n->len++] = (name_entry_t){f->id, f->demangled ? f->demangled : f->name};
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

/* A JSON string of the op: the kernel's short name (demangled, without the
 * parameter list and template arguments), "memset", "memcpy" or "?". */
static void put_op_name(buf_t* b, const names_t* n, const grape_op_sig_t* s) {
  const char* name = s->kind == GRAPE_OP_MEMSET   ? "memset"
                     : s->kind == GRAPE_OP_MEMCPY ? "memcpy"
                                                  : name_of(n, s->func);
  if (name == NULL)
    name = "?";
  size_t len = strcspn(name, "(<");
  put(b, "\"");
  for (size_t i = 0; i < len && i < 120; i++)
    if (name[i] != '"' && name[i] != '\\' && (unsigned char)name[i] >= 0x20)
      put(b, "%c", name[i]);
  put(b, "\"");
}

char* grape__report_json(void) {
  buf_t b = {malloc(4096), 0, 4096, 0};
  if (b.p == NULL)
    return NULL;
  long total = 0;
  for (int r = 0; r < GRAPE_ROUTE_COUNT; r++)
    total += __atomic_load_n(&grape__counters.launches[r], __ATOMIC_RELAXED);
  put(&b, "{\"grape_version\":\"%u.%u.%u\",\"pid\":%ld,\"mode\":\"%s\",\"launches\":%ld,",
      grape_version() / 10000, grape_version() / 100 % 100, grape_version() % 100, (long)getpid(),
      mode_name(), total);
  put(&b, "\"launches_by_route\":{");
  for (int r = 0; r < GRAPE_ROUTE_COUNT; r++)
    put(&b, "%s\"%s\":%ld", r ? "," : "", route_names[r],
        __atomic_load_n(&grape__counters.launches[r], __ATOMIC_RELAXED));
  put(&b, "},\"api_calls\":{");
  int first = 1;
  for (int h = 0; h < GRAPE_HOOK_COUNT; h++) {
    long n = __atomic_load_n(&grape__counters.api_calls[h], __ATOMIC_RELAXED);
    if (n == 0)
      continue;
    put(&b, "%s\"%s\":%ld", first ? "" : ",", grape__hooks[h].name, n);
    first = 0;
  }
  grape_rec_stats_t st;
  long want = grape__option_get(grape_option_top_paths);
  size_t ntop = want > 0 ? (size_t)want : 0;
  grape_path_info_t* top = ntop ? calloc(ntop, sizeof(*top)) : NULL;
  size_t k = grape__rec_stats(&st, top, top ? ntop : 0);
  put(&b, "},\"regions\":%llu,\"paths\":%llu,\"ops\":%llu,\"fingerprint_collisions\":%llu,",
      (unsigned long long)st.regions, (unsigned long long)st.paths, (unsigned long long)st.ops,
      (unsigned long long)st.collisions);
  put(&b, "\"launches_without_layout\":%ld,\"launches_captured\":%ld,\"allocations_live\":%zu,\"top_paths\":[",
      __atomic_load_n(&grape__counters.param_unknown, __ATOMIC_RELAXED),
      __atomic_load_n(&grape__counters.captured, __ATOMIC_RELAXED), grape__alloc_count());
  names_t names = {NULL, 0, 0};
  if (k > 0) {
    grape__func_each(collect_name, &names);
    if (names.len)
      qsort(names.v, names.len, sizeof(*names.v), name_cmp);
  }
  for (size_t i = 0; i < k; i++) {
    char hex[17];
    grape__fp_hex(top[i].fp, hex);
    put(&b, "%s{\"fingerprint\":\"%s\",\"ops\":%u,\"count\":%llu,\"kernels\":[", i ? "," : "", hex,
        top[i].nops, (unsigned long long)top[i].count);
    /* The first 16 ops name the path; longer ones end with "...". */
    for (uint32_t j = 0; j < top[i].nops && j < 16 && top[i].sigs; j++) {
      if (j)
        put(&b, ",");
      put_op_name(&b, &names, &top[i].sigs[j]);
    }
    if (top[i].nops > 16)
      put(&b, ",\"...\"");
    put(&b, "]}");
  }
  put(&b, "]}\n");
  free(names.v);
  free(top);
  if (b.oom) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

int grape__report_write(void) {
  const char* target = grape__option_str(grape_option_report);
  if (target == NULL || *target == '\0')
    return 0;
  char* json = grape__report_json();
  if (json == NULL) {
    grape_log_warn("out of memory: no exit report");
    return -ENOMEM;
  }
  int rc = 0;
  if (strcmp(target, "stderr") == 0) {
    grape__output(json);
    goto done;
  }
  char path[4096], tmp[4200];
  if (grape__expand_pid(target, path, sizeof(path))) {
    rc = -ENAMETOOLONG;
    grape_log_warn("GRAPE_REPORT path too long: no exit report");
    goto done;
  }
  snprintf(tmp, sizeof(tmp), "%s.tmp%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = -errno;
    grape_log_warn("cannot write the exit report to %s: %s", tmp, strerror(errno));
    goto done;
  }
  size_t len = strlen(json), off = 0;
  while (off < len) {
    ssize_t w = write(fd, json + off, len - off);
    if (w <= 0) {
      rc = -EIO;
      break;
    }
    off += (size_t)w;
  }
  if (close(fd) != 0 && rc == 0)
    rc = -EIO;
  if (rc == 0 && rename(tmp, path) != 0)
    rc = -errno;
  if (rc != 0) {
    unlink(tmp);
    grape_log_warn("cannot write the exit report to %s", path);
  }
done:
  free(json);
  return rc;
}

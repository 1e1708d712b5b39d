/* Function attributes as ordering points for held launches (see funcattrs.h). */
#include "funcattrs.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "funcinfo.h"
#include "graph.h"
#include "util/grow.h"

typedef struct attr_value_s {
  const void* handle;
  int attr;
  long value;
} attr_value_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static attr_value_t* values;   /* the few (function, attribute) pairs the program sets */
static size_t nvalues, cap;

/* The entry of (handle, attr), or NULL. Under the lock. */
static attr_value_t* find(const void* handle, int attr) {
  for (size_t i = 0; i < nvalues; i++)
    if (values[i].handle == handle && values[i].attr == attr)
      return &values[i];
  return NULL;
}

/* True when s holds a launch of function f. */
static int holds_launch_of(const grape_stream_t* s, const void* arg) {
  const grape_func_t* f = arg;
  const grape_region_t* r = &s->region;
  for (uint32_t i = r->cursor.sub; i < r->cursor.held; i++)
    if (r->ops.keys[i].kind == GRAPE_OP_KERNEL && (r->ops.fns[i] == f->drv || r->ops.keys[i].func == f->id))
      return 1;
  return 0;
}

void grape__func_attr_setting(const void* handle, int attr, long value) {
  if (__atomic_load_n(&grape__holding, __ATOMIC_ACQUIRE) == 0)
    return;
  pthread_mutex_lock(&lock);
  const attr_value_t* v = find(handle, attr);
  int unchanged = v != NULL && v->value == value;
  pthread_mutex_unlock(&lock);
  grape_func_t* f = unchanged ? NULL : grape__func_peek(handle);
  if (f != NULL && f->drv != NULL)
    grape__flush_holding_if(holds_launch_of, f, GRAPE_GC_ORDERING);
}

void grape__func_attr_set(const void* handle, int attr, long value) {
  pthread_mutex_lock(&lock);
  attr_value_t* v = find(handle, attr);
  if (v == NULL) {
    attr_value_t* grown = grape__grow(values, &cap, nvalues + 1, sizeof(*values), 16);
    if (grown != NULL) {
      values = grown;
      v = &values[nvalues++];
      v->handle = handle;
      v->attr = attr;
    }
  }
  if (v != NULL)
    v->value = value;
  pthread_mutex_unlock(&lock);
  grape__limits_forget(handle);
}

void grape__func_attrs_forget(void) {
  pthread_mutex_lock(&lock);
  nvalues = 0;
  pthread_mutex_unlock(&lock);
}

void grape__func_attrs_reset(void) {
  pthread_mutex_init(&lock, NULL);
  values = NULL;   /* the child keeps the parent's memory (another thread may have held the lock) */
  nvalues = cap = 0;
}

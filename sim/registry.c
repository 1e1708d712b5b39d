/* registry.c: the handle registry of the simulated driver: every stream,
 * event, module, function, graph, node, executable, pool, context and
 * virtual-memory handle is checked against it before use.
 *
 * DESIGN: open addressing over pointer values under its own lock, so a
 * destroyed or made-up handle yields CUDA_ERROR_INVALID_HANDLE instead of a
 * crash; callers may hold the driver lock or not. It calls nothing of the
 * driver.
 */
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct reg_slot_s {
  const void* p;   /* NULL empty, (void*)1 tombstone */
  int kind;
} reg_slot_t;

static reg_slot_t* reg_tab;
static size_t reg_cap, reg_used;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
#define REG_TOMB ((const void*)1)

static size_t reg_hash(const void* p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x;
}

static int reg_grow(void) {
  size_t ncap = reg_cap ? reg_cap * 2 : 256;
  reg_slot_t* nt = calloc(ncap, sizeof(*nt));
  if (nt == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < reg_cap; i++) {
    if (reg_tab[i].p == NULL || reg_tab[i].p == REG_TOMB)
      continue;
    size_t j = reg_hash(reg_tab[i].p) & (ncap - 1);
    while (nt[j].p != NULL)
      j = (j + 1) & (ncap - 1);
    nt[j] = reg_tab[i];
  }
  free(reg_tab);
  reg_tab = nt;
  reg_cap = ncap;
  size_t live = 0;
  for (size_t i = 0; i < ncap; i++)
    live += nt[i].p != NULL;
  reg_used = live;
  return 0;
}

int grape__sim_reg_add(const void* p, int kind) {
  int err = 0;
  pthread_mutex_lock(&reg_lock);
  if ((reg_used + 1) * 2 > reg_cap && (err = reg_grow()) != 0)
    goto out;
  size_t j = reg_hash(p) & (reg_cap - 1);
  while (reg_tab[j].p != NULL && reg_tab[j].p != REG_TOMB && reg_tab[j].p != p)
    j = (j + 1) & (reg_cap - 1);
  if (reg_tab[j].p == NULL)
    reg_used++;
  reg_tab[j].p = p;
  reg_tab[j].kind = kind;
out:
  pthread_mutex_unlock(&reg_lock);
  return err;
}

static reg_slot_t* reg_find(const void* p) {
  if (reg_cap == 0 || p == NULL || p == REG_TOMB)
    return NULL;
  size_t j = reg_hash(p) & (reg_cap - 1);
  while (reg_tab[j].p != NULL) {
    if (reg_tab[j].p == p)
      return &reg_tab[j];
    j = (j + 1) & (reg_cap - 1);
  }
  return NULL;
}

void grape__sim_reg_del(const void* p) {
  pthread_mutex_lock(&reg_lock);
  reg_slot_t* s = reg_find(p);
  if (s != NULL)
    s->p = REG_TOMB;   /* stays counted in reg_used until the next grow */
  pthread_mutex_unlock(&reg_lock);
}

int grape__sim_reg_has(const void* p, int kind) {
  pthread_mutex_lock(&reg_lock);
  reg_slot_t* s = reg_find(p);
  int ok = s != NULL && s->kind == kind;
  pthread_mutex_unlock(&reg_lock);
  return ok;
}

void* grape__sim_reg_new(size_t size, int kind) {
  void* p = calloc(1, size);
  if (p != NULL && grape__sim_reg_add(p, kind) != 0) {
    free(p);
    p = NULL;
  }
  return p;
}

void grape__sim_reg_atfork(int phase) {
  grape__sim_fork_lock(&reg_lock, phase);
}

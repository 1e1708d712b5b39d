/* Allocation map (see allocmap.h for the design). */
#include "allocmap.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "options.h"
#include "util/grow.h"

static pthread_rwlock_t lock = PTHREAD_RWLOCK_INITIALIZER;
static grape_alloc_t* iv;          /* sorted by start, disjoint */
static size_t len, cap;
static uint64_t serial;
static uint64_t epoch;             /* adds + removes so far (written under the write lock) */
static grape_alloc_life_t* hist;   /* hist[id - 1]: every interval added, when kept */
static size_t hist_len, hist_cap;
static int hist_on = -1;           /* -1 until GRAPE_TRACE is read; 0 off or given up */

/* Whether a history is kept: only for traces. Write lock held. */
static int history_on(void) {
  if (hist_on < 0) {
    const char* t = grape__option_str(grape_option_trace);
    hist_on = t != NULL && *t != '\0';
  }
  return hist_on;
}

/* Appends the interval just added (its id is hist_len + 1). Write lock held. */
static void history_add(const grape_alloc_t* a) {
  if (!history_on())
    return;
  grape_alloc_life_t* n = grape__grow(hist, &hist_cap, hist_len + 1, sizeof(*hist), 256);
  if (n == NULL) {
    /* Without every entry, ids no longer index the history: drop it. */
    free(hist);
    hist = NULL;
    hist_len = hist_cap = 0;
    hist_on = 0;
    grape_log_warn_once("out of memory for the allocation history: the trace's pointer "
                        "parameters will not be resolved");
    return;
  }
  hist = n;
  hist[hist_len++] = (grape_alloc_life_t){*a, epoch, 0};
}

/* Index of the first interval with start > addr. */
static size_t upper(uint64_t addr) {
  size_t lo = 0, hi = len;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (iv[mid].start <= addr)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Index of the interval containing addr, or -1. Lock held. */
static long containing(uint64_t addr) {
  size_t u = upper(addr);
  if (u == 0)
    return -1;
  const grape_alloc_t* a = &iv[u - 1];
  return addr - a->start < a->size ? (long)(u - 1) : -1;
}

static void erase(size_t i, size_t n) {
  if (n == 0)
    return;   /* also keeps memmove from a NULL iv (the first add) */
  for (size_t k = i; hist != NULL && k < i + n; k++)
    if (iv[k].id >= 1 && iv[k].id <= hist_len)
      hist[iv[k].id - 1].died = epoch;
  memmove(&iv[i], &iv[i + n], (len - i - n) * sizeof(*iv));
  len -= n;
}

int grape__alloc_add(uint64_t start, uint64_t size, grape_alloc_kind_t kind) {
  if (size == 0 || start + size < start)
    return -EINVAL;
  pthread_rwlock_wrlock(&lock);
  __atomic_store_n(&epoch, epoch + 1, __ATOMIC_RELAXED);
  /* Drop stale intervals overlapping the new one. */
  size_t i = upper(start);
  if (i > 0 && iv[i - 1].start + iv[i - 1].size > start)
    i--;
  size_t j = i;
  while (j < len && iv[j].start < start + size)
    j++;
  erase(i, j - i);
  grape_alloc_t* n = grape__grow(iv, &cap, len + 1, sizeof(*iv), 256);
  if (n == NULL) {
    pthread_rwlock_unlock(&lock);
    return -ENOMEM;
  }
  iv = n;
  memmove(&iv[i + 1], &iv[i], (len - i) * sizeof(*iv));
  iv[i] = (grape_alloc_t){start, size, kind, ++serial};
  len++;
  history_add(&iv[i]);
  pthread_rwlock_unlock(&lock);
  return 0;
}

int grape__alloc_remove(uint64_t start) {
  pthread_rwlock_wrlock(&lock);
  __atomic_store_n(&epoch, epoch + 1, __ATOMIC_RELAXED);
  size_t u = upper(start);
  int rc = -ENOENT;
  if (u > 0 && iv[u - 1].start == start) {
    erase(u - 1, 1);
    rc = 0;
  }
  pthread_rwlock_unlock(&lock);
  return rc;
}

int grape__alloc_remove_range(uint64_t start, uint64_t size) {
  pthread_rwlock_wrlock(&lock);
  __atomic_store_n(&epoch, epoch + 1, __ATOMIC_RELAXED);
  size_t i = upper(start);
  if (i > 0 && iv[i - 1].start >= start)
    i--;
  while (i < len && iv[i].start < start)
    i++;
  size_t j = i;
  while (j < len && iv[j].start + iv[j].size <= start + size)
    j++;
  erase(i, j - i);
  pthread_rwlock_unlock(&lock);
  return (int)(j - i);
}

int grape__alloc_find(uint64_t addr, grape_alloc_t* out) {
  pthread_rwlock_rdlock(&lock);
  long k = containing(addr);
  if (k >= 0)
    *out = iv[k];
  pthread_rwlock_unlock(&lock);
  return k >= 0 ? 0 : -ENOENT;
}

int grape__alloc_pointer_words(const void* params, size_t nbytes, uint64_t* mask) {
  size_t words = nbytes / 8;
  memset(mask, 0, ((words + 63) / 64) * sizeof(*mask));
  int n = 0;
  pthread_rwlock_rdlock(&lock);
  for (size_t w = 0; w < words; w++) {
    uint64_t v;
    memcpy(&v, (const uint8_t*)params + 8 * w, 8);
    long k = containing(v);
    if (k >= 0) {
      mask[w / 64] |= UINT64_C(1) << (w % 64);
      n++;
    }
  }
  pthread_rwlock_unlock(&lock);
  return n;
}

size_t grape__alloc_count(void) {
  pthread_rwlock_rdlock(&lock);
  size_t n = len;
  pthread_rwlock_unlock(&lock);
  return n;
}

uint64_t grape__alloc_epoch(void) {
  return __atomic_load_n(&epoch, __ATOMIC_RELAXED);
}

int grape__alloc_history(grape_alloc_life_t** out, size_t* n) {
  pthread_rwlock_rdlock(&lock);
  int rc = 0;
  *out = NULL;
  *n = hist_len;
  if (hist_on <= 0 && hist == NULL)
    rc = -ENOENT;
  else if (hist_len && (*out = malloc(hist_len * sizeof(**out))) == NULL)
    rc = -ENOMEM;
  else if (hist_len)
    memcpy(*out, hist, hist_len * sizeof(**out));
  pthread_rwlock_unlock(&lock);
  return rc;
}

void grape__alloc_reset(int free_memory) {
  if (free_memory) {
    free(iv);
    free(hist);
  }
  iv = NULL;
  len = cap = 0;
  serial = 0;
  hist = NULL;
  hist_len = hist_cap = 0;
  hist_on = -1;
  epoch = 0;
  pthread_rwlock_init(&lock, NULL);
}

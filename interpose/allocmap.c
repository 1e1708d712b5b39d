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
static int shared_dirty;           /* the shared ranges changed (write lock held) */
static void** shared_old;          /* retired snapshots (freed only by a reset that frees) */
static size_t shared_old_len, shared_old_cap;
grape_alloc_shared_t* grape__alloc_shared_now;

static int is_shared_kind(int kind) {
  return kind == GRAPE_ALLOC_HOST_PINNED || kind == GRAPE_ALLOC_HOST_REGISTERED ||
         kind == GRAPE_ALLOC_FOREIGN;
}

/* Publishes a new snapshot of the shared ranges if they changed. Write lock
 * held. Out of memory, the old snapshot stays (kernels into the newest range
 * may then be held: the watchdog remains the backstop). */
static void shared_publish(void) {
  if (!shared_dirty)
    return;
  size_t n = 0;
  for (size_t i = 0; i < len; i++)
    n += is_shared_kind(iv[i].kind);
  grape_alloc_shared_t* s = NULL;
  if (n > 0) {
    s = malloc(sizeof(*s) + 2 * n * sizeof(uint64_t));
    void** old = grape__grow(shared_old, &shared_old_cap, shared_old_len + 1, sizeof(*old), 16);
    if (s == NULL || old == NULL) {
      free(s);
      return;
    }
    shared_old = old;
    uint64_t* lo = (uint64_t*)(s + 1);   /* n lows, then n highs, after the header */
    s->n = 0;
    for (size_t i = 0; i < len; i++)
      if (is_shared_kind(iv[i].kind)) {
        lo[s->n] = iv[i].start;
        lo[n + s->n] = iv[i].start + iv[i].size;
        s->n++;
      }
  }
  grape_alloc_shared_t* prev = __atomic_exchange_n(&grape__alloc_shared_now, s, __ATOMIC_ACQ_REL);
  if (prev != NULL) {
    void** old = grape__grow(shared_old, &shared_old_cap, shared_old_len + 1, sizeof(*old), 16);
    if (old != NULL) {
      shared_old = old;
      shared_old[shared_old_len++] = prev;
    }   /* else it leaks: a reader may still be using it */
  }
  shared_dirty = 0;
}

int grape__alloc_is_shared(uint64_t addr) {
  const grape_alloc_shared_t* s = __atomic_load_n(&grape__alloc_shared_now, __ATOMIC_ACQUIRE);
  if (s == NULL)
    return 0;
  const uint64_t* lo = (const uint64_t*)(s + 1);
  const uint64_t* hi = lo + s->n;
  size_t a = 0, b = s->n;   /* the first range starting after addr */
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (lo[mid] <= addr)
      a = mid + 1;
    else
      b = mid;
  }
  return a > 0 && addr < hi[a - 1];
}

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
  for (size_t k = i; k < i + n; k++) {
    if (hist != NULL && iv[k].id >= 1 && iv[k].id <= hist_len)
      hist[iv[k].id - 1].died = epoch;
    shared_dirty |= is_shared_kind(iv[k].kind);
  }
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
  shared_dirty |= is_shared_kind(kind);
  shared_publish();
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
  shared_publish();
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
  shared_publish();
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
    for (size_t i = 0; i < shared_old_len; i++)
      free(shared_old[i]);
    free(shared_old);
    free(grape__alloc_shared_now);
  }
  shared_old = NULL;
  shared_old_len = shared_old_cap = 0;
  shared_dirty = 0;
  grape__alloc_shared_now = NULL;
  iv = NULL;
  len = cap = 0;
  serial = 0;
  hist = NULL;
  hist_len = hist_cap = 0;
  hist_on = -1;
  epoch = 0;
  pthread_rwlock_init(&lock, NULL);
}

/* Host time per API call (see apitimes.h for the design). */
#include "apitimes.h"

#include "capture.h"
#include "clock.h"
#include "interrupt.h"

int grape__api_begin(int h, uint64_t* t0) {
  if (grape__counters_tls == NULL) {   /* the thread's first call: counted here */
    grape_counters_t* c = grape__counters_mine();
    grape__interrupt_arm();   /* a CUDA call: from now on there is work to save */
    long n = __atomic_load_n(&c->api_seen[h], __ATOMIC_RELAXED);
    __atomic_store_n(&c->api_seen[h], n + 1, __ATOMIC_RELAXED);
    if (n & grape__api_mask_at(n))
      return 0;
  }
  if (__atomic_load_n(&grape__capture_closed, __ATOMIC_RELAXED))
    return 0;   /* outside GRAPE_CAPTURE's ranges: counted, not timed */
  if (!__atomic_load_n(&grape__api_clock_on, __ATOMIC_ACQUIRE) && !grape__api_clock_ready())
    return 0;
  *t0 = grape__clock_ns();
  return 1;
}

void grape__api_timed(grape_counters_t* c, int h, uint64_t t0) {
  uint64_t t1 = grape__clock_ns();
  long d = t1 >= t0 ? (long)(t1 - t0) : 0;
  long n = __atomic_load_n(&c->api_timed[h], __ATOMIC_RELAXED);
  if (n == 0 || d < __atomic_load_n(&c->api_min_ns[h], __ATOMIC_RELAXED))
    __atomic_store_n(&c->api_min_ns[h], d, __ATOMIC_RELAXED);
  if (n == 0 || d > __atomic_load_n(&c->api_max_ns[h], __ATOMIC_RELAXED))
    __atomic_store_n(&c->api_max_ns[h], d, __ATOMIC_RELAXED);
  __atomic_store_n(&c->api_ns[h], __atomic_load_n(&c->api_ns[h], __ATOMIC_RELAXED) + d,
                   __ATOMIC_RELAXED);
  __atomic_store_n(&c->api_timed[h], n + 1, __ATOMIC_RELAXED);
}

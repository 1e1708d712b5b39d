/* bound.c: the device's busy time and the lower bound LB of the exit report.
 *
 * LB is what no transparent interposer (one that changes neither the
 * program's host work nor its points of waiting) can beat on this run. A
 * *wait point* is a call on which the host waits for device work (a stream,
 * event or context synchronisation, a synchronous copy or memset, a call that
 * implies a device sync): where grape__sim_host_wait moves a clock. A
 * *stretch* is the run between two wait points (the first from the start,
 * the last to the end). Stretch i takes at least
 *
 *   max(H_i, D_i)
 *
 * where H_i is the framework host work charged in it (SIMCU_HOST_NS, the
 * host's own non-CUDA work, which an interposer cannot remove) and D_i the
 * device work submitted in it and awaited at its end, with every kernel
 * charged as a node of a launched graph (device_graph_kernel + threads /
 * device_threads_per_ns; copies, memsets and host functions as modelled).
 * D_i is the longest chain of that work the wait awaited: ops of one stream
 * run one after another, and an op that depends on other streams' work (the
 * legacy stream's implicit synchronisation, a stream wait on an event
 * recorded in the stretch) comes after it. LB = sum of max(H_i, D_i).
 *
 * DESIGN: each stream keeps the length of the chain that ends with its last
 * op of the stretch (lb_path); an event keeps its stream's at the record. A
 * stream sync awaits its stream's chain, an event sync the event's, a device
 * sync every stream's. Work not awaited at the end of the stretch that
 * submitted it is dropped, never carried over: it may have run during later
 * stretches, and counting it there could exceed their length. So LB is a
 * lower bound of sim_end_ns for a program whose waits are made by one host
 * thread (stretches are then disjoint in its time); with several waiting
 * threads, stretches follow the order in which the sim sees the waits.
 *
 * Cost: a stream's chain is tagged with the stretch (epoch) it belongs to,
 * and a stretch keeps the list of streams it touched, so a wait costs the
 * streams used since the last one, not every stream made. Everything here
 * runs under grape__sim.lock, except the atomics.
 */
#include "internal.h"

#include <stdlib.h>

static uint64_t epoch = 1;                 /* the current stretch */
static struct CUstream_st** touched;       /* streams with work in this stretch */
static size_t ntouched, cap_touched;
static uint64_t lb_total, lb_host, lb_dev, stretches;
static _Atomic uint64_t host_pending;      /* SIMCU_HOST_NS charged in this stretch */
static _Atomic uint64_t busy;              /* device time of every op run */

void grape__sim_bound_host(uint64_t ns) {
  atomic_fetch_add_explicit(&host_pending, ns, memory_order_relaxed);
}

void grape__sim_bound_busy(uint64_t ns) {
  atomic_fetch_add_explicit(&busy, ns, memory_order_relaxed);
}

static uint64_t max_u64(uint64_t a, uint64_t b) {
  return a > b ? a : b;
}

/* s's chain, restarted when s was last touched in an earlier stretch.
 * Returns 0, or -1 when the list cannot grow (s's work then goes uncounted:
 * LB only gets lower). */
static int touch(struct CUstream_st* s) {
  if (s->lb_epoch == epoch)
    return 0;
  if (ntouched == cap_touched) {
    struct CUstream_st** t = grape__grow(touched, &cap_touched, ntouched + 1, sizeof(*t), 16);
    if (t == NULL)
      return -1;
    touched = t;
  }
  touched[ntouched++] = s;
  s->lb_epoch = epoch;
  s->lb_path = 0;
  return 0;
}

void grape__sim_bound_submit_locked(struct CUstream_st* s, const sim_work_t* w) {
  if (touch(s) != 0)
    return;
  uint64_t base = s->lb_path;
  struct CUstream_st* legacy = grape__sim.legacy;
  if (s->legacy) {
    /* The legacy stream's op comes after the blocking streams' work so far... */
    for (size_t i = 0; i < ntouched; i++)
      if (!(touched[i]->flags & CU_STREAM_NON_BLOCKING))
        base = max_u64(base, touched[i]->lb_path);
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && legacy != NULL && legacy->lb_epoch == epoch) {
    base = max_u64(base, legacy->lb_path);   /* ...and a blocking stream's after the legacy's */
  }
  s->lb_path = base + grape__sim_work_ns(w, 1);
}

void grape__sim_bound_join_locked(struct CUstream_st* s, const struct CUevent_st* e) {
  if (e->lb_epoch == epoch && touch(s) == 0)
    s->lb_path = max_u64(s->lb_path, e->lb_upto);
}

void grape__sim_bound_record_locked(struct CUevent_st* e, struct CUstream_st* s) {
  e->lb_epoch = s->lb_epoch;
  e->lb_upto = s->lb_path;
}

void grape__sim_bound_cut_locked(struct CUstream_st* s, const struct CUevent_st* e) {
  uint64_t dev = 0;
  if (e != NULL) {
    if (e->lb_epoch == epoch)
      dev = e->lb_upto;
  } else if (s != NULL) {
    if (s->lb_epoch == epoch)
      dev = s->lb_path;
  } else {
    for (size_t i = 0; i < ntouched; i++)
      dev = max_u64(dev, touched[i]->lb_path);
  }
  uint64_t host = atomic_exchange(&host_pending, 0);
  lb_total += max_u64(host, dev);
  lb_host += host;
  lb_dev += dev;
  stretches++;
  epoch++;
  ntouched = 0;
}

void grape__sim_bound_report(sim_bound_t* out) {
  pthread_mutex_lock(&grape__sim.lock);
  grape__sim_bound_cut_locked(NULL, NULL);   /* the last stretch ends with the run */
  out->lower_bound_ns = lb_total;
  out->host_ns = lb_host;
  out->device_ns = lb_dev;
  out->stretches = stretches;
  pthread_mutex_unlock(&grape__sim.lock);
  out->device_busy_ns = atomic_load(&busy);
}

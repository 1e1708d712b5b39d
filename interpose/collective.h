/* Collective and spin kernels: never held, never in a graph, never reordered.
 *
 * DESIGN: a kernel that waits on, or is waited on by, something outside its
 * stream (a peer rank's kernel, a host thread spinning on a flag) must reach
 * the device in program order with everything issued before it: holding it,
 * or holding work issued before it on any stream, can make a rank wait on a
 * peer that waits on held work, and then only the watchdog
 * (GRAPE_FLUSH_US) would end the wait. A launch is in this *barrier class*
 * when it is cooperative, when its function belongs to a collective library
 * (its image was loaded from libnccl, librccl, libnvshmem or deep_ep, or its
 * name is an NCCL or NVSHMEM device kernel's), or when a parameter word
 * points into shared memory (host-pinned, registered or IPC-imported:
 * allocmap.h). Such a launch first submits every stream's held work, goes to
 * the driver eagerly, and is a region of its own (the regions around it end),
 * so no graph key contains it. The watchdog stays, as a backstop for spins
 * grape cannot see.
 *
 * Costs on the launch path: the cooperative flag, the function's cached
 * class (classified once), and one load while no shared memory exists;
 * with shared memory, a lock-free lookup per pointer-sized parameter word. */
#ifndef GRAPE_INTERPOSE_COLLECTIVE_H
#define GRAPE_INTERPOSE_COLLECTIVE_H

#include "allocmap.h"
#include "funcinfo.h"

enum { GRAPE_COLL_UNKNOWN = 0, GRAPE_COLL_NO = 1, GRAPE_COLL_YES = 2 };

/* Classifies f by its name and image, once. @return 1 when collective. */
int grape__func_collective_slow(grape_func_t* f);

static inline __attribute__((always_inline)) int grape__func_collective(grape_func_t* f) {
  int c = __atomic_load_n(&f->coll, __ATOMIC_RELAXED);
  if (__builtin_expect(c == GRAPE_COLL_NO, 1))
    return 0;
  return c == GRAPE_COLL_YES ? 1 : grape__func_collective_slow(f);
}

/* True when a parameter word of a launch of f (kernelParams, or the 'extra'
 * form's buffer) points into shared memory. */
int grape__params_shared(const grape_func_t* f, void** params, void** extra);

/* Before a barrier-class launch: every stream's held work goes to the
 * driver, in each stream's order. */
void grape__barrier_flush(void);

#endif

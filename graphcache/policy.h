/* The segment mechanism's one door to its layout policy.
 *
 * DESIGN (redis's ae.c, which includes one backend behind its aeApi*
 * functions and never knows which): segment.c cuts nothing and judges
 * nothing; it builds a segment's executables, re-binds and launches them,
 * and reads their timers. Which layout of a segment a launch runs, and how a
 * layout other than the chain is wired, is the policy's: the cache is given
 * one at creation (c->policy) and segment.c calls it only through this
 * table, never by name. A *layout* is an opaque value the policy owns,
 * tagged by a generation: generation 0 is always the chain (a node per op in
 * recorded order), which the mechanism builds itself; an executable of
 * another generation was built from the policy's layout of that generation,
 * with the edges the policy added. Concurrency plans (conc.c,
 * grape__conc_policy) are the policy of today's cache; a table whose pick
 * always answers 0 would be the chain alone.
 *
 * Calls come with the cache's lock held, except layout_copy's copy being
 * freed and add_nodes, which the builder thread makes without it (on a
 * layout copied under the lock). */
#ifndef GRAPE_GRAPHCACHE_POLICY_H
#define GRAPE_GRAPHCACHE_POLICY_H

#include <stdint.h>

#include "cache.h"

struct grape_gc_seg_s;

typedef struct grape_gc_policy_s {
  /* The generation a launch of seg for r's held ops [from, ...) runs: 0 (the
   * chain) or one whose layout covers those ops. */
  uint32_t (*pick)(grape_gc_t* c, struct grape_gc_seg_s* seg, const grape_region_t* r,
                   uint32_t from);
  /* seg was launched with generation gen. */
  void (*launched)(grape_gc_t* c, struct grape_gc_seg_s* seg, uint32_t gen);
  /* A device-time sample (ns) of seg's last launch: @return 1 when it joins
   * seg->dev_ns (it is of the layout that replays now). */
  int (*sampled)(grape_gc_t* c, struct grape_gc_seg_s* seg, uint64_t ns);
  /* 1 when the policy may lay seg out: executables of its chain for more
   * parameter sets would compete with its layouts for the builder, the
   * cache and the trials. */
  int (*laying_out)(const grape_gc_t* c, const struct grape_gc_seg_s* seg);
  /* seg is being freed: the policy's state of it goes. */
  void (*freed)(struct grape_gc_seg_s* seg);
  /* The layout of generation gen of seg; NULL for the chain and for a
   * generation the policy gave up (a build of it that ends is dropped). */
  const void* (*layout)(const struct grape_gc_seg_s* seg, uint32_t gen);
  /* A copy of a layout that a queued build owns (NULL: out of memory), and
   * its release. */
  void* (*layout_copy)(const void* layout);
  void (*layout_free)(void* layout);
  /* Adds the nodes of ops [from, from + n) of r laid out as `layout` to
   * graph: nodes[i] for op i, between the timer's first and last nodes when
   * timer is not NULL. @return 0 or the driver's error. */
  int (*add_nodes)(const grape_gc_driver_t* drv, void* graph, const grape_region_t* r,
                   uint32_t from, uint32_t n, void* timer, const void* layout, void** nodes);
} grape_gc_policy_t;

#endif

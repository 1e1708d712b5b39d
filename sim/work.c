/* work.c: one unit of stream work (sim_work_t), apart from running it: its
 * modelled device time, the view a kernel body or cost hook gets of a
 * kernel's launch, and copying and releasing what it owns.
 *
 * DESIGN: what the streams (stream.c), the device model (device.c), the lower
 * bound (bound.c) and graphs (graph.c) all need of work, below all of them:
 * it calls nothing of theirs. Device times come from the cost rows (cost.h);
 * a kernel without a body that runs timed asks timed.c.
 */
#include "internal.h"
#include "cost.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void grape__sim_kernel_view(const sim_work_t* w, void** argv, simcu_block_t* b, int* fault) {
  const struct CUfunc_st* f = w->u.k.f;
  for (uint32_t i = 0; i < f->nparams; i++)
    argv[i] = w->u.k.params + f->poff[i];
  *b = (simcu_block_t){
    .grid = {w->u.k.grid[0], w->u.k.grid[1], w->u.k.grid[2]},
    .block = {w->u.k.block[0], w->u.k.block[1], w->u.k.block[2]},
    .shared_bytes = w->u.k.smem,
    .fault = fault,
  };
}

uint64_t grape__sim_work_ns(const sim_work_t* w, int as_node) {
  const uint64_t* c = grape__sim_costs;
  switch (w->kind) {
  case OP_KERNEL: {
    uint64_t threads = (uint64_t)w->u.k.grid[0] * w->u.k.grid[1] * w->u.k.grid[2] *
                       w->u.k.block[0] * w->u.k.block[1] * w->u.k.block[2];
    /* A kernel node of a launched graph skips the per-launch overhead an
     * eager launch pays: what graph replay saves on the device side. */
    return c[as_node || w->u.k.from_graph ? COST_DEVICE_GRAPH_KERNEL : COST_DEVICE_KERNEL] +
           (w->u.k.f->timed ? grape__sim_timed_ns(w) : threads / c[COST_DEVICE_THREADS_PER_NS]);
  }
  case OP_MEMCPY: {
    /* A 2-D/3-D copy (copy.c) is one op of rows x depth rows of n bytes,
     * costed as one copy of all its bytes. */
    size_t rows = w->u.cp.rows ? w->u.cp.rows : 1, depth = w->u.cp.depth ? w->u.cp.depth : 1;
    return c[COST_DEVICE_COPY] + w->u.cp.n * rows * depth / c[COST_DEVICE_COPY_BYTES_PER_NS];
  }
  case OP_MEMSET:
    return c[COST_DEVICE_MEMSET] +
           (w->u.ms.n * w->u.ms.esize * w->u.ms.height) / c[COST_DEVICE_MEMSET_BYTES_PER_NS];
  case OP_HOSTFN:
    return c[COST_DEVICE_HOST_FUNC];
  default:
    return 0;
  }
}

void grape__sim_event_unref_locked(struct CUevent_st* e) {
  if (--e->refs == 0) {
    free(e->cap_nodes);
    free(e);
  }
}

/* Frees what the work owns; the event reference needs the lock held. */
void grape__sim_work_release(sim_work_t* w) {
  if (w->kind == OP_KERNEL)
    free(w->u.k.params);
  else if (w->kind == OP_MEMCPY)
    free(w->u.cp.owned);
  else if (w->kind == OP_EVENT && w->u.ev.ev != NULL)
    grape__sim_event_unref_locked(w->u.ev.ev);
  memset(w, 0, sizeof(*w));
}

int grape__sim_work_copy(sim_work_t* dst, const sim_work_t* src) {
  *dst = *src;
  /* A kernel without parameters owns a 1-byte block too
   * (grape__sim_make_kernel_work): the copy gets its own, or the two works
   * would free one block (a graph node of such a kernel, its executable and
   * each launch of it are copies). */
  if (src->kind == OP_KERNEL) {
    dst->u.k.params = malloc(src->u.k.params_size ? src->u.k.params_size : 1);
    if (dst->u.k.params == NULL)
      return -ENOMEM;
    if (src->u.k.params_size > 0)
      memcpy(dst->u.k.params, src->u.k.params, src->u.k.params_size);
  }
  if (src->kind == OP_MEMCPY)
    dst->u.cp.owned = NULL;
  return 0;
}

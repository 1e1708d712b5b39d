/* The program's own executable graphs (cuGraphInstantiate*,
 * cudaGraphInstantiate*): how many nodes each holds, so that the timeline
 * can name a launch of one ("graph launch (N nodes)"). grape's own graphs
 * (graph mode's replays) are not these: the timeline records them itself.
 *
 * DESIGN: only while the timeline is on. An instantiation that succeeded
 * asks the driver for the graph's top-level node count (cuGraphGetNodes) and
 * keeps it under the executable's handle, in a fixed table (a destroyed
 * executable's handle may come back for a new one, which then overwrites it;
 * when the table is full a launch's count is not known). The driver offers
 * no way from an executable graph back to its nodes. */
#ifndef GRAPE_INTERPOSE_OWNGRAPHS_H
#define GRAPE_INTERPOSE_OWNGRAPHS_H

#include <stdint.h>

#include "copies.h"
#include "cuda_types.h"

/* The program instantiated graph g as *exec (the call succeeded). */
void grape__own_graph_made(const void* exec, const void* g);

/* The nodes of executable graph exec, or 0 when not known. */
uint64_t grape__own_graph_nodes(const void* exec);

/* Every instantiation row's parameters start with the executable's pointer
 * and the graph: GRAPE_OWN_GRAPH_MADE args records them. */
#define GRAPE_OWN_GRAPH_MADE_(exec_p, g, ...) \
  grape__own_graph_made((exec_p) != NULL ? (const void*)*(exec_p) : NULL, (const void*)(g))
#define GRAPE_OWN_GRAPH_MADE(...) GRAPE_OWN_GRAPH_MADE_(__VA_ARGS__)

/* What a launch of the program's graph runs (for the timeline): its nodes in
 * the bytes field. One grape__launch_<base> per graph_stream row. */
static inline grape_copy_t grape__launch_cuGraphLaunch(CUgraphExec x, CUstream s) {
  (void)s;
  return (grape_copy_t){grape__own_graph_nodes(x), GRAPE_TRACE_DIR_NONE};
}
static inline grape_copy_t grape__launch_cudaGraphLaunch(cudaGraphExec_t x, cudaStream_t s) {
  (void)s;
  return (grape_copy_t){grape__own_graph_nodes(x), GRAPE_TRACE_DIR_NONE};
}

#endif

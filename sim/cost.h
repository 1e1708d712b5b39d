/* cost.h: the simulated time of the sim — cost table, host clocks, and the
 * sim's private export table.
 *
 * DESIGN: simulated time has two sides. The host side is one clock per
 * thread (ns) that every driver entry point advances by a modelled cost (one
 * row per class of entry point, overridable per entry point); the device
 * side is the per-stream clock of stream.c, where an op starts no earlier
 * than the host time at which it was submitted plus a submission latency.
 * Waiting for the device (syncs, synchronous copies) moves the host clock to
 * the completion time of what it waited for. Defaults come from published
 * measurements (sim/README.md names each source); SIMCU_COSTS=<file> with
 * "name ns" lines replaces them, so measured costs can be dropped in.
 *
 * The private export table (cuGetExportTable with SIMCU_PRIVATE_UUID) is how
 * the sim's runtime and libsimblas reach the accounting without a new exported
 * name: NVIDIA's runtime reaches its driver's private functions the same way,
 * and a real driver simply does not know the id (libsimblas then skips the
 * accounting). This header is the whole contract of that table; it needs only
 * <stdint.h>, so rt.c and simblas.c include it without the driver's internals.
 */
#ifndef GRAPE_SIM_COST_H
#define GRAPE_SIM_COST_H

#include <stddef.h>
#include <stdint.h>

/* The private export table: include/grape/simcu_private.h. */
#include "grape/simcu_private.h"

/* ---- Cost rows (driver-internal) ---- */

/* X(id, "name in the cost file", default ns) */
#define SIM_COST_ROWS(X)                                                            \
  X(LAUNCH, "launch", 2650)                                                        \
  X(GRAPH_LAUNCH, "graph_launch", 3500)                                            \
  X(GRAPH_LAUNCH_NODE, "graph_launch_node", 0)                                     \
  X(GRAPH_EXEC_SET_PARAMS, "graph_exec_set_params", 700)                           \
  X(GRAPH_EXEC_UPDATE, "graph_exec_update", 1000)                                  \
  X(GRAPH_EXEC_UPDATE_NODE, "graph_exec_update_node", 100)                         \
  X(GRAPH_BUILD, "graph_build", 2000)                                              \
  X(INSTANTIATE, "instantiate", 20000)                                             \
  X(INSTANTIATE_NODE, "instantiate_node", 30000)                                   \
  X(SYNC, "sync", 1500)                                                            \
  X(QUERY, "query", 250)                                                           \
  X(EVENT_RECORD, "event_record", 2500)                                            \
  X(EVENT_RECORD_NOTIMING, "event_record_notiming", 250)                           \
  X(WAIT_EVENT, "wait_event", 1000)                                                \
  X(MEMCPY, "memcpy", 2650)                                                        \
  X(MEMSET, "memset", 2650)                                                        \
  X(ALLOC, "alloc", 10000)                                                         \
  X(FREE, "free", 10000)                                                           \
  X(ALLOC_ASYNC, "alloc_async", 1000)                                              \
  X(CALL, "call", 100)                                                             \
  X(SUBMIT_LATENCY, "submit_latency", 1000)                                        \
  X(RUNTIME, "runtime", 0)                                                         \
  X(DEVICE_KERNEL, "device_kernel", 2000)                                          \
  X(DEVICE_GRAPH_KERNEL, "device_graph_kernel", 500)                               \
  X(DEVICE_THREADS_PER_NS, "device_threads_per_ns", 16)                            \
  X(DEVICE_COPY, "device_copy", 1000)                                              \
  X(DEVICE_COPY_BYTES_PER_NS, "device_copy_bytes_per_ns", 25)                      \
  X(DEVICE_MEMSET, "device_memset", 800)                                           \
  X(DEVICE_MEMSET_BYTES_PER_NS, "device_memset_bytes_per_ns", 100)                 \
  X(DEVICE_HOST_FUNC, "device_host_func", 1000)                                   \
  X(DEVICE_MEM_BYTES_PER_NS, "device_mem_bytes_per_ns", 4200)                     \
  X(TIMED_BLOCK, "timed_block", 1000)                                              \
  X(TIMED_FLOOR, "timed_floor", 1800)                                              \
  X(SHIM_OP, "shim_op", 0)                                                          \
  X(INSTANTIATE_LOCK, "instantiate_lock", 0)                                      \
  X(SHIM_CHECK, "shim_check", 0)                                                  \
  X(SHIM_TARGET, "shim_target", 0)                                                \
  X(SHIM_REQUERY, "shim_requery", 0)

enum sim_cost_row_e {
#define SIM_COST_ENUM(id, name, dflt) COST_##id,
  SIM_COST_ROWS(SIM_COST_ENUM)
#undef SIM_COST_ENUM
  COST__COUNT
};

/* The table as loaded (driver-internal: cost.c; indexed by the rows above). */
extern uint64_t grape__sim_costs[COST__COUNT];

#endif

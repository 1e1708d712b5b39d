/* The shim's exit report (GRAPE_REPORT): the names of its JSON members,
 * defined once for the writer (interpose/report.c) and its readers (`grape
 * run`, tests), so that neither scrapes text the other may rename.
 *
 * DESIGN: X-macro lists. The report is one JSON object per process:
 *   {"grape_version":"0.1.0","report_format":2,"pid":N,"ppid":N,"rank":N|null,"command":"...",
 *    "signal":"SIGTERM"|null (the signal that ended the process),
 *    "trace_file":"..."|null (where its GRAPE_TRACE went),
 *    "mode":"observe",
 *    "deep_bound":{"objects":N,"references":N,"bypasses":N} (libraries opened RTLD_DEEPBIND
 *      whose CUDA references were pointed at the shim; libraries it could not follow),
 *    "holding_stopped":"why"|null (graph mode stopped holding work: a bypass),
 *    <every counter below>: N, ...,
 *    "launches_by_route":{<route>: N, ...},
 *    "held_ops_flushed_eager":{<cause>: N, ...},
 *    "builder":{"where":"on a builder thread: ..."|"inline, on the program's thread: ...",
 *      "built_on_thread":N,"waits":N,"deferred":N,"stalls_program":true|false,
 *      "for_recurring_sets":N,"exit_wait_ns":N} (exit_wait_ns: how long the program's exit
 *      waited for the builds in progress, which cannot be stopped halfway),
 *    "costs":{"launch"|"graph_launch"|"update"|"build_node"|"shim_op":{"ns":X,"samples":N}}
 *      (what graph mode weighed: measured in the run where it has samples, else GRAPE_COSTS;
 *      shim_op: the shim's own host time per op it records or holds),
 *    "ledger":{"saved_ns":X,"cost_ns":X,"windows":N,"losing":N,"stood_down_at_op":N,
 *      "stood_down":"why"|null} (what replays saved against the shim's own work and the builds
 *      the program waited for, judged per window of 512 ops; two losing windows in a row and
 *      graph mode stands down: later launches and memops go straight to the driver, counted),
 *    "api_calls":{<hooked symbol>: N, ...},
 *    "api_times":{"sampled_every":16,"clock":"simulated"|"monotonic",
 *      "calls":{<hooked symbol>:{"calls":N,"timed":N,"ns":N,"min_ns":N,"max_ns":N}, ...}}
 *      (every call through a hook, launches included; one in sampled_every per symbol and
 *      thread timed around the whole hook, on the sim's host clock or CLOCK_MONOTONIC;
 *      ns sums the timed ones; min/max only where timed > 0),
 *    "device_times":{"source":"simulated","end_ns":N,"host_ns":N,
 *      "kernels":[{"name":"<mangled>","calls":N,"graph_calls":N,"ns":N,"min_ns":N,"max_ns":N,
 *                  "med_ns":N,"sumsq_ns2":X}, ...],
 *      "memops":[{"kind":"memcpy"|"memset","dir":"HtoD"|"DtoH"|"DtoD"|"HtoH"|"device",
 *                 "count":N,"bytes":N,"ns":N}, ...]}|null
 *      (the device's own times, kept so that a report read again has them: the
 *      simulated device's statistics, include/grape/simcu_private.h; null on a GPU),
 *    "concurrency":{... "gain_ns":X,"timed_gain":N} (docs/concurrency.md),
 *    "verdicts":[{"ran_as":"graph"|"eager","why":"...","paths":N,"count":N,"hits":N}, ...]
 *      (every path, grouped by how its key ran and why),
 *    "predicted":{...} (GRAPE_PREDICT_GPU only),
 *    "top_paths":[{..., "count":N, "hits":N (its own graph replays),
 *                  "graph_hits":N (its key's, over all the key's paths), ...}],
 *    "kernels":[{"name":"...","calls":N,"predicted_ms":X (GRAPE_PREDICT_GPU only)}, ...]}
 * grape run's own copy (in GRAPE_RUN_DIR) adds "report_file": the user's file or null.
 * A reader summing several processes adds every counter. Bump
 * GRAPE_REPORT_FORMAT when a member changes meaning or goes away. */
#ifndef GRAPE_REPORT_H
#define GRAPE_REPORT_H

#define GRAPE_REPORT_FORMAT 2

/* Top-level integer counters: X(name, what it counts). */
#define GRAPE_REPORT_COUNTERS(X)                                                              \
  X(launches, "kernel launches the program made, outside its own stream captures")            \
  X(launches_captured, "launches into the program's own stream captures (passed through)")    \
  X(launches_without_layout, "launches whose parameter layout was not found")                 \
  X(regions, "regions (or chunks of one) ended with at least one op")                         \
  X(paths, "distinct paths among them, launch dimensions included")                           \
  X(ops, "ops recorded in ended regions")                                                     \
  X(fingerprint_collisions, "equal fingerprints of different op lists (kept apart)")          \
  X(allocations_live, "device and pinned host allocations live at exit")                      \
  X(graph_keys, "distinct graph keys: paths without launch dimensions")                       \
  X(graph_hits, "regions replayed as a cached executable graph")                              \
  X(graph_misses, "regions of a built key that ran eagerly instead (see top_paths[].why)")    \
  X(graphs_built, "executable graphs instantiated")                                           \
  X(graphs_evicted, "executable graphs destroyed to stay within the cache limits")            \
  X(graph_build_failures, "graph keys whose graph could not be built (they run eagerly)")     \
  X(node_updates, "graph node updates made before replays")                                   \
  X(graph_launches, "graph launches made by the shim")                                        \
  X(eager_ops, "ops the shim submitted one by one (held, then flushed eagerly)")              \
  X(submission_calls, "driver submissions: launches, graph launches, node updates, memsets, copies") \
  X(est_graph_bytes, "estimated device memory of the cached executable graphs, at most at once")

/* Members of "held_ops_flushed_eager": why held ops were submitted one by one
 * (in the order of graphcache/cache.h's grape_gc_cause_t). */
#define GRAPE_REPORT_FLUSH_CAUSES(X)                                                  \
  X(divergence, "the region left the known path")                                    \
  X(watchdog, "held longer than GRAPE_FLUSH_US")                                     \
  X(invalid_launch, "an op the driver would reject (a launch outside its function's "\
                   "limits, a misaligned memset, memory not known), submitted on its own") \
  X(no_graph, "the region ended on a path prefix with no graph of its own")          \
  X(graph_failed, "a graph update or launch failed")                                 \
  X(ordering, "a call the held work must precede (a function attribute change)")       \
  X(collective, "a collective or spin kernel followed: every stream's held work went first")

/* Members of "launches_by_route": how the program reached the driver. */
#define GRAPE_REPORT_ROUTES(X) X(runtime) X(driver) X(dlsym) X(getprocaddress) X(entrypoint)

/* Values of "mode" (GRAPE_MODE). */
#define GRAPE_REPORT_MODES(X) X(off) X(observe) X(graph)

#endif

/* The builder thread: graph mode's graphs built off the program's thread.
 *
 * DESIGN: building an executable graph (creating it, adding its nodes,
 * instantiating it) costs the host tens of microseconds per node, which the
 * program would otherwise pay at the moment a path has recurred enough: the
 * graph cache therefore queues builds (copies of the ops) and one background
 * thread of the shim's builds them (grape_gc_build_pending), in the context
 * the ops were issued in, while the program runs on eagerly. It is started
 * when the process may run on two CPUs or more (GRAPE_BUILDER=auto), so that
 * building costs the program nothing; else, or with GRAPE_BUILDER=inline,
 * builds run on the program's thread under the rent-or-buy rule. On the
 * simulated device the builder is a helper thread (simcu_private.h,
 * host_handoff): its clock starts each build where the program queued it. */
#ifndef GRAPE_INTERPOSE_BUILDER_H
#define GRAPE_INTERPOSE_BUILDER_H

#include <stdint.h>

#include "graphcache/cache.h"

/* Starts the builder if the option and the machine allow. @return 1 when it
 * runs (the cache is then made with async builds, and named with
 * grape__builder_serve), 0 when builds are inline. */
int grape__builder_start(void);

/* Where graphs are built and why, in words ("on a builder thread: ..." or
 * "inline, on the program's thread: ..."),
 * for the report. */
const char* grape__builder_why(void);

/* The cache the builder builds for. */
void grape__builder_serve(grape_gc_t* c);

/* A build was queued (the cache's config.wake). */
void grape__builder_wake(void);

/* Fork child: there is no builder (it starts again with a new cache). */
void grape__builder_reset_child(void);

#endif

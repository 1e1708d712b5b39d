/* The full timeline (GRAPE_TIMELINE): every op the program issues, with its
 * host call's start and end, and, for work that reaches the device, its start
 * and end there, measured with a pair of events recorded around it on its
 * stream. Written into the trace's optional TLIN section at exit
 * (docs/trace-format.md).
 *
 * DESIGN: off by default, and then each hook pays one load and one
 * predictable branch (grape__timeline_on). On, a call claims a slot of a
 * fixed array (an atomic add; past GRAPE_TIMELINE_MAX_MB the call is counted
 * as dropped), reads the clock (the sim's host clock on the simulated device,
 * else CLOCK_MONOTONIC), and records events around the real call. Events are
 * resolved once, at exit, against one base event synchronised at the first
 * record, which aligns the device clock with the host's. */
#ifndef GRAPE_INTERPOSE_TIMELINE_H
#define GRAPE_INTERPOSE_TIMELINE_H

#include <stdint.h>

#include "grape/trace.h"
#include "launch.h"

/* Set once at init (GRAPE_TIMELINE with GRAPE_TRACE); read by every hook. */
extern int grape__timeline_on;

/* One call while the timeline is on: its slot (NULL: not recorded, being
 * outside the capture window or past the size limit; its held ops are still
 * numbered, so that recorded submissions name the right calls). */
typedef struct grape_tl_call_s {
  void* slot;
  int on;
} grape_tl_call_t;

/* Reads the options once (at init). */
void grape__timeline_init(void);

/* The call of hook row api (the entry point the program called; -1 for the
 * shim's own submissions) starts now: claims a slot and reads the clock, when
 * inside the capture window (GRAPE_TIMELINE_DELAY_MS,
 * GRAPE_TIMELINE_DURATION_MS). */
void grape__tl_start(grape_tl_call_t* c, int api);

/* For NVTX ranges: the timeline's clock now (*t, ns after its origin) and the
 * calling thread's number; *rec_ok says whether records are kept now (the
 * capture window). @return 0 when the timeline cannot record at all. */
int grape__tl_now(uint64_t* t, uint32_t* thread, int* rec_ok);

/* The call's device work is about to be submitted on (stream, ptds): records
 * the start event there. */
void grape__tl_dev_begin(grape_tl_call_t* c, const void* stream, int ptds);

/* The call ended (ok: the driver took it, or graph mode held it: held). A
 * failed call gives its slot up. */
void grape__tl_launch_end(grape_tl_call_t* c, const grape_launch_t* l, int ok, int held);
void grape__tl_memop_end(grape_tl_call_t* c, const grape_memop_t* m, int ok, int held);
/* A copy or memset (kind GRAPE_TRACE_OP_MEMCPY or _MEMSET) that is no op of
 * a region (it touches host memory or an array, is synchronous, or is of a
 * form graph mode does not hold), of bytes; a copy's direction dir
 * (GRAPE_TRACE_DIR_*; a memset's is NONE). */
void grape__tl_copy_end(grape_tl_call_t* c, uint32_t kind, const void* stream, int ptds,
                        uint64_t bytes, uint32_t dir, int ok);

/* The shim submits held work on stream (a handle of the driver's): a graph of
 * nops ops (kind GRAPE_TRACE_TL_GRAPH, what = nops), or one op (a kernel's
 * function id, or a memop's bytes in what). Call grape__tl_start first. */
void grape__tl_submit_end(grape_tl_call_t* c, uint32_t kind, uint64_t what, const void* stream,
                          int ok);

/* The innermost NVTX range of the calling thread, asked of each record
 * (NVTX registers it when it turns on; until then records name none). */
void grape__timeline_range_source(uint32_t (*innermost)(void));
/* Called as the timeline closes, before any event is resolved: what submits
 * held work (graph mode's exit), so that it is recorded too. */
void grape__timeline_before_close(void (*flush)(void));

/* At exit, before the trace is written: resolves every event into device
 * times. Idempotent. */
void grape__timeline_close(void);

/* For the trace at exit: each recorded call (its function field NONE; a
 * kernel's function in f, NULL when unknown), in slot order. */
typedef void grape_tl_each_fn(const grape_trace_tl_op_t* op, const grape_func_t* f, void* arg);
void grape__timeline_each(grape_tl_each_fn* fn, void* arg);
/* Calls left out (past GRAPE_TIMELINE_MAX_MB), the clock's name and origin. */
void grape__timeline_meta(uint64_t* dropped, const char** clock, uint64_t* origin);

/* The copies and memsets the timeline measured on the device (eager ones
 * and the shim's one-op submissions; not those inside graph launches, which
 * are timed as a whole), by kind and direction: [0][GRAPE_TRACE_DIR_*] the
 * copies (0: direction not known), [1][0] the memsets. Resolves the events
 * first (grape__timeline_close). @return 0 when there is no timeline. */
typedef struct grape_tl_mstat_s {
  uint64_t count, bytes, ns;
} grape_tl_mstat_t;
int grape__timeline_memops(grape_tl_mstat_t out[2][GRAPE_TRACE_DIR_HTOH + 1]);

/* A fork child records nothing (its parent's events are not its own). */
void grape__timeline_reset_child(void);

/* The hooks' shorthand: a call c of hook row api starts (one load and
 * branch when the timeline is off), and whether it is being recorded. */
#define GRAPE_TL_START(c, api)                       \
  grape_tl_call_t c = {NULL, 0};                     \
  if (__builtin_expect(grape__timeline_on, 0))       \
  grape__tl_start(&c, api)
#define GRAPE_TL_ON(c) __builtin_expect((c).on, 0)

#endif

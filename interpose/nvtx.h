/* NVTX ranges (nvtxRangePush/Pop, nvtxRangeStart/End, nvtxMark, and their
 * domain forms): what PyTorch's record_function and emit_nvtx, and any
 * program annotated with NVTX, mark. libgrape.so is an NVTX injection
 * library, as nsys's is: NVTX v3 (header-only, in the program) loads the
 * library NVTX_INJECTION64_PATH names and calls its InitializeInjectionNvtx2,
 * which fills NVTX's callback tables. Without that variable NVTX calls are
 * no-ops and grape sees none; `grape run` sets it.
 *
 * DESIGN: each thread keeps its stack of open push/pop ranges (name, start,
 * the timeline record). A pop adds the range's host time to its name's
 * statistics (the report's "nvtx": count, total, min, max, as nsys's
 * nvtx_sum), a kernel launch counts under every push/pop range open on its
 * thread, as nsys's nvtx_kern_sum counts it (the kernel table by range),
 * and, with GRAPE_TIMELINE, every
 * range and mark is a record of the trace's NVTX section and every timeline
 * op names the innermost range open on its thread. Names are interned once
 * (a string handle of nvtxDomainRegisterString is the interned name). A
 * program that never calls NVTX pays one load and branch per launch
 * (grape__nvtx_on); NVTX calls themselves take a mutex for the statistics,
 * which is fine for ranges around whole operations.
 *
 * nvtx_inject.c is the entry point NVTX calls and the callbacks it installs;
 * this file's functions keep the ranges. The kernels' device times reach the
 * kernel-by-range rows from the closed timeline when the report is written:
 * the timeline asks for the innermost range through the source that turning
 * NVTX on registers, so that it never calls this file. */
#ifndef GRAPE_INTERPOSE_NVTX_H
#define GRAPE_INTERPOSE_NVTX_H

#include <stdint.h>
#include <stdio.h>

#include "grape/trace.h"
#include "funcinfo.h"

struct grape_launch_s;   /* launch.h, which includes this header */

/* 1 once NVTX called InitializeInjectionNvtx2 and grape records. */
extern int grape__nvtx_on;

/* A launch of l succeeded (held or eager): counted under every range open
 * on the calling thread (push/pop), if any. Call through GRAPE_NVTX_LAUNCH. */
__attribute__((cold, noinline)) void grape__nvtx_launch(const struct grape_launch_s* l);
#define GRAPE_NVTX_LAUNCH(l)                         \
  do {                                               \
    if (__builtin_expect(grape__nvtx_on, 0))         \
      grape__nvtx_launch(l);                         \
  } while (0)

/* The calling thread's innermost open push/pop range as a timeline record
 * (1 + its index in the NVTX section), or 0: the timeline's range source. */
uint32_t grape__nvtx_innermost(void);

/* ---- For NVTX's callbacks (nvtx_inject.c), once the shim was started ---- */

/* NVTX's message types (nvtxMessageType_t). */
enum { GRAPE_NVTX_MSG_ASCII = 1, GRAPE_NVTX_MSG_UNICODE = 2, GRAPE_NVTX_MSG_REGISTERED = 3 };
/* A message's name (interned once; ASCII as given, other wide characters as
 * '?', a registered string as its name), and the name's text. */
uint32_t grape__nvtx_name(int type, const void* msg);
const char* grape__nvtx_name_text(uint32_t name);
/* A push/pop range on the calling thread. @return its level (push), or the
 * level left (pop; -1 for a pop without a push), as NVTX answers them. */
int grape__nvtx_push(uint32_t name);
int grape__nvtx_pop(void);
/* A start/end range (any thread may end it): its id, 0 when not kept. */
uint64_t grape__nvtx_start(uint32_t name);
void grape__nvtx_end(uint64_t id);
void grape__nvtx_mark(uint32_t name);
/* NVTX's callbacks are installed: ranges are recorded from now on. */
void grape__nvtx_turn_on(void);

/* Writes "nvtx":{...}, into the report (nothing when NVTX was not used). */
void grape__nvtx_report(FILE* f);

/* For the trace at exit: the names and range records (NULL when none). The
 * arrays stay valid until exit; ranges still open end at the time of the
 * call. */
int grape__nvtx_trace(grape_trace_nvtx_t* out);

/* A fork child records nothing of its parent's open ranges. */
void grape__nvtx_reset_child(void);

#endif

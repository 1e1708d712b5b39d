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
 * which is fine for ranges around whole operations. */
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
 * (1 + its index in the NVTX section), or 0: for each timeline op. */
uint32_t grape__nvtx_innermost(void);

/* A timeline kernel inside range (1 + index) ran on the device for ns: the
 * kernel-by-range rows of that range and of every range around it get the
 * time (at exit, timeline.c). */
void grape__nvtx_kernel_time(uint32_t range, const grape_func_t* func, uint64_t ns);

/* Writes "nvtx":{...}, into the report (nothing when NVTX was not used). */
void grape__nvtx_report(FILE* f);

/* For the trace at exit: the names and range records (NULL when none). The
 * arrays stay valid until exit; ranges still open end at the time of the
 * call. */
int grape__nvtx_trace(grape_trace_nvtx_t* out);

/* A fork child records nothing of its parent's open ranges. */
void grape__nvtx_reset_child(void);

#endif

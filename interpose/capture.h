/* Capture ranges (GRAPE_CAPTURE=cudaProfilerApi): what nsys's
 * --capture-range=cudaProfilerApi does. The program's cudaProfilerStart /
 * cuProfilerStart opens a range and cudaProfilerStop / cuProfilerStop closes
 * it; outside the ranges the timeline, the NVTX ranges, the API call times
 * and, on the simulated device, the device's statistics record nothing.
 *
 * DESIGN: one flag, grape__capture_closed, read with one load and branch by
 * the recorders that honour it (the timeline's slot claim, NVTX's push and
 * launch counting, the sampled API timing): all on paths that are already
 * out of line. Graph mode and path recording do not look at it: replay works
 * the same inside and outside a range. The simulated device's statistics are
 * gated at the device (simcu_private_t.stats_gate), by when work was
 * submitted, so that kernels still running when a range closes count. */
#ifndef GRAPE_INTERPOSE_CAPTURE_H
#define GRAPE_INTERPOSE_CAPTURE_H

/* 1 while GRAPE_CAPTURE asks for ranges and none is open; set at init. */
extern int grape__capture_closed;

/* Reads GRAPE_CAPTURE (at init): with cudaProfilerApi, nothing is recorded
 * until the first range opens. */
void grape__capture_init(void);

/* The program called cudaProfilerStart / cuProfilerStart (start = 1) or the
 * Stop calls (0). Nested starts are one range, as the profiler API's are. */
void grape__capture_profiler(int start);

/* Whether GRAPE_CAPTURE asks for ranges, and how many opened so far (the
 * report's "capture"). */
int grape__capture_ranges(long* opened);

/* A fork child keeps its parent's state: a range open in the parent is open
 * in the child, as the program sees it. */

#endif

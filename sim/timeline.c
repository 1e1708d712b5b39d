/* timeline.c: SIMCU_TIMELINE=<file> writes one line per kernel placed on
 * the device calendar (device.c): the stream's id, the time its
 * dependencies were met and the time its last block ends (simulated ns),
 * its blocks, whether a graph node, and its name. What a trace of kernel
 * start and end gives on a GPU (nsys): the time of a phase of several
 * kernels, for example a fork/join of concurrent branches, which no one
 * kernel's time shows.
 *
 * DESIGN: written as kernels are placed, under the sim's lock (placement
 * order: by readiness within a graph launch); the file is opened at the
 * first kernel and written a line at a time. "%p" in the name becomes the process
 * id, as in SIMCU_REPORT. */
#include "internal.h"

#include <stdio.h>

static FILE* timeline;
static int timeline_state;   /* 0: not looked at, 1: open, -1: off */

static void timeline_open(void) {
  char path[4096];
  timeline_state = -1;
  if (!grape__sim_out_path("SIMCU_TIMELINE", path, sizeof(path)))
    return;
  timeline = fopen(path, "w");
  if (timeline == NULL) {
    grape__sim_logf("cannot write SIMCU_TIMELINE file %s", path);
    return;
  }
  setvbuf(timeline, NULL, _IOLBF, 0);   /* whole lines, readable while the program runs */
  timeline_state = 1;
}

void grape__sim_timeline_kernel(unsigned long long stream, const sim_work_t* w, uint64_t ready,
                                uint64_t end) {
  if (timeline_state == 0)
    timeline_open();
  if (timeline_state < 0)
    return;
  unsigned long long blocks = (unsigned long long)w->u.k.grid[0] * w->u.k.grid[1] * w->u.k.grid[2];
  fprintf(timeline, "%llu %llu %llu %llu %d %s\n", stream, (unsigned long long)ready,
          (unsigned long long)end, blocks, w->u.k.from_graph ? 1 : 0, w->u.k.f->name);
}

void grape__sim_timeline_close(void) {
  if (timeline != NULL)
    fflush(timeline);
}

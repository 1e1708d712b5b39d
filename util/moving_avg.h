/* A moving average of a measured quantity: the one form the house uses for
 * times it learns from samples (host and device times, a sync's wait, node
 * updates per replay).
 *
 * DESIGN: the plain mean of the first `window` samples, then an exponential
 * moving average with weight 1/window, so that the first samples count fully
 * and old ones fade. The sample count is kept beside the average (callers
 * read it: "measured yet?"). Header-only, libc-only. */
#ifndef GRAPE_UTIL_MOVING_AVG_H
#define GRAPE_UTIL_MOVING_AVG_H

#include <stdint.h>

/* Adds sample x to *avg over *n samples so far (counting it). */
static inline void grape__avg_add(double* avg, uint32_t* n, double x, uint32_t window) {
  ++*n;
  *avg += (x - *avg) / (*n < window ? *n : window);
}

#endif

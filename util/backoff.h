/* Waiting longer after each fruitless try: the one back-off of the house
 * (the graph cache's keys measured slower, concurrency plans reverted or
 * not worth building).
 *
 * DESIGN: the wait doubles per try up to 64 times the first (six doublings),
 * so that a thing that keeps failing is tried again rarely but never given up
 * for good: the program's behaviour may change. Header-only, libc-only. */
#ifndef GRAPE_UTIL_BACKOFF_H
#define GRAPE_UTIL_BACKOFF_H

#include <stdint.h>

#define GRAPE_BACKOFF_MAX_SHIFT 6

/* When to try again, from now, with a first wait of `wait` (in the caller's
 * unit: sightings, launches): wait << tries, at most << 6; counts the try. */
static inline uint64_t grape__backoff(uint64_t now, uint64_t wait, uint32_t* tries) {
  uint32_t shift = *tries < GRAPE_BACKOFF_MAX_SHIFT ? *tries : GRAPE_BACKOFF_MAX_SHIFT;
  ++*tries;
  return now + (wait << shift);
}

#endif

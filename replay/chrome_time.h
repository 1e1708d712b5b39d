/* Times in Chrome trace-event JSON as viewers read them (see export.c's
 * DESIGN): whole nanoseconds printed as microseconds with three decimals,
 * and durations shortened by the last bit a viewer's double sum would add. */
#ifndef GRAPE_REPLAY_CHROME_TIME_H
#define GRAPE_REPLAY_CHROME_TIME_H

#include <stddef.h>
#include <stdint.h>

/* A non-negative count of nanoseconds as microseconds, exactly: "12.345". */
void grape__us_text(int64_t ns, char* out, size_t cap);

/* The duration to print for a slice [start, start + dur) ns, so that a viewer
 * adding the parsed numbers as doubles ends it no later than start + dur. */
int64_t grape__viewer_safe_dur(int64_t start, int64_t dur);

#endif

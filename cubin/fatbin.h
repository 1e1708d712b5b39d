/* fatbin.h: walking fatbin containers (fatbin.c), for the file readers.
 *
 * DESIGN: grape__fatbin_split only bounds and lists the containers of a byte
 * range, so that callers can plan one job per container (jobs.c, hostfile.c);
 * grape__fatbin_parse_into walks their entries into a set.
 */
#ifndef GRAPE_CUBIN_FATBIN_H
#define GRAPE_CUBIN_FATBIN_H

#include <stddef.h>
#include <stdint.h>

#include "grape/cubin.h"

/* Magic numbers (CUDA-NOTES.md, "Fatbin containers"). */
#define GRAPE__FATBIN_MAGIC 0xBA55ED50u
#define GRAPE__WRAPPER_MAGIC 0x466243B1u

/* One container found in a byte range: [off, off + len) with its header size. */
typedef struct grape__span_s {
  size_t off;
  size_t len;
  uint16_t hsize;
} grape__span_t;

/* Parses containers in data[0, size) into fb; base_off is added to offsets in
 * messages. data must stay valid as long as fb (the caller makes it owned). */
int grape__fatbin_parse_into(grape_fatbin_t* fb, const uint8_t* data, size_t size,
                             size_t base_off, grape_cubin_err_t* err);

/* Splits data[0, size) into containers (zero padding between them allowed),
 * validating each container header. *spans is malloc'd; *n may be 0 only
 * with an error. */
int grape__fatbin_split(const uint8_t* data, size_t size, size_t base_off, grape__span_t** spans,
                        size_t* n, grape_cubin_err_t* err);

#endif

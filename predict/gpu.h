/* GPU spec table (gpu.c): internal part. */
#ifndef GRAPE_PREDICT_GPU_H
#define GRAPE_PREDICT_GPU_H

#include "grape/predict.h"

/* Adds or overrides a GPU from the text of a NeuSight device JSON (read by
 * util/json.h). @return 0 and *out, or -EINVAL / -ENOMEM with what is wrong
 * in err (errcap bytes; err may be NULL). Not thread-safe. */
int grape__gpu_parse_json(const char* json, const grape_gpu_spec_t** out, char* err, size_t errcap);

/* @return the board power (TDP, W) of a built-in GPU from its datasheet, or
 * 0 when unknown (a GPU loaded from JSON under a new name). */
double grape__gpu_tdp_w(const grape_gpu_spec_t* g);

/* @return 1 when a and b are of one architecture: the same compute
 * capability (sm_80 with sm_80, never sm_86 or sm_89; sm_60 never with
 * sm_61), so that a kernel's shape-level behaviour learned on one carries
 * to the other: one chip family in another board (memory, clocks, power);
 * 0 otherwise, or when either's arch is unknown. */
int grape__gpu_same_arch(const grape_gpu_spec_t* a, const grape_gpu_spec_t* b);
/* g's compute capability X.Y as XY (80 for sm_80); -1 when g is NULL or its
 * arch does not parse. */
long grape__gpu_cc(const grape_gpu_spec_t* g);

#endif

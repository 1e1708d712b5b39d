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
 * capability major and the same SM generation (Pascal sm_60..62, Volta
 * sm_70/72, Turing sm_75, Ampere sm_80..87, Ada sm_89, Hopper sm_90...), so
 * that a kernel's shape-level behaviour learned on one carries to the
 * other; 0 otherwise, or when either's arch is unknown. */
int grape__gpu_same_arch(const grape_gpu_spec_t* a, const grape_gpu_spec_t* b);

#endif

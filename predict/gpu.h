/* GPU spec table (gpu.c): internal part. */
#ifndef GRAPE_PREDICT_GPU_H
#define GRAPE_PREDICT_GPU_H

#include "grape/predict.h"

/* Adds or overrides a GPU from the text of a NeuSight device JSON.
 * @return 0 and *out, or -EINVAL / -ENOMEM. Not thread-safe. */
int grape__gpu_parse_json(const char* json, const grape_gpu_spec_t** out);

/* @return the board power (TDP, W) of a built-in GPU from its datasheet, or
 * 0 when unknown (a GPU loaded from JSON under a new name). */
double grape__gpu_tdp_w(const grape_gpu_spec_t* g);

#endif

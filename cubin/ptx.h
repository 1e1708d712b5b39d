/* ptx.h: PTX text images (ptx.c). */
#ifndef GRAPE_CUBIN_PTX_H
#define GRAPE_CUBIN_PTX_H

#include "grape/cubin.h"

/* Kernel names and parameter layouts from PTX text img->data[0, img->size). */
int grape__ptx_parse(grape_image_t* img, grape_cubin_err_t* err);

#endif

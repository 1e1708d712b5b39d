/* The EGL types cuda_egl_interop.h uses (see sim/interop/README.md). */
#ifndef GRAPE_SIM_INTEROP_EGL_H
#define GRAPE_SIM_INTEROP_EGL_H
#include <stdint.h>
typedef int32_t EGLint;
#endif

/* The EGL extension types cuda_egl_interop.h uses (see sim/interop/README.md):
 * opaque handles. */
#ifndef GRAPE_SIM_INTEROP_EGLEXT_H
#define GRAPE_SIM_INTEROP_EGLEXT_H
typedef void* EGLImageKHR;
typedef void* EGLStreamKHR;
typedef void* EGLSyncKHR;
#endif

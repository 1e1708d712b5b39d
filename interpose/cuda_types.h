/* The CUDA headers as the shim sees them: every declaration under its real
 * exported name. __CUDA_API_VERSION_INTERNAL stops cuda.h from renaming calls to
 * their _v2/_ptsz variants, so that cuMemAlloc_v2 and cuGetProcAddress (the
 * 4-argument one) can be defined here with the prototypes the driver exports. */
#ifndef GRAPE_INTERPOSE_CUDA_TYPES_H
#define GRAPE_INTERPOSE_CUDA_TYPES_H

#define __CUDA_API_VERSION_INTERNAL 1
/* The shim must define and call deprecated entry points too. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cuda.h>
#include <cuda_runtime_api.h>

#endif

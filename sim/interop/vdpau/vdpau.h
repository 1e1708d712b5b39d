/* The VDPAU types cuda_vdpau_interop.h uses (see sim/interop/README.md):
 * object handles are 32-bit, VdpGetProcAddress is a function type. */
#ifndef GRAPE_SIM_INTEROP_VDPAU_H
#define GRAPE_SIM_INTEROP_VDPAU_H
#include <stdint.h>
typedef uint32_t VdpDevice;
typedef uint32_t VdpVideoSurface;
typedef uint32_t VdpOutputSurface;
typedef int VdpStatus;
typedef VdpStatus VdpGetProcAddress(VdpDevice device, uint32_t function_id,
                                    void** function_pointer);
#endif

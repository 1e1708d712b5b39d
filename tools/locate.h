/* Finding libgrape.so, the simulated device and a real CUDA device for the
 * grape CLI (see locate.c). */
#ifndef GRAPE_TOOLS_LOCATE_H
#define GRAPE_TOOLS_LOCATE_H

#include <stddef.h>

/* out = a + "/" + b. @return 0, or -1 when it does not fit. */
int grape__path_join(char* out, size_t cap, const char* a, const char* b);

/* 1 when path exists. */
int grape__path_exists(const char* path);

/* Absolute path of libgrape.so (GRAPE_LIB, else relative to grape: the build
 * tree's interpose/ or the install's libdir).
 * @return 0, or -1 when not found. */
int grape__find_libgrape(char* out, size_t cap);

/* Directory of the simulated device's libcuda.so.1 (GRAPE_SIM_DIR, else
 * relative to grape: the build tree's sim/ or the install's libdir/grape/sim).
 * @return 0, or -1 when not found. */
int grape__find_simdir(char* out, size_t cap);

/* 1 when the real driver loads, initialises and reports at least one device
 * (probed in a forked child). */
int grape__real_device_present(void);

#endif

/* companion_bodies.c: a CPU body living in a separate shared object, found
 * by the sim through SIMCU_KERNELS (see sim/simcu.h). */
#include "simcu.h"

SIMCU_KERNEL(k_companion) {
  int* a = SIMCU_ARG(0, int*);
  SIMCU_FOR_THREADS(t) { a[SIMCU_GLOBAL_X(t)] = 77; }
}

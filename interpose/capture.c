/* Capture ranges (see capture.h for the design). */
#include "capture.h"

#include <stddef.h>

#include "cuda_types.h"
#include "grape/simcu_private.h"
#include "state.h"
#include "log.h"
#include "options.h"
#include "real.h"

int grape__capture_closed;

static int wanted;     /* GRAPE_CAPTURE=cudaProfilerApi */
static long opened;    /* ranges opened so far */

void grape__capture_init(void) {
  wanted = grape__option_get(grape_option_capture) == 1;
  __atomic_store_n(&grape__capture_closed, wanted, __ATOMIC_RELEASE);
}

/* The simulated device's gate of its statistics, or NULL on a real driver
 * (which keeps none the report reads). */
static void (*sim_gate(void))(int) {
  typedef CUresult (*get_table_t)(const void**, const CUuuid*);
  get_table_t get_table = (get_table_t)grape__real_driver("cuGetExportTable");
  static const CUuuid id = {SIMCU_PRIVATE_UUID};
  const void* table = NULL;
  void (*gate)(int) = NULL;
  GRAPE_NO_REENTRY({
    if (get_table != NULL && get_table(&table, &id) == CUDA_SUCCESS && table != NULL) {
      const simcu_private_t* t = table;
      if (t->size >= offsetof(simcu_private_t, stats_gate) + sizeof(t->stats_gate))
        gate = t->stats_gate;
    }
  });
  return gate;
}

void grape__capture_profiler(int start) {
  if (!wanted)
    return;
  int was_closed = __atomic_exchange_n(&grape__capture_closed, !start, __ATOMIC_ACQ_REL);
  if (was_closed == !start)
    return;   /* a second start inside a range, or a stop outside one */
  if (start)
    __atomic_fetch_add(&opened, 1, __ATOMIC_RELAXED);
  grape_log_info("GRAPE_CAPTURE: capture range %s (%s)", start ? "opened" : "closed",
                 start ? "cudaProfilerStart" : "cudaProfilerStop");
  void (*gate)(int) = sim_gate();
  if (gate != NULL)
    GRAPE_NO_REENTRY(gate(start));
}

int grape__capture_ranges(long* n) {
  *n = __atomic_load_n(&opened, __ATOMIC_RELAXED);
  return wanted;
}

/* Life cycle of the shim: init, fork, exit (report and trace). The state
 * its parts share (on/off, counters) is state.c's.
 *
 * DESIGN: init only reads options and sets up logging: it never touches CUDA
 * (a program that never uses CUDA must run unaffected, and CUDA may not be
 * initialised from a constructor). It runs from the constructor, or earlier
 * from the first hook if another library's constructor calls CUDA first. At
 * exit, the destructor ends every open region and writes the trace and the
 * report (interrupt.c writes them instead when a signal ends the process).
 * A fork child starts clean: counters, regions, paths, the function
 * table, the image registry and the allocation map are forgotten (not freed:
 * another thread of the parent may have held one of their locks at the
 * fork). */
#include "shim.h"

#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "allocmap.h"
#include "bind.h"
#include "funcattrs.h"
#include "funcinfo.h"
#include "graph.h"
#include "images.h"
#include "interrupt.h"
#include "outfile.h"
#include "real.h"
#include "report.h"
#include "streams.h"
#include "capture.h"
#include "nvtx.h"
#include "timeline.h"
#include "trace.h"
#include "grape/grape.h"

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* Every part forgets the parent's state (none is freed: another thread of
 * the parent may have held a lock). */
static void reset_child(void) {
  grape__state_reset_child();
  grape__graph_reset_child();
  grape__timeline_reset_child();
  grape__nvtx_reset_child();
  grape__func_attrs_reset();
  grape__streams_reset(0);
  grape__func_reset(0);
  grape__images_reset(0);
  grape__alloc_reset(0);
  grape__log_reset();
}

static void atfork_child(void) {
  reset_child();
  grape__interrupt_reset_child();
  grape__report_mark_forked();
}

static void register_atfork(void) {
  pthread_atfork(NULL, NULL, atfork_child);
}

static void do_init(void) {
  grape__options_load();
  int mode = (int)grape__option_get(grape_option_mode);
  grape__mode = mode;
  pthread_once(&atfork_once, register_atfork);
  if (grape__log_level() >= GRAPE_LOG_INFO) {
    grape_log_info("libgrape %u.%u.%u loaded", grape_version() / 10000, grape_version() / 100 % 100,
                   grape_version() % 100);
    grape__options_print();
  }
  /* Outputs that cannot be written are said now, not at exit. */
  grape__log_open();
  grape__outfile_check(grape_option_report);
  grape__outfile_check(grape_option_trace);
  grape__capture_init();
  if (mode != GRAPE_MODE_OFF)
    grape__timeline_init();
  grape__timeline_before_close(grape__graph_exit);   /* held work is recorded first */
  /* Statistics or a timeline asked for: every API call timed, not a sample. */
  if (grape__option_get(grape_option_api_times) == 1 || grape__timeline_on) {
    __atomic_store_n(&grape__api_sample_mask, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&grape__api_sample_mask_late, 0, __ATOMIC_RELAXED);
  }
  __atomic_store_n(&grape__state, mode == GRAPE_MODE_OFF ? GRAPE_STATE_OFF : GRAPE_STATE_ON,
                   __ATOMIC_RELEASE);
}

int grape__init(void) {
  pthread_once(&init_once, do_init);
  return __atomic_load_n(&grape__state, __ATOMIC_ACQUIRE);
}

__attribute__((constructor)) static void grape_ctor(void) {
  grape__bind_init();
  grape__init();
}

__attribute__((destructor)) static void grape_dtor(void) {
  if (grape__state == GRAPE_STATE_UNINIT)
    return;
  grape__depth++;   /* CUDA libraries tearing down must not re-enter the recorder */
  grape__flush_all();
  grape__outputs_write();
}


/* Life cycle of the shim: init, passthrough fallback, fork, exit report.
 *
 * DESIGN: init only reads options and sets up logging: it never touches CUDA
 * (a program that never uses CUDA must run unaffected, and CUDA may not be
 * initialised from a constructor). It runs from the constructor, or earlier
 * from the first hook if another library's constructor calls CUDA first. At
 * exit, the destructor ends every open region and writes the report. A fork
 * child starts clean: counters, regions, paths, the function table and the
 * allocation map are forgotten (not freed: another thread of the parent may
 * have held one of their locks at the fork). */
#include "internal.h"

#include <pthread.h>
#include <string.h>

#include "allocmap.h"
#include "real.h"
#include "funcinfo.h"
#include "recorder.h"
#include "report.h"
#include "trace.h"
#include "grape/grape.h"

int grape__state = GRAPE_STATE_UNINIT;
int grape__mode = GRAPE_MODE_OBSERVE;
__thread int grape__depth __attribute__((tls_model("initial-exec")));
grape_counters_t grape__counters;
int grape__captures;

int grape__stream_capturing(const void* stream, int ptds) {
  typedef CUresult (*is_capturing_fn)(CUstream, CUstreamCaptureStatus*);
  static is_capturing_fn fn;
  if (fn == NULL) {
    fn = (is_capturing_fn)grape__real_driver("cuStreamIsCapturing");
    if (fn == NULL)
      return 0;
  }
  CUstream s = (CUstream)stream;
  if (s == NULL && ptds)
    s = CU_STREAM_PER_THREAD;
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  CUresult rc;
  GRAPE_NO_REENTRY(rc = fn(s, &st));
  return rc == CUDA_SUCCESS && st != CU_STREAM_CAPTURE_STATUS_NONE;
}

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

static void atfork_child(void) {
  grape__reset_child();
}

static void register_atfork(void) {
  pthread_atfork(NULL, NULL, atfork_child);
}

static void do_init(void) {
  int mode = (int)grape__option_get(grape_option_mode);
  if (mode == GRAPE_MODE_GRAPH) {
    grape_log_warn("GRAPE_MODE=graph is not implemented yet; running as observe");
    mode = GRAPE_MODE_OBSERVE;
  }
  grape__mode = mode;
  pthread_once(&atfork_once, register_atfork);
  if (grape__log_level() >= GRAPE_LOG_INFO) {
    grape_log_info("libgrape %u.%u.%u loaded", grape_version() / 10000, grape_version() / 100 % 100,
                   grape_version() % 100);
    grape__options_print();
  }
  __atomic_store_n(&grape__state, mode == GRAPE_MODE_OFF ? GRAPE_STATE_OFF : GRAPE_STATE_ON,
                   __ATOMIC_RELEASE);
}

int grape__init(void) {
  pthread_once(&init_once, do_init);
  return __atomic_load_n(&grape__state, __ATOMIC_ACQUIRE);
}

void grape__disable(const char* why) {
  if (__atomic_exchange_n(&grape__state, GRAPE_STATE_OFF, __ATOMIC_ACQ_REL) == GRAPE_STATE_ON)
    grape_log_warn("%s; passing every call through from now on", why);
}

void grape__reset_child(void) {
  memset(&grape__counters, 0, sizeof(grape__counters));
  grape__captures = 0;
  grape__rec_reset(0);
  grape__func_reset(0);
  grape__alloc_reset(0);
  grape__log_reset();
  grape__depth = 0;
}

__attribute__((constructor)) static void grape_ctor(void) {
  grape__init();
}

__attribute__((destructor)) static void grape_dtor(void) {
  if (grape__state == GRAPE_STATE_UNINIT)
    return;
  grape__depth++;   /* CUDA libraries tearing down must not re-enter the recorder */
  grape__rec_end_all();
  grape__report_write();
  grape__trace_write();
}


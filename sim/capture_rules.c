/* capture_rules.c: the rules CUDA sets for what may happen while a stream
 * capture is in progress (capture.c makes the graph).
 *
 * DESIGN: a synchronising call on a capturing stream, or on the legacy stream
 * while a blocking stream captures, fails and invalidates the capture; a
 * "potentially unsafe" call (allocation, free, device sync) is judged by the
 * calling thread's capture interaction mode
 * (cuThreadExchangeStreamCaptureMode), which is thread-local, as is the
 * count of the thread's own non-relaxed captures. Streams, memory and the
 * other entry points ask these rules; they read the shared state and call
 * nothing above it.
 */
#include "internal.h"

static _Thread_local CUstreamCaptureMode tls_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
static _Thread_local int tls_own_strict;   /* this thread's non-relaxed captures */

int grape__sim_capturing(struct CUstream_st* s) {
  pthread_mutex_lock(&grape__sim.lock);
  int c = s->cap != NULL;
  pthread_mutex_unlock(&grape__sim.lock);
  return c;
}

/* Lock held. */
static void invalidate_all_strict(void) {
  for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
    if (t->cap != NULL && t->cap->mode != CU_STREAM_CAPTURE_MODE_RELAXED)
      t->cap->invalidated = 1;
}

/* A "potentially unsafe" call (cuMemAlloc, cuMemFree, cuCtxSynchronize, ...),
 * judged by the calling thread's capture interaction mode. */
CUresult grape__sim_unsafe_call(void) {
  if (tls_mode == CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_SUCCESS;
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (tls_own_strict > 0 ||
      (tls_mode == CU_STREAM_CAPTURE_MODE_GLOBAL && grape__sim.active_global_captures > 0)) {
    invalidate_all_strict();
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  }
  pthread_mutex_unlock(&grape__sim.lock);
  return r;
}

/* A synchronising operation on s: illegal if s is capturing (and that
 * invalidates the capture), or if it is the legacy stream while a blocking
 * stream captures. */
CUresult grape__sim_capture_check(struct CUstream_st* s, int legacy_ok) {
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&grape__sim.lock);
  if (s->cap != NULL) {
    s->cap->invalidated = 1;
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (s->legacy && !legacy_ok) {
    for (struct CUstream_st* t = grape__sim.all_streams; t != NULL; t = t->all_next)
      if (!(t->flags & CU_STREAM_NON_BLOCKING) && t->cap != NULL) {
        t->cap->invalidated = 1;
        r = CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
      }
  }
  pthread_mutex_unlock(&grape__sim.lock);
  if (r == CUDA_SUCCESS)
    r = grape__sim_unsafe_call();
  return r;
}

void grape__sim_capture_thread_account(CUstreamCaptureMode mode, int delta) {
  if (mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    tls_own_strict += delta;
}

SIM_EXPORT CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  SIM_COUNT(cuThreadExchangeStreamCaptureMode);
  if (mode == NULL || (unsigned)*mode > CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  CUstreamCaptureMode old = tls_mode;
  tls_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}

/* Lock held. */
void grape__sim_capture_invalidate(struct CUstream_st* s) {
  if (s->cap != NULL)
    s->cap->invalidated = 1;
}

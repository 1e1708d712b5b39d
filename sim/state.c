/* state.c: the simulated driver's process state and what every entry point
 * checks of it: initialisation, the primary context and each thread's
 * current one, the sticky device fault; the entry points' names (the
 * counters' keys), the sim's log line and its output files' names.
 *
 * DESIGN: the bottom of the driver: every other file reads this state and
 * calls these checks, and this file calls none of them. Contexts beyond the
 * primary one are not simulated; the current context is a thread-local
 * pointer that is either NULL or a primary context (core.c's entry points
 * set it).
 */
#include "internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The primary context until the first reset (later ones are allocated). */
static struct CUctx_st first_primary = {.primary = 1};

sim_state_t grape__sim = {
  .lock = PTHREAD_MUTEX_INITIALIZER,
  .done_cv = PTHREAD_COND_INITIALIZER,
  .primary = &first_primary,
};

const char* const grape__sim_sym_names[SYM__COUNT] = {
#define SIM_P1(base, ver, sym) #sym,
#define SIM_P2(base, ver, sym, ptsym) #sym, #ptsym,
#define SIM_EXTRA(sym) #sym,
#include "api.def"
#define SIM_STUB(sym) #sym,
#include "sim_stub_syms.h"
#undef SIM_STUB
};

static _Thread_local struct CUctx_st* tls_ctx;
static _Thread_local int tls_ctx_set;   /* the thread has called cuCtxSetCurrent/PushCurrent */

void grape__sim_logf(const char* fmt, ...) {
  char buf[1024];   /* room for a library's path in a line */
  int n = snprintf(buf, sizeof(buf), "simcu: ");
  va_list ap;
  va_start(ap, fmt);
  n += vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  if (n > (int)sizeof(buf) - 2)
    n = (int)sizeof(buf) - 2;
  buf[n++] = '\n';
  ssize_t w = write(2, buf, (size_t)n);
  (void)w;
}

CUresult grape__sim_check_init(void) {
  return grape__sim.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
}

/* ---- Contexts ---- */

/* As with the real driver, a thread has no current context until it sets one
 * (the runtime does so on each thread's first call); calls that need one fail
 * with CUDA_ERROR_INVALID_CONTEXT, so a missing cuCtxSetCurrent shows here as
 * it would on a GPU. A retained-then-released primary context is not current. */
struct CUctx_st* grape__sim_primary(void) {
  return atomic_load(&grape__sim.primary);
}

struct CUctx_st* grape__sim_current_ctx(void) {
  if (!tls_ctx_set || tls_ctx == NULL || atomic_load(&tls_ctx->destroyed))
    return NULL;
  return tls_ctx->refs > 0 ? tls_ctx : NULL;
}

CUresult grape__sim_ctx_error(void) {
  if (tls_ctx_set && tls_ctx != NULL && atomic_load(&tls_ctx->destroyed))
    return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  return grape__sim_current_ctx() != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

struct CUctx_st* grape__sim_ctx_get(void) {
  return tls_ctx_set ? tls_ctx : NULL;
}

void grape__sim_ctx_set(struct CUctx_st* c) {
  tls_ctx = c;
  tls_ctx_set = 1;
}

CUresult grape__sim_sticky(void) {
  return (CUresult)atomic_load(&grape__sim.sticky);
}

CUresult grape__sim_need_ctx(void) {
  SIM_TRY(grape__sim_check_init());
  SIM_TRY(grape__sim_ctx_error());
  return grape__sim_sticky();
}

void grape__sim_fork_lock(pthread_mutex_t* m, int phase) {
  if (phase == SIM_FORK_PREPARE)
    pthread_mutex_lock(m);
  else
    pthread_mutex_unlock(m);
}

/* The file named by env var `var` ("%p" becomes the process id, so programs
 * that spawn others keep one file each) in path, or 0 when unset. */
int grape__sim_out_path(const char* var, char* path, size_t cap) {
  const char* env = getenv(var);
  if (env == NULL || env[0] == '\0' || cap < 32)
    return 0;
  size_t k = 0;
  for (const char* c = env; *c != '\0' && k + 24 < cap; c++) {
    if (c[0] == '%' && c[1] == 'p') {
      k += (size_t)snprintf(path + k, cap - k, "%ld", (long)getpid());
      c++;
    } else {
      path[k++] = *c;
    }
  }
  path[k] = '\0';
  return 1;
}

/* The outputs of an interrupted process: a program stopped by SIGINT, SIGTERM
 * or SIGHUP still writes its report and trace of what ran so far, then dies
 * by that signal as it would have without the shim.
 *
 * DESIGN: a process killed by a signal runs no destructors, so the shim takes
 * those three signals where the program left them at their default action
 * (never a handler or an ignore of the program's own, and a handler the
 * program installs later replaces the shim's). Writing the report and the
 * trace allocates and takes locks, which a signal handler must not do (the
 * interrupted thread may hold the allocator's lock), so the handler does only
 * async-signal-safe things: it wakes a writer thread through a pipe, waits on
 * a second pipe for at most WAIT_MS, restores the default action and raises
 * the signal again, which is delivered when the handler returns. The writer
 * thread, started when the process first uses CUDA (a process without CUDA
 * work has nothing to save) with every signal blocked, writes the outputs in
 * an ordinary context. Should it block (the interrupted thread holding a lock
 * the writer needs), the wait ends and the process dies without them rather
 * than hang. The destructor and the writer write the outputs once between
 * them (outputs_state). A fork child starts its own writer. */
#include "interrupt.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "state.h"
#include "log.h"
#include "report.h"
#include "trace.h"

#define WAIT_MS 10000   /* the longest a signal waits for the outputs */

static const int caught_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define NCAUGHT (sizeof(caught_signals) / sizeof(caught_signals[0]))

static int wake_pipe[2] = {-1, -1};    /* handler -> writer */
static int done_pipe[2] = {-1, -1};    /* writer -> handler */
static int writer_up;                  /* a writer thread waits on wake_pipe */
static int armed;                      /* arming was tried in this process */
static int interrupted_by;             /* the signal that ended the process, or 0 */
static int outputs_state;              /* 0 not written, 1 being written, 2 written */
static pthread_mutex_t arm_lock = PTHREAD_MUTEX_INITIALIZER;

int grape__interrupt_signal(void) {
  return __atomic_load_n(&interrupted_by, __ATOMIC_ACQUIRE);
}

void grape__outputs_write(void) {
  int expected = 0;
  if (!__atomic_compare_exchange_n(&outputs_state, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    /* The other writer is at it: wait until it is done (the handler's own
     * wait bounds this). */
    struct timespec ms = {0, 1000000};
    while (__atomic_load_n(&outputs_state, __ATOMIC_ACQUIRE) != 2)
      nanosleep(&ms, NULL);
    return;
  }
  /* The trace first, so that the report can name the file it went to. */
  grape__trace_write();
  grape__report_write(grape__interrupt_signal());
  __atomic_store_n(&outputs_state, 2, __ATOMIC_RELEASE);
}

static void* writer_main(void* arg) {
  (void)arg;
  grape__depth = 1;   /* its driver calls (device name, ...) are the shim's own */
  char c;
  while (read(wake_pipe[0], &c, 1) < 0 && errno == EINTR)
    ;
  grape__outputs_write();
  while (write(done_pipe[1], "x", 1) < 0 && errno == EINTR)
    ;
  return NULL;
}

static void on_signal(int sig) {
  int saved = errno;
  int first = 0;
  /* The first signal wakes the writer. A second one, delivered to another
   * thread meanwhile (the terminal's and grape run's copy of one Ctrl-C),
   * must not end the process before the outputs are written: every handler
   * waits for the same done byte, which nobody reads. */
  int winner = __atomic_compare_exchange_n(&interrupted_by, &first, sig, 0, __ATOMIC_ACQ_REL,
                                           __ATOMIC_ACQUIRE);
  if (__atomic_load_n(&writer_up, __ATOMIC_ACQUIRE)) {
    if (winner) {
      char c = (char)sig;
      (void)!write(wake_pipe[1], &c, 1);
    }
    struct pollfd p = {done_pipe[0], POLLIN, 0};
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
      clock_gettime(CLOCK_MONOTONIC, &t);
      long left = WAIT_MS - ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000);
      if (left <= 0 || poll(&p, 1, (int)left) != -1 || errno != EINTR)
        break;
    }
  }
  /* Die by the signal, as without the shim: it stays blocked until the
   * handler returns, then the default action ends the process. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
  errno = saved;
}

static int open_pipes(void) {
  if (pipe2(wake_pipe, O_CLOEXEC) != 0)
    return -errno;
  if (pipe2(done_pipe, O_CLOEXEC) != 0) {
    int err = -errno;
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    wake_pipe[0] = wake_pipe[1] = -1;
    return err;
  }
  return 0;
}

/* Starts the writer with every signal blocked, so that no signal meant for
 * the program is delivered to it. */
static int start_writer(void) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_attr_setstacksize(&attr, 256 << 10);
  pthread_t t;
  int err = pthread_create(&t, &attr, writer_main, NULL);
  pthread_attr_destroy(&attr);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return -err;
}

void grape__interrupt_arm(void) {
  if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE))
    return;
  pthread_mutex_lock(&arm_lock);
  if (armed) {
    pthread_mutex_unlock(&arm_lock);
    return;
  }
  __atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
  const char* report = grape__option_str(grape_option_report);
  const char* trace = grape__option_str(grape_option_trace);
  int wanted = (report != NULL && *report) || (trace != NULL && *trace) || grape__run_dir() != NULL;
  int err = wanted ? open_pipes() : 0;
  if (wanted && err == 0 && (err = start_writer()) != 0) {
    close(wake_pipe[0]);
    close(wake_pipe[1]);
    close(done_pipe[0]);
    close(done_pipe[1]);
  }
  if (wanted && err == 0) {
    __atomic_store_n(&writer_up, 1, __ATOMIC_RELEASE);
    for (size_t i = 0; i < NCAUGHT; i++) {
      struct sigaction old, sa;
      if (sigaction(caught_signals[i], NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) ||
          old.sa_handler != SIG_DFL)
        continue;   /* the program's own handler, or ignored */
      memset(&sa, 0, sizeof(sa));
      sa.sa_handler = on_signal;
      sigemptyset(&sa.sa_mask);
      for (size_t k = 0; k < NCAUGHT; k++)
        sigaddset(&sa.sa_mask, caught_signals[k]);
      sa.sa_flags = SA_RESTART;
      sigaction(caught_signals[i], &sa, NULL);
    }
  } else if (wanted) {
    grape_log_warn("cannot start the thread that saves the report and trace on SIGINT/SIGTERM (%s); "
                   "an interrupted run will leave none", strerror(-err));
  }
  pthread_mutex_unlock(&arm_lock);
}

void grape__interrupt_reset_child(void) {
  /* The parent's writer thread did not come along: this process arms anew
   * at its first CUDA call (the handlers it inherited wait for no one until
   * then). Its pipes are the parent's: closed, so that the parent's writer
   * is not woken from here. */
  pthread_mutex_init(&arm_lock, NULL);
  __atomic_store_n(&writer_up, 0, __ATOMIC_RELEASE);
  for (int i = 0; i < 2; i++) {
    if (wake_pipe[i] >= 0)
      close(wake_pipe[i]);
    if (done_pipe[i] >= 0)
      close(done_pipe[i]);
    wake_pipe[i] = done_pipe[i] = -1;
  }
  armed = 0;
  interrupted_by = 0;
  outputs_state = 0;
}

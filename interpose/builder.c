/* The builder thread (see builder.h for the design). */
#include "builder.h"

#include <pthread.h>
#include <sched.h>

#include "state.h"
#include "log.h"
#include "options.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int wakeups;           /* builds queued since the builder last looked */
static grape_gc_t* target;    /* the cache it builds for */

static void* builder_main(void* arg) {
  (void)arg;
  grape__depth = 1;   /* its driver calls are the shim's own */
  for (;;) {
    pthread_mutex_lock(&lock);
    while (wakeups == 0)
      pthread_cond_wait(&cv, &lock);
    wakeups = 0;
    grape_gc_t* c = target;
    pthread_mutex_unlock(&lock);
    while (c != NULL && grape_gc_build_pending(c))
      ;
  }
  return NULL;
}

void grape__builder_wake(void) {
  pthread_mutex_lock(&lock);
  wakeups++;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&lock);
}

/* True when this process may run on two CPUs or more. */
static int spare_cpu(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) != 0)
    return 0;
  return CPU_COUNT(&set) >= 2;
}

void grape__builder_serve(grape_gc_t* c) {
  pthread_mutex_lock(&lock);
  target = c;
  wakeups++;
  pthread_cond_signal(&cv);
  pthread_mutex_unlock(&lock);
}

/* Where graphs are built, in words: written by the thread that makes the
 * cache (once, before it is published) and by a fork child; read by the
 * report's writer on any thread (relaxed atomics). */
static const char* kind_why = "graph mode is off";

static void set_why(const char* why) {
  __atomic_store_n(&kind_why, why, __ATOMIC_RELAXED);
}

const char* grape__builder_why(void) {
  return __atomic_load_n(&kind_why, __ATOMIC_RELAXED);
}

int grape__builder_start(void) {
  long how = grape__option_get(grape_option_builder);   /* 0 auto, 1 thread, 2 inline */
  if (how == 2) {
    set_why("inline, on the program's thread: GRAPE_BUILDER=inline");
    return 0;
  }
  if (how == 0 && !spare_cpu()) {
    set_why("inline, on the program's thread: the process may run on one CPU only (affinity), "
            "where a builder thread would take the program's own time");
    return 0;
  }
  set_why(how == 1 ? "on a builder thread: GRAPE_BUILDER=thread"
                   : "on a builder thread: a second CPU is free to build on");
  pthread_t t;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int ok = pthread_create(&t, &attr, builder_main, NULL) == 0;
  pthread_attr_destroy(&attr);
  if (!ok) {
    grape_log_warn_once("cannot start the graph builder thread: graphs are built inline");
    set_why("inline, on the program's thread: the builder thread could not be started");
  }
  return ok;
}

void grape__builder_reset_child(void) {
  set_why("graph mode is off");
  pthread_mutex_init(&lock, NULL);
  pthread_cond_init(&cv, NULL);
  wakeups = 0;
  target = NULL;
}

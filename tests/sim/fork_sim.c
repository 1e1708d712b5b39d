/* fork_sim: 500 forks of a process whose sim has work in flight (a stream
 * held by a blocked host function, with kernels queued behind it) while
 * another thread keeps launching and synchronising, so that stream workers
 * hold the sim's lock at the moment of many forks, and a third thread keeps
 * looking up a kernel through the sim's runtime, which holds the runtime's
 * registration lock. Every child exits at once through exit(), running the
 * sim's destructor and, as nvcc's generated code arranges with atexit,
 * __cudaUnregisterFatBinary, which takes that lock; each child must be gone
 * within a deadline, or the test fails and names how many hung. A plain
 * program (no Criterion, which forks itself) with its own timeouts. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rt_fatbin.h"
#include "sim_test.h"
#include "simcu.h"

void __cudaUnregisterFatBinary(void** handle);

#define FORKS 500
/* A child still there after DEADLINE_MS hangs. The sim used to wait 2 s for
 * work a child can never run, so every child was slow: more than a tenth of
 * the children slower than SLOW_MS fails too, while a few slow exits on a
 * loaded machine (the tests run two at a time on two cores) do not. */
#define DEADLINE_MS 10000
#define SLOW_MS 1500

static const char ptx[] =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry k_inc(.param .u64 a)\n{\n ret;\n}\n";

SIMCU_PARAMS(k_inc, 8);
SIMCU_KERNEL(k_inc) {
  (void)simcu_blk;
  (*SIMCU_ARG(0, int*))++;
}

#define CK(call)                                                                  \
  do {                                                                            \
    CUresult r_ = (call);                                                         \
    if (r_ != CUDA_SUCCESS) {                                                     \
      fprintf(stderr, "fork_sim: %s failed: %d\n", #call, (int)r_);               \
      exit(2);                                                                    \
    }                                                                             \
  } while (0)

static CUfunction f;
static CUcontext ctx;
static sem_t gate;
static atomic_int stop;
static void** rt_handle;
static char rt_stub;   /* stands for the host stub nvcc generates for k_inc */

static void unregister(void) {
  __cudaUnregisterFatBinary(rt_handle);
}

/* Looks the kernel up through the runtime again and again: each lookup holds
 * the runtime's registration lock for a moment. */
static void* lookups(void* arg) {
  (void)arg;
  while (!atomic_load(&stop)) {
    cudaFunction_t fn;
    if (cudaGetFuncBySymbol(&fn, &rt_stub) != cudaSuccess) {
      fprintf(stderr, "fork_sim: cudaGetFuncBySymbol failed\n");
      exit(2);
    }
  }
  return NULL;
}

static void wait_gate(void* p) {
  (void)p;
  sem_wait(&gate);
}

static void* churn(void* arg) {
  (void)arg;
  CUstream s;
  CUdeviceptr d;
  CK(cuCtxSetCurrent(ctx));
  CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CK(cuMemAlloc(&d, sizeof(int)));
  void* args[] = {&d};
  while (!atomic_load(&stop)) {
    for (int i = 0; i < 8; i++)
      CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL));
    CK(cuStreamSynchronize(s));
  }
  return NULL;
}

static long ms_since(const struct timespec* t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

int main(void) {
  CUstream held;
  CUdeviceptr d;
  CK(sim_test_start(ptx, "k_inc", &f, &ctx));
  CK(cuMemAlloc(&d, sizeof(int)));
  CK(cuStreamCreate(&held, CU_STREAM_NON_BLOCKING));
  sem_init(&gate, 0, 0);
  CK(cuLaunchHostFunc(held, wait_gate, NULL));
  void* args[] = {&d};
  for (int i = 0; i < 4; i++)
    CK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, held, args, NULL));
  const char* names[] = {"k_inc"};
  const void* stubs[] = {&rt_stub};
  rt_handle = rt_register_ptx(ptx, names, stubs, 1);
  if (rt_handle == NULL || atexit(unregister) != 0)
    return 2;
  pthread_t th[3];
  for (int i = 0; i < 2; i++)
    pthread_create(&th[i], NULL, churn, NULL);
  pthread_create(&th[2], NULL, lookups, NULL);

  int hung = 0, failed = 0, slow = 0, forks = 0;
  long worst = 0;
  for (int i = 0; i < FORKS; i++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("fork_sim: fork");
      return 2;
    }
    if (pid == 0)
      exit(0);   /* runs the sim's destructor, which waits for queued work */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0;
    pid_t got;
    while ((got = waitpid(pid, &status, WNOHANG)) == 0 && ms_since(&t0) < DEADLINE_MS)
      usleep(200);
    long took = ms_since(&t0);
    worst = took > worst ? took : worst;
    slow += took > SLOW_MS;
    forks++;
    if (got == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      hung++;
    } else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      failed++;
    }
    if (hung + failed >= 5 || slow * 10 > FORKS)
      break;   /* clearly broken: do not spend minutes proving it */
  }
  atomic_store(&stop, 1);
  for (int i = 0; i < 3; i++)
    pthread_join(th[i], NULL);
  sem_post(&gate);
  CK(cuStreamSynchronize(held));
  printf("fork_sim: %d hung, %d failed, %d of %d slower than %d ms, slowest exit %ld ms\n", hung,
         failed, slow, forks, SLOW_MS, worst);
  return hung + failed == 0 && slow * 10 <= forks ? 0 : 1;
}

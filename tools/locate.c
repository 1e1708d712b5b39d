/* Finding what the grape CLI runs with: libgrape.so, the simulated device's
 * libraries, and whether a real CUDA device answers (grape run, grape replay).
 *
 * DESIGN: each is looked for relative to the grape binary only (a build tree,
 * or the install prefix's libdir: GRAPE_REL_*, set by tools/meson.build), and
 * an environment variable overrides that (GRAPE_LIB, GRAPE_SIM_DIR). No path
 * of the build is compiled in: an installed grape that fell back to one would
 * run the build tree's sim without saying so, and fail once it is gone. The
 * device probe runs in a forked child: a broken driver must not take grape
 * down. */
#include "locate.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grape/simcu_private.h"

static int exe_dir(char* out, size_t cap) {
  ssize_t n = readlink("/proc/self/exe", out, cap - 1);
  if (n <= 0)
    return -1;
  out[n] = '\0';
  char* slash = strrchr(out, '/');
  if (slash == NULL)
    return -1;
  *slash = '\0';
  return 0;
}

/* out = a + "/" + b; -1 when it does not fit. */
int grape__path_join(char* out, size_t cap, const char* a, const char* b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la + lb + 2 > cap)
    return -1;
  memcpy(out, a, la);
  out[la] = '/';
  memcpy(out + la + 1, b, lb + 1);
  return 0;
}

int grape__path_exists(const char* path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* out = rel, or dir + "/" + rel when rel is relative; -1 when it does not fit. */
static int resolve(char* out, size_t cap, const char* dir, const char* rel) {
  if (rel[0] == '/')
    return snprintf(out, cap, "%s", rel) < (int)cap ? 0 : -1;
  return grape__path_join(out, cap, dir, rel);
}

/* First of the candidates (relative to grape's own directory, or absolute)
 * that exists, into out. */
static int find_path(const char* env, const char* const* rel, char* out, size_t cap) {
  const char* e = getenv(env);
  if (e != NULL && *e) {
    snprintf(out, cap, "%s", e);
    return 0;
  }
  char dir[PATH_MAX];
  if (exe_dir(dir, sizeof(dir)) == 0) {
    for (int i = 0; rel[i]; i++)
      if (resolve(out, cap, dir, rel[i]) == 0 && grape__path_exists(out))
        return 0;
  }
  return -1;
}

int grape__find_libgrape(char* out, size_t cap) {
  static const char* const rel[] = {"../interpose/libgrape.so", GRAPE_REL_LIBGRAPE, NULL};
  char tmp[PATH_MAX];
  if (find_path("GRAPE_LIB", rel, tmp, sizeof(tmp)))
    return -1;
  /* The dynamic loader needs an absolute path in LD_PRELOAD (the command may chdir). */
  if (realpath(tmp, out) == NULL)
    snprintf(out, cap, "%s", tmp);
  return 0;
}

int grape__find_simdir(char* out, size_t cap) {
  const char* e = getenv("GRAPE_SIM_DIR");
  if (e != NULL && *e) {
    snprintf(out, cap, "%s", e);
    return 0;
  }
  static const char* const rel[] = {"../sim", GRAPE_REL_SIMDIR, NULL};
  char dir[PATH_MAX], sim[PATH_MAX], lib[PATH_MAX];
  if (exe_dir(dir, sizeof(dir)) == 0) {
    for (int i = 0; rel[i]; i++) {
      if (resolve(sim, sizeof(sim), dir, rel[i]) ||
          grape__path_join(lib, sizeof(lib), sim, "libcuda.so.1"))
        continue;
      if (grape__path_exists(lib)) {
        if (realpath(sim, out) == NULL && grape__path_join(out, cap, sim, ".") != 0)
          return -1;
        return 0;
      }
    }
  }
  return -1;
}

/* 1 when the real driver loads, initialises and reports at least one device.
 * Probed in a child: a broken driver must not take grape down. A libcuda.so.1
 * that answers the simulated device's private id is the sim (found first on
 * LD_LIBRARY_PATH, as the README's plain preload line puts it), not a GPU:
 * replay must then load the kernels' CPU bodies like any run on the sim. */
int grape__real_device_present(void) {
  pid_t pid = fork();
  if (pid < 0)
    return 0;
  if (pid == 0) {
    alarm(20);
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL)
      _exit(1);
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(h, "cuInit");
    int (*count)(int*) = (int (*)(int*))dlsym(h, "cuDeviceGetCount");
    int n = 0;
    if (init == NULL || count == NULL || init(0) != 0 || count(&n) != 0 || n <= 0)
      _exit(1);
    int (*table)(const void**, const void*) =
        (int (*)(const void**, const void*))dlsym(h, "cuGetExportTable");
    const unsigned char sim_id[16] = SIMCU_PRIVATE_UUID;
    const void* t = NULL;
    _exit(table != NULL && table(&t, sim_id) == 0 && t != NULL ? 1 : 0);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
